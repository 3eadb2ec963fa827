// minijax conformance cases: control-flow primitives (scan), each exercised through its user
// API on flat array arguments.
#include "conformance.h"

namespace conformance {
namespace {
using V = std::vector<Array>;

// h <- tanh(W h + x_t) with W a closed-over const, ys = h * x_t; forward and reverse.
V rnn_scan(const V& a, bool reverse) {
  const Array& w = a[0];
  auto [h, ys] = mj::scan(
      [&w](const Array& h, const Array& x) {
        Array n = mj::tanh(mj::matmul(w, h) + x);
        return std::pair{n, n * x};
      },
      a[1], a[2], {.reverse = reverse});
  return {h, ys};
}

// Differentiable: scan's JVP is split by its partial-eval rule and the tangent scan transposed
// (autodiff/rules/scan_partial_eval.cc, scan_transpose.cc).
Add cases({
    Case{"scan", "rnn", [](const V& a) { return rnn_scan(a, false); },
         {rnd({3, 3}, 901), rnd({3}, 902), rnd({4, 3}, 903)}, true},
    Case{"scan", "rnn_reverse", [](const V& a) { return rnn_scan(a, true); },
         {rnd({3, 3}, 904), rnd({3}, 905), rnd({4, 3}, 906)}, true},
});

}  // namespace
}  // namespace conformance

namespace conformance {
namespace {
using V2 = std::vector<Array>;

// g(x, w) = sum-free body with a dot, a named value and a nonlinearity, under three policies.
V2 remat_body(const V2& a, mj::PolicyPtr policy) {
  auto body = [](const Array& x, const Array& w) {
    Array h = mj::checkpoint_name(mj::sin(mj::matmul(x, w)), "h");
    return mj::tanh(h) * x;
  };
  return {mj::checkpoint(body, {.policy = policy})(a[0], a[1])};
}

Add remat_cases({
    Case{"checkpoint", "nothing_saveable",
         [](const V2& a) { return remat_body(a, mj::checkpoint_policies::nothing_saveable()); },
         {rnd({3, 3}, 911), rnd({3, 3}, 912)}},
    Case{"checkpoint", "dots_saveable",
         [](const V2& a) { return remat_body(a, mj::checkpoint_policies::dots_saveable()); },
         {rnd({3, 3}, 913), rnd({3, 3}, 914)}},
    Case{"checkpoint", "offload_h",
         [](const V2& a) {
           return remat_body(a, mj::checkpoint_policies::save_and_offload_only_these_names(
                                    {}, {"h"}, "device", "pinned_host"));
         },
         {rnd({3, 3}, 915), rnd({3, 3}, 916)}},
    Case{"name", "", one([](const V2& a) { return mj::checkpoint_name(a[0], "x") * a[0]; }),
         {rnd({2, 3}, 917)}},
});

}  // namespace
}  // namespace conformance
