// minijax tests (io): .npz archives — pytrees by path, the zip container, every bad archive.
// Oracles: PKWARE's APPNOTE.TXT 6.3.10 (header layouts) and zlib's crc32 (member checksums).
#include <gtest/gtest.h>
#include <zlib.h>

#include "io/zip.h"
#include "io_test_util.h"

namespace {

using namespace iotest;

struct Block {
  mj::Array w, b;
};
struct Model {
  mj::Array embed;
  std::vector<Block> layers;
  mj::Array scale;
};

}  // namespace

MJ_REGISTER_PYTREE(Block, w, b)
MJ_REGISTER_PYTREE(Model, embed, layers, scale)

namespace {

Model model() {
  return Model{make<float>({2, 3}, {1, 2, 3, 4, 5, 6}),
               {Block{make<float>({3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1}), make<int32_t>({3}, {-1, 0, 1})},
                Block{mj::zeros({3, 3}), make<int32_t>({3}, {7, 8, 9})}},
               make_bf16({2}, {0x3F80, 0x4000})};
}

::testing::AssertionResult same_model(const Model& a, const Model& b) {
  const auto la = mj::flatten_with_path(a), lb = mj::flatten_with_path(b);
  if (la.size() != lb.size()) return ::testing::AssertionFailure() << "leaf counts differ";
  for (size_t i = 0; i < la.size(); ++i) {
    if (la[i].first != lb[i].first) return ::testing::AssertionFailure() << la[i].first << " vs " << lb[i].first;
    auto r = same_array(la[i].second, lb[i].second);
    if (!r) return r << " at " << la[i].first;
  }
  return ::testing::AssertionSuccess();
}

TEST(NpzRoundTrip, PytreeByPathStoredAndCompressed) {
  ScratchDir dir;
  const Model m = model();
  for (bool compressed : {false, true}) {
    const std::string p = dir / (compressed ? "c.npz" : "s.npz");
    mj::save_npz(p, m, {.compressed = compressed});
    EXPECT_TRUE(same_model(mj::load_npz(p, m), m));
    // Without `like`: every member by key, bf16 restored from the dtypes member.
    const auto all = mj::load_npz(p);
    std::vector<std::string> keys;
    for (auto& [k, _] : all) keys.push_back(k);
    EXPECT_EQ(keys, (std::vector<std::string>{"embed", "layers.0.b", "layers.0.w", "layers.1.b", "layers.1.w", "scale"}));
    EXPECT_TRUE(same_array(all.at("scale"), m.scale));
    EXPECT_TRUE(same_array(all.at("layers.1.b"), m.layers[1].b));
  }
  // Deflate shrinks the zeros of layers.1.w; stored members hold the raw bytes.
  EXPECT_LT(fs::file_size(dir / "c.npz"), fs::file_size(dir / "s.npz"));
  // An abstract `like` (shapes and dtypes only) loads as well.
  const std::map<std::string, mj::Array> like{{"embed", mj::ShapeDtypeStruct{{2, 3}, mj::f32}}};
  mj::save_npz(dir / "e.npz", std::map<std::string, mj::Array>{{"embed", m.embed}});
  EXPECT_TRUE(same_array(mj::load_npz(dir / "e.npz", like).at("embed"), m.embed));
}

// APPNOTE 4.3.7 / 4.3.16: the archive starts with a local file header (PK\3\4) and ends with the
// end of central directory record (PK\5\6) counting the members; each local header's CRC-32 is
// zlib's crc32 of the member's bytes, which are the .npy image (save_npy's bytes) of the leaf.
TEST(NpzWrite, ZipHeadersAndCrcsAsTheAppnoteLaysThemOut) {
  ScratchDir dir;
  const mj::Array w = make<float>({2}, {1.5f, -2.0f});
  mj::save_npz(dir / "a.npz", std::map<std::string, mj::Array>{{"w", w}});
  mj::save_npy(dir / "w.npy", w);
  const std::vector<uint8_t> z = read_bytes(dir / "a.npz"), npy = read_bytes(dir / "w.npy");
  auto le = [&](size_t at, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | z[at + size_t(i)];
    return v;
  };
  ASSERT_GT(z.size(), 30 + 5 + npy.size() + 46 + 22);
  EXPECT_EQ(le(0, 4), 0x04034b50u);
  EXPECT_EQ(le(8, 2), 0u);  // method: stored
  EXPECT_EQ(le(14, 4), crc32(0, npy.data(), uInt(npy.size())));
  EXPECT_EQ(le(18, 4), npy.size());
  EXPECT_EQ(le(22, 4), npy.size());
  EXPECT_EQ(le(26, 2), 5u);
  EXPECT_EQ(std::string(z.begin() + 30, z.begin() + 35), "w.npy");
  EXPECT_EQ(std::vector<uint8_t>(z.begin() + 35, z.begin() + 35 + long(npy.size())), npy);
  const size_t end = z.size() - 22;
  EXPECT_EQ(le(end, 4), 0x06054b50u);
  EXPECT_EQ(le(end + 10, 2), 1u);            // members
  EXPECT_EQ(le(end + 16, 4), 35 + npy.size());  // the central directory follows the member
  EXPECT_EQ(le(35 + npy.size(), 4), 0x02014b50u);
  // No bf16 leaf: no dtypes member, exactly what numpy.savez would list.
  EXPECT_EQ(mj::load_npz(dir / "a.npz").size(), 1u);
  mj::save_npz(dir / "h.npz", std::map<std::string, mj::Array>{{"h", make_bf16({1}, {0x3F80})}});
  mj::detail::IOContext ctx{"test", dir / "h.npz", "", std::source_location::current()};
  const auto bytes = read_bytes(dir / "h.npz");
  const auto members = mj::detail::zip::read_directory(ctx, bytes.data(), bytes.size());
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members[1].name, mj::kNpzDtypesMember);
  const auto json = mj::detail::zip::extract(ctx, bytes.data(), bytes.size(), members[1]);
  EXPECT_EQ(std::string(json.begin(), json.end()), "{\"h\": \"bfloat16\"}\n");
}

