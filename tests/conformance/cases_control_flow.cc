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

namespace conformance {
namespace {
using V3 = std::vector<Array>;

// cond(p, x*w + sin(x), x - w*w) and a 3-way switch; the predicate/index is a fixed argument.
Array cond_body(const V3& a) {
  return mj::cond(a[0], [](const Array& x, const Array& w) { return x * w + mj::sin(x); },
                  [](const Array& x, const Array& w) { return x - w * w; }, a[1], a[2]);
}
Array switch_body(const V3& a) {
  std::vector<std::function<Array(const Array&)>> br{
      [](const Array& x) { return mj::exp(x); }, [](const Array& x) { return x * x; },
      [](const Array& x) { return mj::tanh(x) * 2.0; }};
  return mj::switch_(a[0], br, a[1]);
}
// Three steps of x <- x + 0.5 sin(x) counted by an i32 carry (unbatched predicate), and a
// data-dependent loop x <- 1.5 x while sum(x^2) < 10 (batched predicate under vmap).
Array while_counted(const V3& a) {
  using C = std::pair<Array, Array>;
  return mj::while_loop([](const C& c) { return c.first < 3; },
                        [](const C& c) { return C{c.first + 1, c.second + mj::sin(c.second) * 0.5}; },
                        C{mj::scalar(0, mj::i32), a[0]})
      .second;
}
Array while_data(const V3& a) {
  return mj::while_loop([](const Array& x) { return mj::sum(x * x) < 10.0; },
                        [](const Array& x) { return x * 1.5; }, a[0]);
}

// while: reverse mode is impossible (JAX's error), so differentiable=false; its forward mode is
// checked against finite differences in tests/autodiff/test_cond_while_grad.cc.
Add cond_while_cases({
    Case{"cond", "true", one(cond_body), {mj::scalar(1, mj::bool_), rnd({3}, 921), rnd({3}, 922)},
         true, true, true, {true, false, false}},
    Case{"cond", "false", one(cond_body), {mj::scalar(0, mj::bool_), rnd({3}, 923), rnd({3}, 924)},
         true, true, true, {true, false, false}},
    Case{"cond", "switch3", one(switch_body), {mj::scalar(2, mj::i32), rnd({2, 2}, 925)},
         true, true, true, {true, false}},
    Case{"while", "counted", one(while_counted), {rnd({3}, 926)}, false},
    Case{"while", "data_dependent", one(while_data), {rnd({3}, 927, 0.5, 1.0)}, false},
});

}  // namespace
}  // namespace conformance
