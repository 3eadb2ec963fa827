// minijax conformance cases of igamma and igamma_grad_a (core/primitives/special_igamma.cc): f64
// with every check, f32 over the accuracy domain (compiled vs eager).
#include "conformance.h"

namespace conformance {
namespace {
namespace lax = mj::lax;
using V = std::vector<Array>;

Array a64() { return rnd({2, 4}, 2911, 0.3, 6); }
Array x64() { return rnd({2, 4}, 2912, 0.2, 9); }

Add cases({
    // JVP against finite differences in both operands, VJP, vmap, sharded; no second order (its
    // d/da is igamma_grad_a, which has no JVP in JAX).
    Case{"igamma",
         "f64",
         one([](const V& a) { return lax::igamma(a[0], a[1]); }),
         {a64(), x64()},
         true,
         false},
    // Second order with respect to x alone (a a constant of the function).
    Case{"igamma", "f64_in_x", one([](const V& v) { return lax::igamma(a64(), v[0]); }), {x64()}},
    Case{"igamma",
         "f32_wide",
         one([](const V& a) { return lax::igamma(a[0], a[1]); }),
         {rnd({4, 64}, 2913, 0.01, 100, mj::f32), rnd({4, 64}, 2914, 0, 200, mj::f32)},
         false},
    Case{"igamma_grad_a",
         "f64",
         one([](const V& a) { return lax::igamma_grad_a(a[0], a[1]); }),
         {a64(), x64()},
         false},
    Case{"igamma_grad_a",
         "f32_wide",
         one([](const V& a) { return lax::igamma_grad_a(a[0], a[1]); }),
         {rnd({4, 64}, 2915, 0.01, 100, mj::f32), rnd({4, 64}, 2916, 0, 200, mj::f32)},
         false},
});

}  // namespace
}  // namespace conformance