TEST(NpzLoad, EveryTruncationLengthIsAnIOError) {
  ScratchDir dir;
  for (bool compressed : {false, true}) {
    mj::save_npz(dir / "full.npz", std::map<std::string, mj::Array>{{"a", make<int32_t>({2}, {1, 2})}, {"h", make_bf16({1}, {1})}},
                 {.compressed = compressed});
    const std::vector<uint8_t> full = read_bytes(dir / "full.npz");
    for (size_t len = 0; len < full.size(); ++len) {
      write_bytes(dir / "t.npz", std::vector<uint8_t>(full.begin(), full.begin() + long(len)));
      expect_io_error([&] { mj::load_npz(dir / "t.npz"); }, {"load_npz", dir / "t.npz"});
    }
  }
}

// Flipping any one byte of an archive either throws IOError or (for fields no reader uses, such
// as the DOS time or the attributes) loads the very same values: CRC-32 guards every member.
TEST(NpzLoad, EverySingleByteCorruptionIsCaughtOrHarmless) {
  ScratchDir dir;
  const std::map<std::string, mj::Array> tree{{"a", make<float>({3}, {1, 2, 3})}, {"h", make_bf16({2}, {5, 6})}};
  for (bool compressed : {false, true}) {
    mj::save_npz(dir / "full.npz", tree, {.compressed = compressed});
    const std::vector<uint8_t> full = read_bytes(dir / "full.npz");
    int caught = 0;
    for (size_t i = 0; i < full.size(); ++i) {
      std::vector<uint8_t> bad = full;
      bad[i] ^= 0xff;
      write_bytes(dir / "bad.npz", bad);
      try {
        const auto got = mj::load_npz(dir / "bad.npz", tree);
        for (auto& [k, v] : tree) EXPECT_TRUE(same_array(got.at(k), v)) << "byte " << i;
      } catch (const mj::IOError& e) {
        ++caught;
        EXPECT_NE(std::string(e.what()).find(dir / "bad.npz"), std::string::npos);
      }
    }
    EXPECT_GT(caught, int(full.size()) * 3 / 4) << "compressed " << compressed;
  }
}

TEST(NpzLoad, StructureAndShapeMismatchesNameTheKey) {
  ScratchDir dir;
  const std::string p = dir / "m.npz";
  const Model m = model();
  mj::save_npz(p, m);
  Model wrong_shape = m;
  wrong_shape.layers[0].w = mj::zeros({3, 4});
  expect_io_error([&] { mj::load_npz(p, wrong_shape); },
                  {"load_npz", p, "key 'layers.0.w'", "the file holds f32[3,3], expected f32[3,4]"});
  Model wrong_dtype = m;
  wrong_dtype.layers[1].b = mj::zeros({3});
  expect_io_error([&] { mj::load_npz(p, wrong_dtype); }, {"key 'layers.1.b'", "i32[3], expected f32[3]"});
  Model more_layers = m;
  more_layers.layers.push_back(m.layers[0]);
  expect_io_error([&] { mj::load_npz(p, more_layers); }, {"key 'layers.2.w'", "missing from the file"});
  Model fewer_layers = m;
  fewer_layers.layers.pop_back();
  expect_io_error([&] { mj::load_npz(p, fewer_layers); }, {"key 'layers.1.b'", "`like` has no leaf"});
}

