// minijax control-flow API mirroring jax.lax: scan and fori_loop (and the other loops and
// conditionals) as templates over pytrees, plus the flat entry points that bind the primitives.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "core/api.h"
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

// ---- cond / switch -------------------------------------------------------------------------------

/// Binds one `cond` equation (JAX's cond_p). Operands: index (an i32 scalar; a bool is converted
/// with convert_element_type as JAX does; clamped into [0, n) by the eager implementation) and
/// the branch operands. `branches` are traced closed jaxprs over the operands' avals; their
/// constants (closed-over values, possibly tracers of enclosing traces) are joined into leading
/// operands every branch takes (JAX's _initial_style_jaxprs_with_common_consts). Param `branches`
/// holds the converted jaxprs (no constvars). Eagerly only the selected branch is evaluated.
/// Throws TypeError if the index is not an integer/bool scalar or the branches' output avals
/// (shape, dtype, memory kind) differ (showing both and the output index); ValueError if there
/// are no branches. Source: jax/_src/lax/control_flow/conditionals.py.
std::vector<Array> bind_cond(const Array& index, const std::vector<ClosedJaxpr>& branches,
                             const std::vector<Array>& operands,
                             std::source_location loc = std::source_location::current());
/// Traces each flat branch on the operands' avals and binds `cond` (see bind_cond).
std::vector<Array> cond_flat(const Array& index, const std::vector<FlatFn>& branches,
                             const std::vector<Array>& operands,
                             std::source_location loc = std::source_location::current());

namespace detail {
/// An Array argument remembering the caller's source location (for variadic APIs, where a
/// defaulted std::source_location parameter cannot follow the pack).
struct ArrayAt {
  const Array& value;
  std::source_location loc;
  ArrayAt(const Array& v, std::source_location l = std::source_location::current())
      : value(v), loc(l) {}
};

/// Traces the branches of a cond/switch over pytree operands and binds `cond`; checks that every
/// branch returns the same pytree structure (TypeError showing both).
template <class R, class... Ops>
R cond_impl(const Array& index, const std::vector<std::function<R(const Ops&...)>>& fs,
            std::source_location loc, const char* what, const Ops&... ops) {
  std::vector<Array> flat = flatten_args(ops...);
  std::vector<ShapedArray> avals;
  for (auto& a : flat) avals.push_back(a.aval());
  std::vector<ClosedJaxpr> jaxprs;
  std::vector<std::optional<R>> likes(fs.size());
  for (size_t b = 0; b < fs.size(); ++b) {
    jaxprs.push_back(trace_to_jaxpr(
        [&](const std::vector<Array>& ins) {
          const Array* next = ins.data();
          std::tuple<std::decay_t<Ops>...> rebuilt{pytree<std::decay_t<Ops>>::unflatten(ops, next)...};
          R r = std::apply(fs[b], rebuilt);
          likes[b].emplace(r);
          return tree_flatten(r);
        },
        avals, loc));
    if (b > 0) {
      try {
        tree_check_same(*likes[0], *likes[b], loc);
      } catch (const TypeError& e) {
        throw TypeError(std::string(what) + " branch outputs must have the same pytree structure: "
                        "branch 0 returns " + tree_structure(*likes[0]) + ", branch " +
                        std::to_string(b) + " returns " + tree_structure(*likes[b]) + " (" +
                        e.message() + ")", loc);
      }
    }
  }
  return tree_unflatten(*likes[0], bind_cond(index, jaxprs, flat, loc), loc);
}
}  // namespace detail

/// cond(pred, true_f, false_f, operands...): true_f(operands...) if pred else false_f(operands...)
/// (jax.lax.cond). pred is a scalar bool Array; operands are pytrees; both branches must return
/// the same pytree structure with the same leaf avals (shape, dtype, memory kind). Both branches
/// are traced; one `cond` equation is bound with index convert_element_type(pred, i32) and
/// branches (false_f, true_f). Eagerly only the selected branch runs; under vmap with a batched
/// predicate both run and the results are selected.
/// Throws TypeError: pred not a scalar bool (naming its aval); branch outputs differing in
/// structure or leaf avals (showing both). ConcretizationError if a branch converts a traced
/// value to C++.
template <class TF, class FF, class... Ops>
  requires(PyTree<std::decay_t<Ops>> && ...)
auto cond(detail::ArrayAt pred_at, TF true_f, FF false_f, const Ops&... operands) {
  const Array& pred = pred_at.value;
  std::source_location loc = pred_at.loc;
  using R = std::decay_t<std::invoke_result_t<TF&, const std::decay_t<Ops>&...>>;
  static_assert(PyTree<R>, "cond: the branches must return a pytree of Arrays");
  if (!pred.defined() || pred.ndim() != 0 || pred.dtype() != DType::bool_)
    throw TypeError("cond: pred must be a scalar boolean type, got " +
                        (pred.defined() ? pred.aval().str() : std::string("an empty Array")),
                    loc);
  std::vector<std::function<R(const std::decay_t<Ops>&...)>> fs{
      [false_f](const std::decay_t<Ops>&... a) mutable { return R(false_f(a...)); },
      [true_f](const std::decay_t<Ops>&... a) mutable { return R(true_f(a...)); }};
  return detail::cond_impl<R, std::decay_t<Ops>...>(pred, fs, loc, "cond", operands...);
}

/// switch_(index, branches, operands...): branches[clamp(index, 0, n - 1)](operands...)
/// (jax.lax.switch). index is an integer scalar Array (converted to i32 and clamped as JAX does);
/// branches is a non-empty std::vector of callables with the same signature, returning the same
/// pytree structure and leaf avals. Throws ValueError for no branches; TypeError for a
/// non-integer or non-scalar index (naming its aval) and differing branch outputs.
template <class F, class... Ops>
  requires(PyTree<std::decay_t<Ops>> && ...)
