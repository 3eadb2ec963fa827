// minijax runtime: the declaration of mj_rt_trig_reduce, the huge-argument reduction of sin, cos and
// tan that compiled code calls (jit/runtime/trig_reduction.cc; listed in runtime_symbols()).
#pragma once
#include <cstdint>

extern "C" {
/// The argument reduction of sin, cos and tan for huge finite arguments: for i < n,
/// x[i] 2/pi = k[i] + f and f pi/2 = hi[i] + lo[i] (|hi| <= pi/4 + tiny, k[i] an integer), by an
/// exact chunked product with 1248 bits of 2/pi (Payne & Hanek, "Radian reduction for
/// trigonometric functions", SIGNUM 1983). Compiled sin, cos and tan call it only for vectors
/// holding a lane beyond their Cody-Waite range (|x| >= 2^19 for f32 results, 2^26 for f64).
void mj_rt_trig_reduce(const double* x, int64_t n, double* hi, double* lo, double* k);
}
