// The readers of the checked-in special-function reference values (tests/jit/special_reference/*.bin,
// written by tools/special_reference.py and tools/special_reference_igamma.py), for the accuracy tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace special_reference {

/// The bytes of tests/jit/special_reference/<fn>.bin if it starts with `magic` (8 bytes) and its
/// two u32 counts give its size (16 + n32 * row32 + n64 * row64 bytes); empty, with a test
/// failure naming the file and the generator, otherwise.
inline std::vector<char> read_file(const std::string& fn, const char* magic, size_t row32, size_t row64,
                                   const char* generator, uint32_t& n32, uint32_t& n64) {
  const std::string path = std::string(MINIJAX_SOURCE_DIR) + "/tests/jit/special_reference/" + fn + ".bin";
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 16 || std::string(bytes.data(), 8) != magic) {
    ADD_FAILURE() << "cannot read " << path << " (regenerate with /usr/bin/python3 " << generator << ")";
    return {};
  }
  std::memcpy(&n32, bytes.data() + 8, 4);
  std::memcpy(&n64, bytes.data() + 12, 4);
  if (bytes.size() != 16 + size_t(n32) * row32 + size_t(n64) * row64) {
    ADD_FAILURE() << path << ": size " << bytes.size() << " does not match its counts";
    return {};
  }
  return bytes;
}

/// One function of one argument ("MJSREF01"): f32 inputs with f64 values, f64 inputs with hi + lo
/// values (their sum in long double; lo == 0 keeps hi's sign, so -0 stays -0).
struct Unary {
  std::vector<float> x32;
  std::vector<double> r32;
  std::vector<double> x64;
  std::vector<long double> r64;
};

inline Unary read_unary(const std::string& fn) {
  uint32_t n32 = 0, n64 = 0;
  const std::vector<char> bytes = read_file(fn, "MJSREF01", 12, 24, "tools/special_reference.py", n32, n64);
  Unary r;
  if (bytes.empty()) return r;
  const char* p = bytes.data() + 16;
  for (uint32_t i = 0; i < n32; ++i, p += 12) {
    float x;
    double v;
    std::memcpy(&x, p, 4);
    std::memcpy(&v, p + 4, 8);
    r.x32.push_back(x);
    r.r32.push_back(v);
  }
  for (uint32_t i = 0; i < n64; ++i, p += 24) {
    double x, hi, lo;
    std::memcpy(&x, p, 8);
    std::memcpy(&hi, p + 8, 8);
    std::memcpy(&lo, p + 16, 8);
    r.x64.push_back(x);
    r.r64.push_back(lo == 0 ? (long double)hi : (long double)hi + lo);
  }
  return r;
}

/// The (a, x) pairs of one dtype and their reference values (double, correctly rounded from 200 bits).
struct Pairs {
  std::vector<double> a, x, ref;
};

/// One function of two arguments ("MJSREF02": f32 pairs, then f64 pairs).
struct Binary {
  Pairs f32, f64;
};

inline Binary read_binary(const std::string& fn) {
  uint32_t n32 = 0, n64 = 0;
  const std::vector<char> bytes =
      read_file(fn, "MJSREF02", 16, 24, "tools/special_reference_igamma.py", n32, n64);
  Binary r;
  if (bytes.empty()) return r;
  const char* p = bytes.data() + 16;
  // n rows of (a, x) in T, then the value in double
  auto rows = [&p]<class T>(uint32_t n, Pairs& out, T) {
    for (uint32_t i = 0; i < n; ++i, p += 2 * sizeof(T) + 8) {
      T a, x;
      double v;
      std::memcpy(&a, p, sizeof(T));
      std::memcpy(&x, p + sizeof(T), sizeof(T));
      std::memcpy(&v, p + 2 * sizeof(T), 8);
      out.a.push_back(a);
      out.x.push_back(x);
      out.ref.push_back(v);
    }
  };
  rows(n32, r.f32, float{});
  rows(n64, r.f64, double{});
  return r;
}

}  // namespace special_reference