auto switch_(detail::ArrayAt index_at, const std::vector<F>& branches, const Ops&... operands) {
  const Array& index = index_at.value;
  std::source_location loc = index_at.loc;
  using R = std::decay_t<std::invoke_result_t<F&, const std::decay_t<Ops>&...>>;
  static_assert(PyTree<R>, "switch: the branches must return a pytree of Arrays");
  if (branches.empty()) throw ValueError("switch: empty branch sequence", loc);
  if (!index.defined() || index.ndim() != 0 ||
      !(index.dtype() == DType::i32 || index.dtype() == DType::u32))
    throw TypeError("switch: index must be a scalar integer, got " +
                        (index.defined() ? index.aval().str() : std::string("an empty Array")),
                    loc);
  std::vector<std::function<R(const std::decay_t<Ops>&...)>> fs;
  for (auto& f : branches)
    fs.push_back([f](const std::decay_t<Ops>&... a) mutable { return R(f(a...)); });
  Array idx = lax::convert_element_type(index, DType::i32, false, loc);
  idx = lax::clamp(lax::scalar(0, DType::i32), idx,
                   lax::scalar(double(branches.size() - 1), DType::i32), loc);
  return detail::cond_impl<R, std::decay_t<Ops>...>(idx, fs, loc, "switch", operands...);
}

// ---- while_loop ----------------------------------------------------------------------------------

/// Binds one `while` equation (JAX's while_p): `while (cond(carry)) carry = body(carry)`.
/// cond_fn maps the carry to a bool scalar, body_fn maps the carry to a carry of the same avals.
/// Both are traced (closed-over values become the leading cond_consts/body_consts operands).
/// Operands: cond_consts + body_consts + init; params cond_jaxpr, body_jaxpr, cond_nconsts,
/// body_nconsts. Throws TypeError if cond_fn does not return one bool scalar, or a body output
/// leaf's aval differs from the carry's (showing both and the leaf index; `structure` names the
/// carry's pytree structure). Reverse-mode differentiation is impossible (NotDifferentiableError
/// with JAX's message); forward mode and vmap work. Source: jax/_src/lax/control_flow/loops.py.
std::vector<Array> while_flat(const FlatFn& cond_fn, const FlatFn& body_fn,
                              const std::vector<Array>& init, const std::string& structure = "",
                              std::source_location loc = std::source_location::current());

/// while_loop(cond_fun, body_fun, init): `carry = init; while (cond_fun(carry)) carry =
/// body_fun(carry); return carry;` (jax.lax.while_loop) over a pytree carry. cond_fun returns a
/// scalar bool Array; body_fun returns the same pytree structure with the same leaf avals.
/// Throws TypeError (structure or leaf aval change, showing both; non-bool/non-scalar cond
/// output); grad through it throws NotDifferentiableError (JAX's message: use scan or a static
/// fori_loop).
template <class CF, class BF, class C>
  requires PyTree<C>
C while_loop(CF cond_fun, BF body_fun, const C& init,
             std::source_location loc = std::source_location::current()) {
  std::vector<Array> flat = tree_flatten(init);
  FlatFn cf = [&](const std::vector<Array>& ins) {
    const Array* next = ins.data();
    C c = pytree<C>::unflatten(init, next);
    Array p = cond_fun(c);
    return std::vector<Array>{p};
  };
  FlatFn bf = [&](const std::vector<Array>& ins) {
    const Array* next = ins.data();
    C c = pytree<C>::unflatten(init, next);
    C out = body_fun(c);
    try {
      tree_check_same(init, out, loc);
    } catch (const TypeError& e) {
      throw TypeError("while_loop body_fun output and input must have the same pytree structure: "
                      "input " + tree_structure(init) + ", output " + tree_structure(out) + " (" +
                      e.message() + ")", loc);
    }
    return tree_flatten(out);
  };
  return tree_unflatten(init, while_flat(cf, bf, flat, tree_structure(init), loc), loc);
}

/// fori_loop with traced (Array) bounds: `for (i = lo; i < hi; ++i) carry = body(i, carry)` as a
/// while_loop over (i, hi, carry) (jax.lax.fori_loop with dynamic bounds; lo is converted to hi's
/// integer dtype). lo and hi are integer scalars (TypeError naming the aval otherwise). Reverse-mode
/// differentiation is impossible (use the static-bounds overload, which is a scan).
template <class F, class C>
  requires PyTree<C>
C fori_loop(const Array& lo, const Array& hi, F body, const C& init,
            std::source_location loc = std::source_location::current()) {
  for (const Array* b : {&lo, &hi})
    if (!b->defined() || b->ndim() != 0 || !(b->dtype() == DType::i32 || b->dtype() == DType::u32))
      throw TypeError("fori_loop: lower and upper must be integer scalars, got " +
                          (b->defined() ? b->aval().str() : std::string("an empty Array")),
                      loc);
  using T = std::tuple<Array, Array, C>;
  T start{lax::convert_element_type(lo, hi.dtype(), false, loc), hi, init};
  T res = while_loop([](const T& t) { return lax::lt(std::get<0>(t), std::get<1>(t)); },
                     [&body](const T& t) {
                       const Array& i = std::get<0>(t);
                       C next = body(i, std::get<2>(t));
                       return T{lax::add(i, lax::scalar(1, i.dtype())), std::get<1>(t), next};
                     },
                     start, loc);
  return std::get<2>(res);
}

}  // namespace minijax
