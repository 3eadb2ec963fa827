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
