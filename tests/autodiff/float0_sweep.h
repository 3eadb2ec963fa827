// minijax float0 sweep: the table of ways an integer or boolean value meets a derivative.
// Owns Float0Entry (a primitive's int/bool operands or results between a float input and output).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <minijax/minijax.h>

namespace float0_sweep {

using mj::Array;
using V = std::vector<Array>;

/// One primitive applied where integer or boolean values flow: `in(x)` builds its operands from
/// the float input x (rank 0 or 1; the int/bool values are piecewise constant in x, so their
/// tangents are float0), `op` applies the primitive, and `out(x, results)` makes a float output
/// of x's shape from x and the results. The program out(x, op(in(x))) is differentiated eagerly
/// and with op and the whole program under jit (a call whose operands and results are int/bool).
struct Float0Entry {
  std::string prim;   ///< registry name of the primitive under test
  std::string label;  ///< distinguishes several entries of one primitive
  std::function<V(const Array&)> in;
  std::function<V(const V&)> op;
  std::function<Array(const Array&, const V&)> out;
  bool forward_over_forward = true;  ///< jvp of jvp (false for custom_vjp, as in JAX)
  bool reverse = true;               ///< grad, jvp of grad, hessian (false for while_loop, as in JAX)
};

// ---- helpers of the tables ----------------------------------------------------------------------

/// A piecewise-constant integer function of x, in [0, 7] (at the sweep's points x is at least
/// 0.1 from its jumps, so finite differences with step 1e-3 never cross one).
inline Array I(const Array& x) { return mj::astype(mj::floor(x * 2.0) + 3.0, mj::i32); }
/// r converted to x's dtype.
inline Array F(const Array& r, const Array& x) { return mj::astype(r, x.dtype()); }

/// The default output: float results enter through x * sum(r); an int/bool result r scales
/// sin(x) and, as the predicate of a select (r itself if bool of x's shape, else a bool made from
/// it), becomes a residual of the program's JVP — so under jvp of jvp or jvp of grad it is an
/// operand of the staged tangent call, the case test_float0.cc checks on jitted functions.
inline Array mix(const Array& x, const V& rs) {
  Array acc = mj::sin(x);
  for (auto& r : rs) {
    if (mj::is_floating(r.dtype())) {
      acc = acc + x * mj::sum(F(r, x));
      continue;
    }
    acc = acc * (1.0 + 0.125 * mj::sum(F(r, x)));
    Array p = r.dtype() == mj::bool_ ? r : mj::lax::eq(mj::lax::rem(r, mj::full_like(r, 2)), mj::full_like(r, 0));
    if (p.shape() != x.shape()) p = mj::sum(mj::astype(p, mj::i32)) > 0;
    acc = mj::where(p, acc, acc * 0.5);
  }
  return acc;
}
/// mix for random bits (u32 values up to 2^32): only their top 3 bits are used.
inline Array top_bits(const Array& x, const V& rs) {
  V small;
  for (auto& r : rs)
    small.push_back(mj::is_floating(r.dtype()) ? r : mj::lax::shift_right_logical(r, mj::full_like(r, 29)));
  return mix(x, small);
}

/// All entries (float0_sweep_table.cc).
const std::vector<Float0Entry>& entries();

/// Registered primitives that accept no integer or boolean value (shape rules throw TypeError
/// for them; checked), and primitives exempt from the sweep, with the reason.
const std::vector<std::string>& float_only();
const std::vector<std::pair<std::string, std::string>>& exempt();

}  // namespace float0_sweep
