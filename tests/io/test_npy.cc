// minijax tests (io): .npy files — the bytes save_npy writes, round trips, and every bad file.
// The format's oracle: NEP 1 (https://numpy.org/neps/nep-0001-npy-format.html) and numpy.lib.format.
#include <gtest/gtest.h>

#include "io_test_util.h"

namespace {

using namespace iotest;

// A .npy image with the given header dict (padded as numpy pads it) and data bytes.
std::vector<uint8_t> npy_image(const std::string& dict, const std::vector<uint8_t>& data, int version = 1) {
  const size_t prefix = version == 1 ? 10 : 12;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  const size_t hlen = total - prefix;
  std::vector<uint8_t> out{0x93, 'N', 'U', 'M', 'P', 'Y', uint8_t(version), 0};
  for (size_t i = 0; i < prefix - 8; ++i) out.push_back(uint8_t(hlen >> (8 * i)));
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), hlen - dict.size() - 1, ' ');
  out.push_back('\n');
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::vector<uint8_t> le_floats(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// NEP 1: magic, version 1.0, a little-endian uint16 header length, the dict's repr padded with
// spaces and ended by '\n' so that the data starts at a multiple of 64 (numpy.lib.format's
// ARRAY_ALIGN), then the C-order data.
TEST(NpyWrite, BytesAreNumpysVersion1Layout) {
  ScratchDir dir;
  const mj::Array a = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  mj::save_npy(dir / "a.npy", a);
  const std::vector<uint8_t> b = read_bytes(dir / "a.npy");
  ASSERT_GE(b.size(), 10u);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t hlen = b[8] | (size_t(b[9]) << 8);
  EXPECT_EQ((10 + hlen) % 64, 0u);
  ASSERT_EQ(b.size(), 10 + hlen + 24);
  const std::string header(b.begin() + 10, b.begin() + 10 + long(hlen));
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(header.substr(0, dict.size()), dict);
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(header.find_first_not_of(' ', dict.size()), hlen - 1);
  EXPECT_EQ(std::vector<uint8_t>(b.begin() + 10 + long(hlen), b.end()), bytes_of(a));
  // A rank-1 shape is the tuple (n,), a scalar's is ().
  mj::save_npy(dir / "v.npy", make<int32_t>({3}, {1, 2, 3}));
  mj::save_npy(dir / "s.npy", make<double>({}, {2.5}));
  const auto v = read_bytes(dir / "v.npy"), s = read_bytes(dir / "s.npy");
  EXPECT_NE(std::string(v.begin(), v.end()).find("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }"),
            std::string::npos);
  EXPECT_NE(std::string(s.begin(), s.end()).find("{'descr': '<f8', 'fortran_order': False, 'shape': (), }"),
            std::string::npos);
}

TEST(NpyRoundTrip, EveryDtypeBitForBit) {
  ScratchDir dir;
  for (auto& [key, a] : fixture(true)) {
    mj::save_npy(dir / (key + ".npy"), a);
    const mj::Array back = a.dtype() == mj::bf16 ? mj::load_npy(dir / (key + ".npy"), a) : mj::load_npy(dir / (key + ".npy"));
    EXPECT_TRUE(same_array(back, a)) << key;
    EXPECT_FALSE(back.weak_type());
  }
}

// NEP 1's fortran_order: the data is the array's column-major traversal; '>' is big-endian; a
// version 2.0 header has a 4-byte length.
TEST(NpyLoad, FortranOrderBigEndianAndVersion2) {
  ScratchDir dir;
  write_bytes(dir / "f.npy",
              npy_image("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", le_floats({0, 1, 2, 3, 4, 5})));
  EXPECT_TRUE(same_array(mj::load_npy(dir / "f.npy"), make<float>({2, 3}, {0, 2, 4, 1, 3, 5})));
  write_bytes(dir / "be.npy", npy_image("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }",
                                        {0x00, 0x00, 0x01, 0x02, 0xff, 0xff, 0xff, 0xfe}));
  EXPECT_TRUE(same_array(mj::load_npy(dir / "be.npy"), make<int32_t>({2}, {0x0102, -2})));
  write_bytes(dir / "v2.npy",
              npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", le_floats({7, 8}), 2));
  EXPECT_TRUE(same_array(mj::load_npy(dir / "v2.npy"), make<float>({2}, {7, 8})));
  // Bools: numpy reads any nonzero byte as True; minijax normalizes it to 1.
  write_bytes(dir / "b.npy", npy_image("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", {0, 1, 2}));
  EXPECT_TRUE(same_array(mj::load_npy(dir / "b.npy"), make<bool>({3}, {false, true, true})));
}

TEST(NpyLoad, EveryTruncationLengthIsAnIOError) {
  ScratchDir dir;
  mj::save_npy(dir / "full.npy", make<int32_t>({3}, {1, 2, 3}));
  const std::vector<uint8_t> full = read_bytes(dir / "full.npy");
  for (size_t len = 0; len < full.size(); ++len) {
    write_bytes(dir / "t.npy", std::vector<uint8_t>(full.begin(), full.begin() + long(len)));
    expect_io_error([&] { mj::load_npy(dir / "t.npy"); }, {"load_npy", dir / "t.npy", "truncated"});
  }
}

TEST(NpyLoad, BadFilesNameTheFileAndWhatWasExpected) {
  ScratchDir dir;
  const std::string p = dir / "x.npy";
  expect_io_error([&] { mj::load_npy(p); }, {"load_npy", p, "cannot open", "No such file"});
  write_bytes(p, {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '\n'});
  expect_io_error([&] { mj::load_npy(p); }, {p, "not a .npy file"});
  std::vector<uint8_t> ok = npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", le_floats({1, 2}));
  std::vector<uint8_t> more = ok;
  more[8] = 0xff;  // a header length past the end of the file
  more[9] = 0x7f;
  write_bytes(p, more);
  expect_io_error([&] { mj::load_npy(p); }, {p, "truncated", "claims 32767 bytes"});
  std::vector<uint8_t> trailing = ok;
  trailing.push_back(0);
  write_bytes(p, trailing);
  expect_io_error([&] { mj::load_npy(p); }, {p, "corrupt", "claims 8 bytes of data, the file holds 9"});
  std::vector<uint8_t> v9 = ok;
  v9[6] = 9;
  write_bytes(p, v9);
  expect_io_error([&] { mj::load_npy(p); }, {p, "unsupported .npy version 9.0"});
  const std::vector<std::pair<std::string, std::string>> bad_dicts = {
      {"{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", "unsupported dtype '<i8'"},
      {"{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }", "unsupported dtype '<f2'"},
      {"{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", "unsupported dtype '|O'"},
      {"{'descr': '<u2', 'fortran_order': False, 'shape': (4,), }", "unsupported dtype '<u2'"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", "structured"},
      {"{'descr': '<f4', 'shape': (2,), }", "the keys 'descr', 'fortran_order' and 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1, }", "got 'x'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", "non-negative integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", "(n,)"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", "True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), ", "'}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x", "only spaces"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", "overflows"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", "claims 12 bytes of data, the file holds 8"},
  };
  for (auto& [dict, expected] : bad_dicts) {
    write_bytes(p, npy_image(dict, le_floats({1, 2})));
    expect_io_error([&] { mj::load_npy(p); }, {"load_npy", p, expected});
  }
}

TEST(NpyLoad, LikeChecksDtypeAndShapeAndReadsBf16Bits) {
  ScratchDir dir;
  const std::string p = dir / "a.npy";
  mj::save_npy(p, make<float>({2, 2}, {1, 2, 3, 4}));
  expect_io_error([&] { mj::load_npy(p, mj::zeros({4})); }, {p, "the file holds f32[2,2], expected f32[4]"});
  expect_io_error([&] { mj::load_npy(p, mj::zeros({2, 2}, mj::f64)); }, {p, "expected f64[2,2]"});
  const mj::Array like = mj::Array(mj::ShapeDtypeStruct{{2, 2}, mj::f32});  // abstract: no value needed
  EXPECT_TRUE(same_array(mj::load_npy(p, like), make<float>({2, 2}, {1, 2, 3, 4})));
  const mj::Array h = make_bf16({2}, {0x3F80, 0xBF00});
  mj::save_npy(p, h);
  expect_io_error([&] { mj::load_npy(p); }, {p, "unsupported dtype '<u2'", "bfloat16"});
  EXPECT_TRUE(same_array(mj::load_npy(p, mj::zeros({2}, mj::bf16)), h));
}

TEST(NpySave, BadArraysAndUnwritablePaths) {
  ScratchDir dir;
  const mj::Array f0 = mj::Array::allocate(mj::ShapedArray{{2}, mj::float0});
  expect_io_error([&] { mj::save_npy(dir / "z.npy", f0); }, {"save_npy", dir / "z.npy", "unsupported dtype float0"});
  EXPECT_FALSE(fs::exists(dir / "z.npy"));
  auto traced = mj::jit([&](const mj::Array& x) {
    mj::save_npy(dir / "t.npy", x);
    return x;
  });
  EXPECT_THROW(traced(mj::ones({2})), mj::ConcretizationError);
  expect_io_error([&] { mj::save_npy(dir / "no/such/folder/a.npy", mj::ones({2})); },
                  {"save_npy", dir / "no/such/folder/a.npy", "cannot create the temporary file"});
  fs::create_directories(dir / "folder.npy");
  expect_io_error([&] { mj::save_npy(dir / "folder.npy", mj::ones({2})); }, {"cannot rename"});
  expect_io_error([&] { mj::load_npy(dir / "folder.npy"); }, {"load_npy", "folder"});
  // Neither failure left a temporary file behind.
  for (auto& e : fs::directory_iterator(dir.path)) EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos);
}

}  // namespace
