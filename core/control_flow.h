// minijax control-flow API mirroring jax.lax: scan and fori_loop (and the other loops and
// conditionals) as templates over pytrees, plus the flat entry points that bind the primitives.
#pragma once
#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "core/lax.h"
#include "core/pytree.h"
#include "core/staging.h"

namespace minijax {

// ---- scan ----------------------------------------------------------------------------------------

/// Options of scan (jax.lax.scan's keyword arguments).
struct ScanOptions {
  /// Number of iterations; required when xs has no leaves, otherwise it must equal the leading
  /// dimension of every xs leaf.
  std::optional<int64_t> length;
  /// Iterate from the last slice to the first (ys are still stacked in index order).
  bool reverse = false;
  /// Unroll factor, recorded in the equation for the compiler (>= 1); the eager implementation
  /// runs one iteration at a time.
  int64_t unroll = 1;
};

/// Flat scan (what the pytree template binds): `body` maps [carry..., x slices...] to
/// [new carry..., y slices...]; returns [final carry..., ys stacked along a new leading axis of
/// size length...]. The body is traced once (closure conversion: values and outer tracers it
/// uses become leading constant operands) and one `scan` equation is bound (layout and params:
/// core/control_flow/scan.cc). `carry_structure` names the carry's pytree structure in errors.
/// Throws: ShapeError if the xs leaves' leading dims differ from each other or from
/// opts.length (naming the lengths), ValueError if there are no xs and no length, or length or
/// unroll is invalid; TypeError if a carry output leaf's aval (shape, dtype, memory kind)
/// differs from the input's (showing both avals and the leaf index); ConcretizationError if
/// the body converts a traced value to C++ (e.g. `if (x > 0)`); what the body throws.
/// Source: jax/_src/lax/control_flow/loops.py scan.
std::vector<Array> scan_flat(const FlatFn& body, const std::vector<Array>& init,
                             const std::vector<Array>& xs, const ScanOptions& opts,
                             const std::string& carry_structure = "",
                             std::source_location loc = std::source_location::current());

namespace detail {
template <class R>
struct scan_result_traits {
  static constexpr bool is_pair = false;
};
template <class A, class B>
struct scan_result_traits<std::pair<A, B>> {
  static constexpr bool is_pair = true;
  using carry = A;
  using y = B;
};
}  // namespace detail

/// scan(f, init, xs, opts) -> {final carry, ys}: jax.lax.scan over pytrees. f(carry, x) returns
/// std::pair{new carry, y}; x is xs with the leading axis of every leaf sliced at the current
/// iteration, y (any pytree, mj::None for none) is stacked along a new leading axis of size
/// length in ys. The carry keeps its pytree structure and each leaf's shape, dtype and memory
/// kind; ys leaves keep the memory kind of the body's y values (e.g. pinned_host).
/// Example (cumulative sum): `auto [total, partial] = mj::scan([](Array c, Array x) {
///   Array s = c + x; return std::pair{s, s}; }, zero, xs);`
/// Throws as scan_flat, and TypeError if the carry returned by f has another pytree structure.
template <class F, class C, class X>
  requires PyTree<C> && PyTree<X>
auto scan(F f, const C& init, const X& xs, ScanOptions opts = {},
          std::source_location loc = std::source_location::current()) {
  using R = std::decay_t<std::invoke_result_t<F&, const C&, const X&>>;
  static_assert(detail::scan_result_traits<R>::is_pair,
                "scan: f(carry, x) must return std::pair{new carry, y}");
  using Y = std::decay_t<typename detail::scan_result_traits<R>::y>;
  static_assert(PyTree<Y>, "scan: y must be a pytree of Arrays (mj::None for none)");
  const std::vector<Array> flat_init = tree_flatten(init), flat_xs = tree_flatten(xs);
  std::optional<Y> y_like;
  FlatFn body = [&](const std::vector<Array>& ins) {
    const Array* next = ins.data();
    C c = pytree<C>::unflatten(init, next);
    X x = pytree<X>::unflatten(xs, next);
    R r = f(c, x);
    C c_out = r.first;
    try {
      tree_check_same(init, c_out, loc);
    } catch (const TypeError& e) {
      throw TypeError("scan body function carry input and carry output must have the same pytree "
                      "structure: " + e.message(), loc);
    }
    std::vector<Array> outs = tree_flatten(c_out);
    pytree<Y>::flatten(r.second, outs);
    y_like.emplace(r.second);
    return outs;
  };
  std::vector<Array> outs = scan_flat(body, flat_init, flat_xs, opts, tree_structure(init), loc);
  const auto nc = std::ptrdiff_t(flat_init.size());
  std::vector<Array> carry(outs.begin(), outs.begin() + nc), ys(outs.begin() + nc, outs.end());
  return std::pair<C, Y>{tree_unflatten(init, carry, loc), tree_unflatten(*y_like, ys, loc)};
}

/// scan without xs: f(carry, mj::None{}) runs opts.length times (required: ValueError
/// otherwise). Same as scan(f, init, mj::None{}, opts).
template <class F, class C>
  requires PyTree<C>
auto scan(F f, const C& init, ScanOptions opts,
          std::source_location loc = std::source_location::current()) {
  return scan(std::move(f), init, None{}, opts, loc);
}

// ---- fori_loop -----------------------------------------------------------------------------------

/// fori_loop(lo, hi, body, init): `for (i = lo; i < hi; ++i) carry = body(i, carry);` with static
/// bounds, as jax.lax.fori_loop does when the trip count is static: a scan of length
/// max(hi - lo, 0) over no xs whose carry is (i, carry), i an i32 scalar starting at lo (so
/// reverse-mode differentiation works). body(const Array& i, const C& carry) returns the new
/// carry (same pytree structure, leaf avals). Throws ValueError if lo or hi does not fit in
/// int32; what scan throws.
template <class F, class C>
  requires PyTree<C>
C fori_loop(int64_t lo, int64_t hi, F body, const C& init,
            std::source_location loc = std::source_location::current()) {
  constexpr int64_t kMin = -(int64_t(1) << 31), kMax = (int64_t(1) << 31) - 1;
  if (lo < kMin || lo > kMax || hi < kMin || hi > kMax)
    throw ValueError("fori_loop bounds must fit in int32, got lower=" + std::to_string(lo) +
                         " upper=" + std::to_string(hi), loc);
  using IC = std::pair<Array, C>;
  IC start{lax::scalar(double(lo), DType::i32), init};
  ScanOptions opts;
  opts.length = hi > lo ? hi - lo : 0;
  auto res = scan(
      [&body](const IC& ic, const None&) {
        C next = body(ic.first, ic.second);
        return std::pair<IC, None>{IC{lax::add(ic.first, lax::scalar(1, DType::i32)), next}, None{}};
      },
      start, None{}, opts, loc);
  return res.first.second;
}

}  // namespace minijax
