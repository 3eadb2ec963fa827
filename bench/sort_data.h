// minijax bench data for sorting: the float arrays bench/sort.cc and bench/peers/libtorch_sort.cpp
// both sort (header-only, plain C++17, no minijax includes: the peer is built without minijax).
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

namespace sortbench {

/// splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): one 64-bit draw from the state `s`, which it advances.
inline uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// `n` floats uniform in [0, 1) (the top 24 bits of each draw times 2^-24), from seed 0. With
/// `with_nan`, an element whose draw is 0 mod 100 is a quiet NaN instead (1% on average).
inline std::vector<float> uniform_floats(int64_t n, bool with_nan) {
  uint64_t s = 0;
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) {
    const uint64_t r = splitmix64(s);
    x = with_nan && r % 100 == 0 ? std::numeric_limits<float>::quiet_NaN() : float(r >> 40) * 0x1p-24f;
  }
  return v;
}

}  // namespace sortbench
