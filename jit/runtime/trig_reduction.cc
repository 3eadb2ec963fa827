// minijax runtime: the argument reduction of sin, cos and tan for huge arguments (|x| >= 2^19 for
// f32 results, 2^26 for f64), called by compiled code on the rare vectors that hold such a lane.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "jit/runtime/trig_reduction.h"

namespace {

// 2/pi = sum_j kTwoOverPiChunks[j] 2^(-26 (j + 1)): 1248 bits (mpmath, 500 digits).
constexpr int kChunks = 48;
constexpr double kTwoOverPiChunks[kChunks] = {
    42722829, 48555073, 21659401, 56087029, 13858563, 28715353, 38736100, 4324945,
    26128250, 62674459, 29957006, 37899730, 58726692, 49193117, 6588223,  35515164,
    46442140, 65964067, 24988590, 54822121, 41009306, 54917092, 5137525,  37323603,
    15192690, 4585659,  58608142, 52426903, 67074070, 25231090, 63202006, 34237727,
    28629499, 15891632, 40752081, 37709470, 25143477, 55737260, 33225084, 24853767,
    15195689, 19476134, 50255852, 18845021, 2185228,  50622407, 47901436, 13614112};
constexpr double kPio2Hi = 0x1.921fb54442d18p+0, kPio2Lo = 0x1.1a62633145c07p-54;

// s + e == a + x exactly (Knuth's TwoSum).
inline void two_sum(double a, double x, double& s, double& e) {
  s = a + x;
  const double xv = s - a;
  const double av = s - xv;
  e = (a - av) + (x - xv);
}

// Exact chunked product x * 2/pi mod 4 for finite x (Payne & Hanek, "Radian reduction for
// trigonometric functions", SIGNUM 1983): x = 2^E M; chunks j < j0 = max(0, (E - 54) / 26) give
// multiples of 4 and are skipped; eight 26-bit chunks from j0 times the two halves of x (26 + 27
// bits: every product exact), each reduced mod 4 exactly, summed in three terms (the result may be
// as small as 2^-61 after the integer part cancels and needs ~2^-116); the integer part k is the
// quadrant, the fraction f times pi/2 is r = hi + lo. Products and multiply-adds use one rounding
// (std::fma), as the compiled code does on hosts with FMA.
void reduce_one(double x, double& hi, double& lo, double& k) {
  uint64_t bits;
  std::memcpy(&bits, &x, 8);
  int64_t e54 = int64_t((bits >> 52) & 0x7ff) - 1023 - 54;
  e54 = e54 > 0 ? e54 : 0;
  e54 = e54 < 1023 - 54 ? e54 : 1023 - 54;
  const int64_t j0 = e54 / 26;
  const double y = x * std::ldexp(1.0, int(-26 * (j0 + 1)));  // exact
  const double g = y * 134217729.0;                             // 2^27 + 1 (Veltkamp)
  const double yh = g - (g - y), yl = y - yh;
  double S = 0, Lo = 0, Lo2 = 0;
  auto add_term = [&](double v) {
    const double t = v - 4.0 * std::rint(v * 0.25);  // v mod 4, exact
    double s, e, l, e2;
    two_sum(S, t, s, e);
    two_sum(Lo, e, l, e2);
    S = s;
    Lo = l;
    Lo2 = Lo2 + e2;
  };
  for (int i = 0; i < 8; ++i) {
    const double c = kTwoOverPiChunks[j0 + i], scale = std::ldexp(1.0, -26 * i);
    add_term((yh * c) * scale);
    add_term((yl * c) * scale);
  }
  k = std::rint(S);
  const double fh = S - k;  // exact
  double a, a2, f, fl;
  two_sum(fh, Lo, a, a2);
  two_sum(a, a2 + Lo2, f, fl);
  const double p = f * kPio2Hi, pe = std::fma(f, kPio2Hi, -p);
  const double l = pe + std::fma(f, kPio2Lo, fl * kPio2Hi);
  hi = p + l;
  lo = l - (hi - p);
}

}  // namespace

extern "C" void mj_rt_trig_reduce(const double* x, int64_t n, double* hi, double* lo, double* k) {
  for (int64_t i = 0; i < n; ++i) reduce_one(x[i], hi[i], lo[i], k[i]);
}
