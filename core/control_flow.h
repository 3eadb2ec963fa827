// minijax control-flow API mirroring jax.lax: scan and fori_loop (and the other loops and
// conditionals) as templates over pytrees, plus the flat entry points that bind the primitives.
#pragma once
#include <concepts>
#include <cstdint>
#include <functional>
#include <optional>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "core/errors.h"
#include "core/api.h"
#include "core/lax.h"
#include "core/pytree.h"
#include "core/staging.h"

namespace minijax {

// ---- scan ----------------------------------------------------------------------------------------

/// An unroll setting as jax.lax.scan and jax.lax.fori_loop take it: a bool (true: the whole
/// loop, false: 1) or a non-negative integer (0: the whole loop, as in JAX).
using Unroll = std::variant<bool, int64_t>;

/// Options of scan (jax.lax.scan's keyword arguments).
struct ScanOptions {
  /// Number of iterations; required when xs has no leaves, otherwise it must equal the leading
  /// dimension of every xs leaf.
  std::optional<int64_t> length;
  /// Iterate from the last slice to the first (ys are still stacked in index order).
  bool reverse = false;
  /// How many iterations the compiled loop runs per trip (jax.lax.scan's `unroll`): an int k >= 0
  /// or a bool. scan records it in the equation's `unroll` param as JAX binds it: true becomes
  /// max(length, 1), false becomes 1, an int is kept (0 included); a negative int is a
  /// ValueError naming scan and the value. The compiler (jit/codegen/lower/program.cc) emits a scan of
  /// length L with unroll k (k = L when k is 0 or larger than L) as a native loop of ⌊L/k⌋ trips
  /// whose body is k copies of the scan body, iterations t·k … t·k + k − 1, then L mod k copies
  /// for the last iterations, straight-line; when k ≥ L there is no loop, only L copies (JAX's
  /// _scan_impl lowering). Copies call the body's kernels and use its buffers, so unrolling
  /// trades code size for fewer trips (the loop's test and index arithmetic once per k
  /// iterations) and straight-line code LLVM optimizes across copies; each copy still calls the
  /// body's kernels, so a small body gains little (bench/README.md, minijax_bench_loops). Values
  /// are those of unroll 1 (the same iterations in the same order). Eager evaluation runs one
  /// iteration at a time; jvp, vmap, partial evaluation, transposition and the offload passes
  /// keep the param. Source: jax/_src/lax/control_flow/loops.py (scan, _scan_impl).
  Unroll unroll = int64_t{1};
};

namespace detail {
/// The `unroll` param scan binds for `u` in a loop of `length` iterations: true -> max(length,
/// 1), false -> 1, an int as given. Throws ValueError naming `fn` and the value for a negative
/// int.
int64_t unroll_param(const Unroll& u, int64_t length, const char* fn, std::source_location loc);
}  // namespace detail

/// Flat scan (what the pytree template binds): `body` maps [carry..., x slices...] to
/// [new carry..., y slices...]; returns [final carry..., ys stacked along a new leading axis of
/// size length...]. The body is traced once (closure conversion: values and outer tracers it
/// uses become leading constant operands) and one `scan` equation is bound (layout and params:
/// core/control_flow/scan.cc). `carry_structure` names the carry's pytree structure in errors.
/// Throws: ValueError if the xs leaves' leading dims differ from each other or from
/// opts.length (naming the lengths, as JAX's ValueError does), if there are no xs and no length,
/// or if length or unroll is invalid (naming the value); ShapeError for a scalar xs leaf;
/// TypeError if a carry output leaf's aval (shape, dtype, memory kind) differs from the input's
/// (showing both avals and the leaf index); ConcretizationError if the body converts a traced
/// value to C++ (e.g. `if (x > 0)`); what the body throws.
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

/// Options of fori_loop (jax.lax.fori_loop's keyword arguments).
struct ForiLoopOptions {
  /// The loop's unroll (ScanOptions::unroll) when it runs as a scan (bounds known when fori_loop
  /// is called); unset is JAX's None, i.e. 1. With traced bounds the loop is a while_loop, and an int
  /// other than 1 is a ValueError, as in JAX (a bool passes JAX's check: True == 1 in Python).
  std::optional<Unroll> unroll;
};

/// fori_loop(lo, hi, body, init, opts): `for (i = lo; i < hi; ++i) carry = body(i, carry);` with
/// static bounds, as jax.lax.fori_loop does when the trip count is static: a scan of length
/// max(hi - lo, 0) over no xs whose carry is (i, carry), i an i32 scalar starting at lo (so
/// reverse-mode differentiation works), with opts.unroll as the scan's unroll (unset: 1).
/// body(const Array& i, const C& carry) returns the new carry (same pytree structure, leaf
/// avals). Example: `mj::fori_loop(0, 10, body, init, {.unroll = 2})`. Throws ValueError if lo or
/// hi does not fit in int32 or opts.unroll is a negative int (naming fori_loop and the value);
/// what scan throws. Source: jax/_src/lax/control_flow/loops.py fori_loop.
template <class F, class C>
  requires PyTree<C>
C fori_loop(int64_t lo, int64_t hi, F body, const C& init, ForiLoopOptions opts = {},
            std::source_location loc = std::source_location::current()) {
  constexpr int64_t kMin = -(int64_t(1) << 31), kMax = (int64_t(1) << 31) - 1;
  if (lo < kMin || lo > kMax || hi < kMin || hi > kMax)
    throw ValueError("fori_loop bounds must fit in int32, got lower=" + std::to_string(lo) +
                         " upper=" + std::to_string(hi), loc);
  using IC = std::pair<Array, C>;
  IC start{lax::scalar(double(lo), DType::i32), init};
  ScanOptions so;
  so.length = hi > lo ? hi - lo : 0;
  so.unroll = detail::unroll_param(opts.unroll.value_or(Unroll{false}), *so.length, "fori_loop", loc);
  auto res = scan(
      [&body](const IC& ic, const None&) {
        C next = body(ic.first, ic.second);
        return std::pair<IC, None>{IC{lax::add(ic.first, lax::scalar(1, DType::i32)), next}, None{}};
      },
      start, None{}, so, loc);
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
  return detail::cond_impl<R, std::decay_t<Ops>...>(pred, fs, loc, __func__, operands...);
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

namespace detail {
/// A fori_loop bound: an Array, or a C++ integer (a weakly typed i32, as a Python int is).
template <class B>
concept LoopBound = std::same_as<B, Array> || (std::integral<B> && !std::same_as<B, bool>);

inline const Array& loop_bound(const Array& b, std::source_location) { return b; }
template <std::integral I>
Array loop_bound(I b, std::source_location loc) {
  if (!std::in_range<int32_t>(b))
    throw ValueError("fori_loop bounds must fit in int32, got " + std::to_string(b), loc);
  return lax::scalar(double(b), DType::i32, /*weak=*/true);
}

/// How a fori_loop with Array bounds runs (JAX's fori_loop): `scan` when both bounds are
/// concrete (values, or JVP tracers over values), with `lower`/`upper` their values as C++
/// integers (floats truncated toward zero, as Python's int()); otherwise a while_loop from `lo`
/// to `hi`, whose dtype the loop index takes.
struct ForiBounds {
  bool scan = false;
  int64_t lower = 0, upper = 0;
  Array lo, hi;
};
/// Checks and classifies the bounds. Throws TypeError naming fori_loop and the avals if a bound
/// is not a numeric scalar, or the dtypes differ other than JAX allows (a weakly typed signed
/// integer takes the other's signed integer dtype); ValueError if opts.unroll is set to
/// something other than false or 1 while a bound is traced (JAX's message), or is negative.
ForiBounds fori_bounds(const Array& lo, const Array& hi, const ForiLoopOptions& opts,
                       std::source_location loc);
}  // namespace detail

/// fori_loop with Array bounds (either may also be a C++ integer, a weakly typed i32):
/// `for (i = lo; i < hi; ++i) carry = body(i, carry)` as jax.lax.fori_loop decides. Bounds whose
/// values are known (concrete Arrays, or JVP tracers of eager grad/jvp over them) make the static
/// overload's scan (i an i32; float bounds truncated toward zero, as JAX's int()), so
/// reverse-mode differentiation works and opts.unroll applies. Traced bounds (under jit,
/// make_jaxpr, vmap or a loop body) make a while_loop over (i, hi, carry) with i in the bounds'
/// common dtype (integer or floating point, stepping by 1); reverse-mode differentiation of it
/// throws NotDifferentiableError. The bounds are scalars of one dtype; a weakly typed signed
/// integer (a C++ integer) takes the other's signed integer dtype. Throws TypeError (non-scalar,
/// bool or mismatched bounds, naming their avals), ValueError (opts.unroll other than unset,
/// false or 1 with traced bounds; a negative unroll; a bound outside int32 for the scan), what
/// scan or while_loop throw. Source: jax/_src/lax/control_flow/loops.py fori_loop.
template <class L, class H, class F, class C>
  requires PyTree<C> && detail::LoopBound<L> && detail::LoopBound<H> &&
           (std::same_as<L, Array> || std::same_as<H, Array>)
C fori_loop(const L& lower, const H& upper, F body, const C& init, ForiLoopOptions opts = {},
            std::source_location loc = std::source_location::current()) {
  detail::ForiBounds fb =
      detail::fori_bounds(detail::loop_bound(lower, loc), detail::loop_bound(upper, loc), opts, loc);
  if (fb.scan) return fori_loop(fb.lower, fb.upper, std::move(body), init, opts, loc);
  using T = std::tuple<Array, Array, C>;
  T start{fb.lo, fb.hi, init};
  T res = while_loop([](const T& t) { return lax::lt(std::get<0>(t), std::get<1>(t)); },
                     [&body](const T& t) {
                       const Array& i = std::get<0>(t);
                       C next = body(i, std::get<2>(t));
                       return T{lax::add(i, lax::scalar(1, i.dtype(), i.weak_type())), std::get<1>(t), next};
                     },
                     start, loc);
  return std::get<2>(res);
}

}  // namespace minijax
