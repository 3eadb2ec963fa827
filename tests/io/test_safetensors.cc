// minijax tests (io): safetensors — a golden file written from the spec, round trips, every bad file.
// The oracle: the format of https://github.com/huggingface/safetensors (README "Format").
#include <gtest/gtest.h>

#include "io_test_util.h"

namespace {

using namespace iotest;

// A file written by hand from the spec: N = 384 as 8 little-endian bytes, then the header
//   {"__metadata__":{"format":"pt","note":"golden"},
//    "a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
//    "b":{"dtype":"I32","shape":[],"data_offsets":[8,12]},
//    "c":{"dtype":"BF16","shape":[1,2],"data_offsets":[12,16]},
//    "d":{"dtype":"BOOL","shape":[2],"data_offsets":[16,18]},
//    "e":{"dtype":"F64","shape":[0],"data_offsets":[18,18]},
//    "f":{"dtype":"U32","shape":[1],"data_offsets":[18,22]}}
// (no spaces, then 6 spaces of padding: "MAY be trailing padded with whitespace"), then 22 bytes:
// a = 1.0f, -2.0f (00 00 80 3f, 00 00 00 c0); b = -7 (f9 ff ff ff); c = bf16 1.0, -0.5
// (80 3f, 00 bf); d = true, false (01 00); e = nothing (an empty tensor); f = 4000000000 (00 28 6b ee).
// Tensors are not in size order and not aligned (c starts at 12, f at 18): the spec asks neither.
const char* kGoldenHex =
    "8001000000000000"
    "7b225f5f6d657461646174615f5f223a7b22666f726d6174223a227074222c226e6f7465223a22676f6c64656e227d2c"
    "2261223a7b226474797065223a22463332222c227368617065223a5b325d2c22646174615f6f666673657473223a5b30"
    "2c385d7d2c2262223a7b226474797065223a22493332222c227368617065223a5b5d2c22646174615f6f666673657473"
    "223a5b382c31325d7d2c2263223a7b226474797065223a2242463136222c227368617065223a5b312c325d2c22646174"
    "615f6f666673657473223a5b31322c31365d7d2c2264223a7b226474797065223a22424f4f4c222c227368617065223a"
    "5b325d2c22646174615f6f666673657473223a5b31362c31385d7d2c2265223a7b226474797065223a22463634222c22"
    "7368617065223a5b305d2c22646174615f6f666673657473223a5b31382c31385d7d2c2266223a7b226474797065223a"
    "22553332222c227368617065223a5b315d2c22646174615f6f666673657473223a5b31382c32325d7d7d202020202020"
    "0000803f000000c0"
    "f9ffffff"
    "803f00bf"
    "0100"
    "00286bee";
constexpr size_t kGoldenHeader = 384;

std::map<std::string, mj::Array> golden_arrays() {
  return {{"a", make<float>({2}, {1.0f, -2.0f})},     {"b", make<int32_t>({}, {-7})},
          {"c", make_bf16({1, 2}, {0x3F80, 0xBF00})}, {"d", make<bool>({2}, {true, false})},
          {"e", make<double>({0}, {})},               {"f", make<uint32_t>({1}, {4000000000u})}};
}

// A safetensors file with the given header text (N = its length) and data bytes.
std::vector<uint8_t> st_file(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(uint64_t(header.size()) >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

TEST(SafetensorsGolden, LoadsAFileWrittenFromTheSpec) {
  ScratchDir dir;
  const std::vector<uint8_t> golden = from_hex(kGoldenHex);
  ASSERT_EQ(golden.size(), 8 + kGoldenHeader + 22);
  write_bytes(dir / "g.safetensors", golden);
  const auto all = mj::load_safetensors(dir / "g.safetensors");
  const auto expect = golden_arrays();
  ASSERT_EQ(all.size(), expect.size());
  for (auto& [k, v] : expect) EXPECT_TRUE(same_array(all.at(k), v)) << k;
  EXPECT_EQ(mj::load_safetensors_metadata(dir / "g.safetensors"),
            (std::map<std::string, std::string>{{"format", "pt"}, {"note", "golden"}}));
  // With `like`: the same values in like's structure.
  const auto like = mj::load_safetensors(dir / "g.safetensors", expect);
  for (auto& [k, v] : expect) EXPECT_TRUE(same_array(like.at(k), v)) << k;
}

TEST(SafetensorsRoundTrip, EveryDtypeAndMetadata) {
  ScratchDir dir;
  const auto tree = fixture(true);
  const std::map<std::string, std::string> meta{{"format", "np"}, {"quote\"and\nnewline", "\xc3\xa9t\xc3\xa9"}};
  mj::save_safetensors(dir / "r.safetensors", tree, meta);
  const auto back = mj::load_safetensors(dir / "r.safetensors", tree);
  for (auto& [k, v] : tree) EXPECT_TRUE(same_array(back.at(k), v)) << k;
  EXPECT_EQ(mj::load_safetensors_metadata(dir / "r.safetensors"), meta);
  // The header length is a multiple of 8 and every tensor starts at a multiple of its element
  // size (the reference implementation's layout); writing is deterministic.
  const std::vector<uint8_t> b = read_bytes(dir / "r.safetensors");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | b[size_t(i)];
  EXPECT_EQ(n % 8, 0u);
  mj::save_safetensors(dir / "r2.safetensors", tree, meta);
  EXPECT_EQ(read_bytes(dir / "r2.safetensors"), b);
  // No metadata: no __metadata__ key at all.
  mj::save_safetensors(dir / "m.safetensors", std::map<std::string, mj::Array>{{"x", mj::ones({1})}});
  const auto m = read_bytes(dir / "m.safetensors");
  EXPECT_EQ(std::string(m.begin() + 8, m.end()).find("__metadata__"), std::string::npos);
  EXPECT_TRUE(mj::load_safetensors_metadata(dir / "m.safetensors").empty());
}

TEST(SafetensorsLoad, EveryTruncationLengthIsAnIOError) {
  ScratchDir dir;
  const std::vector<uint8_t> golden = from_hex(kGoldenHex);
  for (size_t len = 0; len < golden.size(); ++len) {
    write_bytes(dir / "t.safetensors", std::vector<uint8_t>(golden.begin(), golden.begin() + long(len)));
    expect_io_error([&] { mj::load_safetensors(dir / "t.safetensors"); }, {"load_safetensors", dir / "t.safetensors"});
  }
}

// Any byte flipped in the length or the header is caught (the header is checked as a whole:
// UTF-8, JSON, dtypes, shapes against offsets, offsets tiling the data); a flipped data byte
// loads (the format has no checksum) with the same keys, dtypes and shapes.
TEST(SafetensorsLoad, EverySingleByteCorruptionOfTheHeaderIsCaught) {
  ScratchDir dir;
  const std::vector<uint8_t> golden = from_hex(kGoldenHex);
  const auto expect = golden_arrays();
  for (size_t i = 0; i < golden.size(); ++i) {
    std::vector<uint8_t> bad = golden;
    bad[i] ^= 0xff;
    write_bytes(dir / "bad.safetensors", bad);
    try {
      const auto got = mj::load_safetensors(dir / "bad.safetensors", expect);
      EXPECT_GE(i, 8 + kGoldenHeader) << "a corrupt header byte " << i << " was accepted";
    } catch (const mj::IOError& e) {
      EXPECT_LT(i, 8 + kGoldenHeader) << e.what();
    }
  }
}

TEST(SafetensorsLoad, BadHeadersNameTheFileTheKeyAndWhatWasExpected) {
  ScratchDir dir;
  const std::string p = dir / "x.safetensors";
  const std::vector<uint8_t> four{1, 0, 0, 0};
  auto check = [&](const std::vector<uint8_t>& file, const std::vector<std::string>& parts) {
    write_bytes(p, file);
    std::vector<std::string> all{"load_safetensors", p};
    all.insert(all.end(), parts.begin(), parts.end());
    expect_io_error([&] { mj::load_safetensors(p); }, all);
  };
  const std::string ok = R"({"x":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})";
  ASSERT_EQ(mj::load_safetensors((write_bytes(p, st_file(ok, four)), p)).at("x").item<int>(), 1);
  std::vector<uint8_t> huge = st_file(ok, four);
  huge[3] = 0x10;  // N = 2^28 + 55: over the 100 MB limit
  check(huge, {"over the format's limit"});
  std::vector<uint8_t> more = st_file(ok, four);
  more[0] = uint8_t(ok.size() + 10);
  check(more, {"truncated", "the header claims"});
  check(st_file(" " + ok, four), {"starting with '{'"});
  check(st_file(R"({"x":{"dtype":"I32","shape":[1],"data_offsets":[0,4]})", four), {"invalid JSON"});
  check(st_file(R"({"x":{"dtype":"I32","shape":[1],"data_offsets":[0,4]},"x":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})", four),
        {"duplicate 'x'"});
  check(st_file(R"({"x":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", four), {"key 'x'", "unsupported dtype \"F16\""});
  check(st_file(R"({"x":{"dtype":"I64","shape":[],"data_offsets":[0,8]}})", {0, 0, 0, 0, 0, 0, 0, 0}),
        {"unsupported dtype \"I64\""});
  check(st_file(R"({"x":{"dtype":"I32","shape":[1]}})", four), {"key 'x'", "data_offsets"});
  check(st_file(R"({"x":{"dtype":"I32","shape":[-1],"data_offsets":[0,4]}})", four), {"key 'x'", "shape"});
  check(st_file(R"({"x":{"dtype":"I32","shape":[2],"data_offsets":[0,4]}})", four), {"key 'x'", "needs 8"});
  check(st_file(R"({"x":{"dtype":"I32","shape":[1],"data_offsets":[4,0]}})", four), {"key 'x'", "begin <= end"});
  check(st_file(R"({"x":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})", {1, 0, 0, 0, 9}), {"trailing or missing"});
  check(st_file(R"({"x":{"dtype":"I32","shape":[1],"data_offsets":[0,4]},"y":{"dtype":"I32","shape":[1],"data_offsets":[8,12]}})",
                std::vector<uint8_t>(12, 0)),
        {"key 'y'", "starting at 8, expected 4", "no hole or overlap"});
  check(st_file(R"({"x":{"dtype":"I32","shape":[1],"data_offsets":[0,4]},"y":{"dtype":"U32","shape":[1],"data_offsets":[0,4]}})", four),
        {"starting at 0, expected 4"});
  check(st_file(R"({"x":{"dtype":"I32","shape":[1],"data_offsets":[0,4]},"y":{"dtype":"I32","shape":[1],"data_offsets":[4,8]}})", four),
        {"key 'y'", "truncated", "end at 8"});
  check(st_file(R"({"__metadata__":{"n":1},"x":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})", four),
        {"key '__metadata__'", "string values", "'n' is a number"});
  check(st_file(R"({"x":[1,2]})", four), {"key 'x'", "a tensor entry"});
  check({1, 2, 3}, {"truncated", "fewer than the 8"});
}

TEST(SafetensorsLoad, LikeMismatchesNameTheKey) {
  ScratchDir dir;
  const std::string p = dir / "g.safetensors";
  write_bytes(p, from_hex(kGoldenHex));
  auto like = golden_arrays();
  like["a"] = mj::zeros({3});
  expect_io_error([&] { mj::load_safetensors(p, like); }, {"key 'a'", "the file holds f32[2], expected f32[3]"});
  like = golden_arrays();
  like["f"] = mj::zeros({1}, mj::i32);
  expect_io_error([&] { mj::load_safetensors(p, like); }, {"key 'f'", "u32[1], expected i32[1]"});
  like = golden_arrays();
  like.erase("e");
  expect_io_error([&] { mj::load_safetensors(p, like); }, {"key 'e'", "`like` has no leaf"});
  like = golden_arrays();
  like["g"] = mj::zeros({1});
  expect_io_error([&] { mj::load_safetensors(p, like); }, {"key 'g'", "missing from the file"});
  like = golden_arrays();
  like["a"] = mj::Array();  // no aval to expect: a bad argument, not a bad file
  EXPECT_THROW(mj::load_safetensors(p, like), mj::ValueError);
}

TEST(SafetensorsSave, ReservedAndInvalidKeys) {
  ScratchDir dir;
  const std::string p = dir / "k.safetensors";
  EXPECT_THROW(mj::save_safetensors(p, std::map<std::string, mj::Array>{{"__metadata__", mj::ones({1})}}), mj::ValueError);
  EXPECT_THROW(mj::save_safetensors(p, std::map<std::string, mj::Array>{{"x", mj::ones({1})}}, {{"k", "\xff"}}),
               mj::ValueError);
  EXPECT_THROW(mj::save_safetensors(p, mj::ones({1})), mj::ValueError);
  EXPECT_FALSE(fs::exists(p));
}

}  // namespace
