// minijax tests (io): safetensors' "crc32:<tensor>" metadata — written on request, checked on load.
// Oracle: a bitwise CRC-32 written here (reflected polynomial 0xEDB88320), checked against the check value.
#include <bit>
#include <cctype>

#include "io_test_util.h"

namespace {

using namespace iotest;

// CRC-32 as zlib, gzip and zip define it (ISO-HDLC: reflected, polynomial 0xEDB88320, init and
// final xor 0xFFFFFFFF), one bit at a time — independent of zlib's table-driven crc32.
uint32_t bitwise_crc32(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}

std::string hex8(uint32_t v, bool upper = false) {
  char b[16];
  std::snprintf(b, sizeof b, upper ? "%08X" : "%08x", unsigned(v));
  return b;
}

uint32_t crc_of(const mj::Array& a) {
  const auto b = bytes_of(a);
  return bitwise_crc32(b.data(), b.size());
}

// Two tensors: "n" i32[2] then "w" f32[3] in the file (equal element sizes: by name).
std::map<std::string, mj::Array> tree() {
  return {{"w", make<float>({3}, {1.5f, -2.25f, 1e-3f})}, {"n", make<int32_t>({2}, {7, -9})}};
}

TEST(SafetensorsCrc, TheOracleGivesTheCheckValue) {
  // The CRC-32 check value: crc32("123456789") = 0xCBF43926 (the CRC catalogue's CRC-32/ISO-HDLC,
  // also zlib's crc32 of those bytes).
  const char* s = "123456789";
  EXPECT_EQ(bitwise_crc32(reinterpret_cast<const uint8_t*>(s), 9), 0xCBF43926u);
  EXPECT_EQ(bitwise_crc32(nullptr, 0), 0u);
}

TEST(SafetensorsCrc, SaveWritesOneLowerCaseCrcPerTensor) {
  static_assert(std::endian::native == std::endian::little, "the stored bytes are the host's");
  ScratchDir dir;
  const std::string p = dir / "c.safetensors";
  mj::save_safetensors(p, tree(), {{"format", "np"}}, mj::SafetensorsSaveOptions{.crc32 = true});
  const auto meta = mj::load_safetensors_metadata(p);
  ASSERT_EQ(meta.size(), 3u);
  EXPECT_EQ(meta.at("format"), "np");
  for (auto& [name, a] : tree()) {
    const std::string v = meta.at("crc32:" + name);
    EXPECT_EQ(v, hex8(crc_of(a))) << name;
    ASSERT_EQ(v.size(), 8u);
    for (char ch : v) EXPECT_TRUE(std::isdigit(ch) || (ch >= 'a' && ch <= 'f')) << v;
  }
  // An empty tensor's CRC is that of no bytes, 00000000; a nested pytree's key is its path.
  std::map<std::string, std::map<std::string, mj::Array>> nested{{"layer", {{"e", mj::zeros({0, 2})}}}};
  mj::save_safetensors(p, nested, {}, {.crc32 = true});
  EXPECT_EQ(mj::load_safetensors_metadata(p).at("crc32:layer.e"), "00000000");
  EXPECT_TRUE(same_array(mj::load_safetensors(p, nested).at("layer").at("e"), mj::zeros({0, 2})));
  // The saver owns crc32: keys when it writes them.
  EXPECT_THROW(mj::save_safetensors(p, tree(), {{"crc32:w", "00000000"}}, {.crc32 = true}), mj::ValueError);
}

TEST(SafetensorsCrc, FileWithoutCrcKeysLoadsAsBefore) {
  ScratchDir dir;
  const std::string p = dir / "plain.safetensors";
  mj::save_safetensors(p, tree(), {{"format", "np"}});
  EXPECT_EQ(mj::load_safetensors_metadata(p), (std::map<std::string, std::string>{{"format", "np"}}));
  for (auto& [k, v] : tree()) EXPECT_TRUE(same_array(mj::load_safetensors(p).at(k), v)) << k;
  // Without CRCs a flipped data bit goes unnoticed: what the option is for.
  auto b = read_bytes(p);
  b.back() ^= 0x01;
  write_bytes(p, b);
  EXPECT_NO_THROW(mj::load_safetensors(p));
}

// Every data byte with one bit flipped is an IOError naming the file, the key and the tensor, from
// each loader; the last byte belongs to "w".
TEST(SafetensorsCrc, AFlippedDataBitIsAnIOErrorNamingFileKeyAndTensor) {
  ScratchDir dir;
  const std::string p = dir / "c.safetensors";
  mj::save_safetensors(p, tree(), {}, {.crc32 = true});
  const auto good = read_bytes(p);
  const size_t data_at = good.size() - 5 * 4;  // i32[2] then f32[3]
  for (size_t i = data_at; i < good.size(); ++i) {
    auto b = good;
    b[i] ^= uint8_t(1u << (i % 8));
    write_bytes(p, b);
    const std::string name = i < data_at + 8 ? "n" : "w";
    const std::vector<std::string> parts{p, "key 'crc32:" + name + "'", "tensor '" + name + "'"};
    expect_io_error([&] { mj::load_safetensors(p); }, parts);
    expect_io_error([&] { mj::load_safetensors(p, tree()); }, parts);
    expect_io_error([&] { mj::load_safetensors_metadata(p); }, parts);
  }
  write_bytes(p, good);
  for (auto& [k, v] : tree()) EXPECT_TRUE(same_array(mj::load_safetensors(p).at(k), v)) << k;
}

TEST(SafetensorsCrc, AKeyNamingNoTensorIsAnIOError) {
  ScratchDir dir;
  const std::string p = dir / "k.safetensors";
  mj::save_safetensors(p, tree(), {{"crc32:wx", hex8(crc_of(tree().at("w")))}});
  expect_io_error([&] { mj::load_safetensors(p); }, {"load_safetensors", p, "key 'crc32:wx'", "'wx'", "does not hold"});
  mj::save_safetensors(p, tree(), {{"crc32:", "00000000"}});
  expect_io_error([&] { mj::load_safetensors(p); }, {p, "key 'crc32:'", "does not hold"});
}

TEST(SafetensorsCrc, AValueThatIsNotEightHexDigitsIsAnIOError) {
  ScratchDir dir;
  const std::string p = dir / "v.safetensors";
  const std::string good = hex8(crc_of(tree().at("w")));
  for (const std::string& bad : {good.substr(0, 7), good + "0", good.substr(0, 7) + "g", std::string(""),
                                 " " + good.substr(0, 7), "0x" + good.substr(0, 6), good.substr(0, 7) + "-"}) {
    mj::save_safetensors(p, tree(), {{"crc32:w", bad}});
    expect_io_error([&] { mj::load_safetensors(p); },
                    {"load_safetensors", p, "key 'crc32:w'", "\"" + bad + "\"", "8 hexadecimal digits"});
  }
}

TEST(SafetensorsCrc, UpperAndMixedCaseValuesAreAccepted) {
  ScratchDir dir;
  const std::string p = dir / "u.safetensors";
  // CRCs of these values hold hex letters, so the case matters to the comparison.
  const mj::Array w = tree().at("w"), n = tree().at("n");
  const std::string uw = hex8(crc_of(w), true), un = hex8(crc_of(n), true);
  ASSERT_NE(uw, hex8(crc_of(w)));
  std::string mixed = hex8(crc_of(n));
  for (size_t i = 0; i < mixed.size(); i += 2) mixed[i] = char(std::toupper(mixed[i]));
  mj::save_safetensors(p, tree(), {{"crc32:w", uw}, {"crc32:n", mixed}});
  const auto back = mj::load_safetensors(p);
  EXPECT_TRUE(same_array(back.at("w"), w));
  EXPECT_TRUE(same_array(back.at("n"), n));
  // A wrong upper-case value is still a mismatch.
  std::string wrong = uw;
  wrong[7] = wrong[7] == '0' ? '1' : '0';
  mj::save_safetensors(p, tree(), {{"crc32:w", wrong}});
  expect_io_error([&] { mj::load_safetensors(p); }, {p, "key 'crc32:w'", "tensor 'w'", wrong});
}

}  // namespace