// Archives minijax would not write, built with its own zip writer: each is refused by name.
TEST(NpzLoad, ForeignMembersAndInconsistentDtypes) {
  ScratchDir dir;
  auto archive = [&](const std::string& name, const std::vector<std::pair<std::string, std::string>>& members) {
    mj::detail::IOContext ctx{"test", dir / name, "", std::source_location::current()};
    mj::detail::AtomicFile f(ctx);
    mj::detail::zip::Writer w(f, ctx);
    for (auto& [n, body] : members) w.add(n, {{body.data(), body.size()}}, false);
    w.finish();
    f.commit();
    return dir / name;
  };
  const auto npy_bytes = [&](const mj::Array& a) {
    mj::save_npy(dir / "tmp.npy", a);
    const auto b = read_bytes(dir / "tmp.npy");
    return std::string(b.begin(), b.end());
  };
  const std::string u2 = npy_bytes(make_bf16({1}, {1})), f4 = npy_bytes(make<float>({1}, {1}));
  expect_io_error([&] { mj::load_npz(archive("txt.npz", {{"readme.txt", "hi"}})); },
                  {"key 'readme.txt'", "not a .npy file"});
  expect_io_error([&] { mj::load_npz(archive("u2.npz", {{"h.npy", u2}})); }, {"key 'h'", "unsupported dtype '<u2'"});
  expect_io_error([&] { mj::load_npz(archive("d1.npz", {{"h.npy", f4}, {mj::kNpzDtypesMember, "{\"h\": \"bfloat16\"}"}})); },
                  {"key 'h'", "records it as bfloat16", "<f4"});
  expect_io_error([&] { mj::load_npz(archive("d2.npz", {{"h.npy", u2}, {mj::kNpzDtypesMember, "{\"g\": \"bfloat16\"}"}})); },
                  {"key 'g'", "no g.npy member"});
  expect_io_error([&] { mj::load_npz(archive("d3.npz", {{"h.npy", u2}, {mj::kNpzDtypesMember, "{\"h\": \"float16\"}"}})); },
                  {mj::kNpzDtypesMember, "\"bfloat16\""});
  expect_io_error([&] { mj::load_npz(archive("d4.npz", {{"h.npy", u2}, {mj::kNpzDtypesMember, "{\"h\": "}})); },
                  {mj::kNpzDtypesMember, "invalid JSON"});
  expect_io_error([&] { mj::load_npz(archive("dup.npz", {{"a.npy", f4}, {"a.npy", f4}})); }, {"twice"});
  // A zip64 marker (APPNOTE 4.4.8: 0xFFFFFFFF sizes) in the central directory: refused, not misread.
  std::vector<uint8_t> z = read_bytes(archive("ok.npz", {{"a.npy", f4}}));
  const size_t cd = 30 + 5 + f4.size();
  for (size_t k = 0; k < 4; ++k) z[cd + 20 + k] = 0xff;
  write_bytes(dir / "zip64.npz", z);
  expect_io_error([&] { mj::load_npz(dir / "zip64.npz"); }, {"key 'a.npy'", "zip64"});
  write_bytes(dir / "text.npz", {'n', 'o', 't', ' ', 'a', ' ', 'z', 'i', 'p'});
  expect_io_error([&] { mj::load_npz(dir / "text.npz"); }, {"not a zip archive"});
}

TEST(NpzSave, KeysMustBeUniqueNonEmptyAndUnreserved) {
  ScratchDir dir;
  const std::string p = dir / "k.npz";
  EXPECT_THROW(mj::save_npz(p, mj::ones({2})), mj::ValueError);  // a bare Array: no path
  using Nested = std::map<std::string, std::map<std::string, mj::Array>>;
  try {
    mj::save_npz(p, Nested{{"a", {{"b.c", mj::ones({1})}}}, {"a.b", {{"c", mj::ones({1})}}}});
    ADD_FAILURE() << "expected ValueError";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("key 'a.b.c'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(mj::save_npz(p, std::map<std::string, mj::Array>{{mj::kNpzDtypesMember, mj::ones({1})}}), mj::ValueError);
  EXPECT_THROW(mj::save_npz(p, std::map<std::string, mj::Array>{{"bad\xff", mj::ones({1})}}), mj::ValueError);
  EXPECT_FALSE(fs::exists(p));
}

}  // namespace
