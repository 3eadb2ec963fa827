// minijax autodiff and batching rules of the elementwise family, broadcast_in_dim and
// convert_element_type: JVP (as jax/_src/lax/lax.py), transpose of the linear ones, vmap.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>

#include "autodiff/batching_util.h"
#include "core/lax.h"
#include "core/lax_params.h"
#include "core/primitive.h"
#include "core/trace.h"
#include "core/views/array_ops.h"

namespace minijax {
namespace {

using Vec = std::vector<Array>;
using JvpOut = std::pair<Vec, Vec>;
using BatchOut = std::pair<Vec, std::vector<int64_t>>;

// ---- small helpers ----------------------------------------------------------------------------

/// A rank-0 constant of like's dtype (strong) and memory kind: JAX's _const(like, v).
Array cst(const Array& like, double v) {
  ShapedArray a{{}, like.dtype(), false, like.memory_kind()};
  Array z = lax::zeros_like_aval(a);  // concrete rank-0
  if (v == 0.0) return z;
  Array out = Array::allocate(a);
  dispatch_dtype(a.dtype, [&]<class T>() {
    if constexpr (std::is_same_v<T, bfloat16>) out.mutable_data<T>()[0] = bfloat16(float(v));
    else out.mutable_data<T>()[0] = static_cast<T>(v);
  });
  return out;
}

/// v broadcast to like's shape (staged under tracing): JAX's full_like(like, v).
Array full_like(const Array& like, double v) {
  Array c = cst(like, v);
  if (like.ndim() == 0) return c;
  return lax::broadcast_in_dim(c, like.shape(), {});
}

/// A tangent that is present and not float0 (an integer operand's tangent counts as zero).
bool nonzero(const Array& t) { return t.defined() && is_floating(t.dtype()); }

/// t (rank 0 or of `shape`) broadcast to `shape`.
Array bcast_to(const Array& t, const Shape& shape) {
  if (t.shape() == shape) return t;
  return lax::broadcast_in_dim(t, shape, {});
}

/// A cotangent of the output shape reduced to the shape of an operand of aval `a` (a rank-0
/// operand of a binary op was broadcast by the scalar rule: its cotangent is the sum).
Array unbroadcast(const Array& ct, const ShapedArray& a) {
  if (!ct.defined() || ct.shape() == a.shape) return ct;
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < ct.ndim(); ++i) axes.push_back(i);
  return lax::reduce_sum(ct, axes);
}

/// Sum of two tangents of one aval, either possibly zero (empty).
Array add_tangents(const Array& a, const Array& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return lax::add_any(a, b);
}

/// select(pred, on_true, on_false) in JAX's argument order.
Array select(const Array& pred, const Array& on_true, const Array& on_false) {
  return lax::select_n(pred, {on_false, on_true});
}

Array square(const Array& x) { return lax::integer_pow(x, 2); }

// ---- JVP rule builders --------------------------------------------------------------------------

/// Unary rule: f(x, ans, t, params) -> output tangent, for a nonzero float tangent t.
using UnaryTangent = std::function<Array(const Array& x, const Array& ans, const Array& t, const Params&)>;

JvpRule unary_jvp(const std::string& name, UnaryTangent f) {
  return [name, f](const Vec& primals, const Vec& tangents, const Params& params) -> JvpOut {
    Array ans = minijax::bind1(primitive(name), primals, params);
    if (!nonzero(tangents[0]) || !is_floating(ans.dtype())) return {{ans}, {Array()}};
    return {{ans}, {f(primals[0], ans, tangents[0], params)}};
  };
}

/// Rule of a primitive whose derivative is zero everywhere (sign, floor, comparisons, ...).
JvpRule zero_jvp(const std::string& name) {
  return [name](const Vec& primals, const Vec&, const Params& params) -> JvpOut {
    return {minijax::bind(primitive(name), primals, params), {Array()}};
  };
}

/// Binary rule from the two partial products: fx(tx, x, y, ans) and fy(ty, x, y, ans), each
/// returning a tangent of the output shape (or rank 0, then broadcast); summed with add_any.
using BinaryTangent =
    std::function<Array(const Array& t, const Array& x, const Array& y, const Array& ans)>;

JvpRule binary_jvp(const std::string& name, BinaryTangent fx, BinaryTangent fy) {
  return [name, fx, fy](const Vec& primals, const Vec& tangents, const Params& params) -> JvpOut {
    const Array &x = primals[0], &y = primals[1];
    Array ans = minijax::bind1(primitive(name), primals, params);
    if (!is_floating(ans.dtype())) return {{ans}, {Array()}};
    Array tx, ty;
    if (nonzero(tangents[0])) tx = bcast_to(fx(tangents[0], x, y, ans), ans.shape());
    if (nonzero(tangents[1])) ty = bcast_to(fy(tangents[1], x, y, ans), ans.shape());
    return {{ans}, {add_tangents(tx, ty)}};
  };
}

/// JAX's _balanced_eq(x, z, y): 1 where x == z, halved where also y == z (ties split evenly).
Array balanced_eq(const Array& x, const Array& z, const Array& y) {
  return lax::div(select(lax::eq(x, z), full_like(z, 1), full_like(z, 0)),
                  select(lax::eq(y, z), full_like(z, 2), full_like(z, 1)));
}

// ---- batching -----------------------------------------------------------------------------------

/// Batching of elementwise primitives (JAX's broadcast_batcher). `scalar_ok[i]` says operand i may
/// stay rank 0 when unbatched (the primitive broadcasts it). Fast path: every batched operand has
/// the same batch dim and shape and every unbatched one is a rank-0 scalar -> bind as is.
/// Otherwise batch dims move to the front and operands are broadcast to [size, element shape].
BatchRule broadcast_batcher(const std::string& name, std::vector<bool> scalar_ok) {
  return [name, scalar_ok](const Vec& args, const std::vector<int64_t>& dims,
                           const Params& params) -> BatchOut {
    const Primitive& p = primitive(name);
    auto ok = [&](size_t i) { return i < scalar_ok.size() ? bool(scalar_ok[i]) : bool(scalar_ok.back()); };
    const int64_t size = batch_axis_size(args, dims);
    int64_t d0 = kNotMapped;
    const Shape* s0 = nullptr;
    bool aligned = true;
    for (size_t i = 0; i < args.size(); ++i) {
      if (dims[i] == kNotMapped) {
        if (!(ok(i) && args[i].ndim() == 0)) aligned = false;
        continue;
      }
      if (!s0) {
        d0 = dims[i];
        s0 = &args[i].shape();
      } else if (dims[i] != d0 || args[i].shape() != *s0) {
        aligned = false;
      }
    }
    if (aligned) {
      auto outs = minijax::bind(p, args, params);
      return {outs, std::vector<int64_t>(outs.size(), d0)};
    }
    Shape elem;
    for (size_t i = 0; i < args.size(); ++i) {
      int64_t r = args[i].ndim() - (dims[i] == kNotMapped ? 0 : 1);
      if (r > int64_t(elem.size())) {
        elem = args[i].shape();
        if (dims[i] != kNotMapped) elem.erase(elem.begin() + dims[i]);
      }
    }
    Shape full = elem;
    full.insert(full.begin(), size);
    Vec moved;
    for (size_t i = 0; i < args.size(); ++i) {
      if (dims[i] == kNotMapped && ok(i) && args[i].ndim() == 0) {
        moved.push_back(args[i]);
        continue;
      }
      Array x = materialize_batch(args[i], dims[i], size, 0);
      if (x.shape() != full) {
        if (x.ndim() != 1)
          throw ValueError("batching " + name + ": operand " + std::to_string(i) + " of shape " +
                           shape_str(x.shape()) + " cannot be broadcast to " + shape_str(full));
        x = lax::broadcast_in_dim(x, full, {0});
      }
      moved.push_back(x);
    }
    auto outs = minijax::bind(p, moved, params);
    return {outs, std::vector<int64_t>(outs.size(), 0)};
  };
}

/// Batching of a unary elementwise primitive: applied as is; the batch dim stays where it is.
BatchRule unary_batcher(const std::string& name) {
  return [name](const Vec& args, const std::vector<int64_t>& dims, const Params& params) -> BatchOut {
    return {{minijax::bind1(primitive(name), args, params)}, {dims[0]}};
  };
}

// ---- registration -------------------------------------------------------------------------------

void def_unary_rules(const std::string& name, UnaryTangent f) {
  auto& p = get_or_create_primitive(name);
  p.jvp = unary_jvp(name, std::move(f));
  p.no_transpose_reason = "not linear";
  p.batch = unary_batcher(name);
}

void def_zero_rules(const std::string& name, size_t nargs) {
  auto& p = get_or_create_primitive(name);
  p.jvp = zero_jvp(name);
  p.no_transpose_reason = "not linear";
  p.batch = nargs == 1 ? unary_batcher(name) : broadcast_batcher(name, {true});
}

Registrar reg_unary_rules([] {
  def_unary_rules("sin", [](auto& x, auto&, auto& t, auto&) { return lax::mul(t, lax::cos(x)); });
  def_unary_rules("cos", [](auto& x, auto&, auto& t, auto&) { return lax::neg(lax::mul(t, lax::sin(x))); });
  def_unary_rules("tan", [](auto& x, auto& ans, auto& t, auto&) {
    return lax::mul(t, lax::add(cst(x, 1), square(ans)));
  });
  def_unary_rules("exp", [](auto&, auto& ans, auto& t, auto&) { return lax::mul(t, ans); });
  def_unary_rules("log", [](auto& x, auto&, auto& t, auto&) { return lax::div(t, x); });
  def_unary_rules("log1p", [](auto& x, auto&, auto& t, auto&) { return lax::div(t, lax::add(x, cst(x, 1))); });
  def_unary_rules("expm1", [](auto& x, auto& ans, auto& t, auto&) {
    return lax::mul(t, lax::add(ans, cst(x, 1)));
  });
  // tanh' = (1 + ans)(1 - ans), written as JAX does.
  def_unary_rules("tanh", [](auto& x, auto& ans, auto& t, auto&) {
    return lax::mul(lax::add(t, lax::mul(t, ans)), lax::sub(cst(x, 1), ans));
  });
  def_unary_rules("logistic", [](auto&, auto& ans, auto& t, auto&) {
    return lax::mul(t, lax::mul(ans, lax::sub(cst(ans, 1), ans)));
  });
  def_unary_rules("sqrt", [](auto& x, auto& ans, auto& t, auto&) {
    return lax::mul(t, lax::div(cst(x, 0.5), ans));
  });
  def_unary_rules("rsqrt", [](auto& x, auto& ans, auto& t, auto&) {
    return lax::mul(t, lax::mul(cst(x, -0.5), lax::div(ans, x)));
  });
  // erf' = 2/sqrt(pi) exp(-x^2).
  def_unary_rules("erf", [](auto& x, auto&, auto& t, auto&) {
    return lax::mul(cst(x, 2.0 / std::sqrt(std::numbers::pi)), lax::mul(t, lax::exp(lax::neg(square(x)))));
  });
  // The functions of core/primitives/elementwise_special.cc, each as jax/_src/lax/lax.py writes it
  // (erfc: jax/_src/lax/special.py).
  def_unary_rules("sinh", [](auto& x, auto&, auto& t, auto&) { return lax::mul(t, lax::cosh(x)); });
  def_unary_rules("cosh", [](auto& x, auto&, auto& t, auto&) { return lax::mul(t, lax::sinh(x)); });
  def_unary_rules("asin", [](auto& x, auto&, auto& t, auto&) {
    return lax::mul(t, lax::rsqrt(lax::sub(cst(x, 1), square(x))));
  });
  def_unary_rules("acos", [](auto& x, auto&, auto& t, auto&) {
    return lax::mul(t, lax::neg(lax::rsqrt(lax::sub(cst(x, 1), square(x)))));
  });
  def_unary_rules("atan",
                  [](auto& x, auto&, auto& t, auto&) { return lax::div(t, lax::add(cst(x, 1), square(x))); });
  def_unary_rules("asinh", [](auto& x, auto&, auto& t, auto&) {
    return lax::mul(t, lax::rsqrt(lax::add(square(x), cst(x, 1))));
  });
  def_unary_rules("acosh", [](auto& x, auto&, auto& t, auto&) {  // JAX's rsqrt((x - 1)(x + 1))
    return lax::mul(t, lax::rsqrt(lax::mul(lax::sub(x, cst(x, 1)), lax::add(x, cst(x, 1)))));
  });
  def_unary_rules("atanh", [](auto& x, auto&, auto& t, auto&) {
    return lax::mul(lax::integer_pow(lax::add(cst(x, 1), x), -1), lax::div(t, lax::sub(cst(x, 1), x)));
  });
  def_unary_rules("cbrt", [](auto& x, auto& ans, auto& t, auto&) {
    return lax::mul(t, lax::mul(cst(x, 1.0 / 3.0), lax::integer_pow(ans, -2)));
  });
  def_unary_rules("erfc", [](auto& x, auto&, auto& t, auto&) {
    return lax::mul(cst(x, -2.0 / std::sqrt(std::numbers::pi)), lax::mul(t, lax::exp(lax::neg(square(x)))));
  });
  // |x|' = 1 for x >= 0, -1 otherwise (JAX's select on x >= 0).
  def_unary_rules("abs", [](auto& x, auto&, auto& t, auto&) {
    return select(lax::ge(x, cst(x, 0)), t, lax::neg(t));
  });
  // d/dx x^y = y x^(y-1); zero for y == 0.
  def_unary_rules("integer_pow", [](auto& x, auto&, auto& t, auto& params) -> Array {
    int64_t y = IntegerPowParams::from(params).y;
    if (y == 0) return Array();
    return lax::mul(t, lax::mul(cst(x, double(y)), lax::integer_pow(x, y - 1)));
  });
  for (const char* n : {"sign", "floor", "ceil", "round", "stop_gradient", "not"}) def_zero_rules(n, 1);
  for (const char* n : {"eq", "ne", "lt", "le", "gt", "ge", "and", "or"}) def_zero_rules(n, 2);
  // Integer and bool results: a zero (float0) tangent, as JAX's defjvp_zero(is_finite_p) and the
  // integer-only population_count and clz.
  for (const char* n : {"is_finite", "population_count", "clz"}) def_zero_rules(n, 1);
  // nextafter: JAX defines no JVP, so a nonzero float tangent reaching it is an error
  // (NotDifferentiableError naming it, from the JVP trace); zero tangents pass.
  {
    auto& p = get_or_create_primitive("nextafter");
    p.no_jvp_reason = "JAX defines no derivative of nextafter (jax/_src/lax/lax.py nextafter_p)";
    p.no_transpose_reason = "not linear";
    p.batch = broadcast_batcher("nextafter", {true});
  }

  // neg: linear.
  {
    auto& p = get_or_create_primitive("neg");
    p.jvp = unary_jvp("neg", [](auto&, auto&, auto& t, auto&) { return lax::neg(t); });
    p.transpose = [](const Vec& cts, const Vec&, const std::vector<ShapedArray>&, const Params&) -> Vec {
      return {cts[0].defined() ? lax::neg(cts[0]) : Array()};
    };
    p.batch = unary_batcher("neg");
  }

  // convert_element_type: linear between float dtypes; to or from int/bool the tangent is zero.
  {
    auto& p = get_or_create_primitive("convert_element_type");
    p.jvp = [](const Vec& primals, const Vec& tangents, const Params& params) -> JvpOut {
      Array ans = minijax::bind1(primitive("convert_element_type"), primals, params);
      if (!nonzero(tangents[0]) || !is_floating(ans.dtype())) return {{ans}, {Array()}};
      return {{ans}, {lax::convert_element_type(tangents[0], ans.dtype(), ans.weak_type())}};
    };
    p.transpose = [](const Vec& cts, const Vec&, const std::vector<ShapedArray>& avals, const Params&) -> Vec {
      if (!nonzero(cts[0]) || !is_floating(avals[0].dtype)) return {Array()};
      return {lax::convert_element_type(cts[0], avals[0].dtype, avals[0].weak_type)};
    };
    p.batch = unary_batcher("convert_element_type");
  }
});

// add / add_any / sub: linear in both operands.
void register_add_sub_rules() {
  struct AddLike {
    const char* name;
    bool is_sub, is_any;
  };
  for (const AddLike& a : {AddLike{"add", false, false}, AddLike{"add_any", false, true}, AddLike{"sub", true, false}}) {
    const char* n = a.name;
    const bool is_sub = a.is_sub, is_any = a.is_any;
    auto& p = get_or_create_primitive(n);
    if (is_sub) {
      p.jvp = [](const Vec& primals, const Vec& tangents, const Params&) -> JvpOut {
        Array ans = lax::sub(primals[0], primals[1]);
        if (!is_floating(ans.dtype())) return {{ans}, {Array()}};
        Array tx = nonzero(tangents[0]) ? bcast_to(tangents[0], ans.shape()) : Array();
        Array ty = nonzero(tangents[1]) ? bcast_to(tangents[1], ans.shape()) : Array();
        if (tx.defined() && ty.defined()) return {{ans}, {lax::sub(tx, ty)}};
        return {{ans}, {tx.defined() ? tx : lax::neg(ty)}};
      };
    } else {
      std::string name = n;
      p.jvp = [name, is_any](const Vec& primals, const Vec& tangents, const Params&) -> JvpOut {
        Array ans = minijax::bind1(primitive(name), primals, {});
        if (!is_floating(ans.dtype())) return {{ans}, {Array()}};
        Array tx = nonzero(tangents[0]) ? bcast_to(tangents[0], ans.shape()) : Array();
        Array ty = nonzero(tangents[1]) ? bcast_to(tangents[1], ans.shape()) : Array();
        if (tx.defined() && ty.defined())
          return {{ans}, {is_any ? lax::add_any(tx, ty) : lax::add(tx, ty)}};
        return {{ans}, {tx.defined() ? tx : ty}};
      };
    }
    p.transpose = [is_sub](const Vec& cts, const Vec& args, const std::vector<ShapedArray>& avals,
                           const Params&) -> Vec {
      Vec r(2);
      if (!cts[0].defined()) return r;
      if (!args[0].defined()) r[0] = unbroadcast(cts[0], avals[0]);
      if (!args[1].defined()) r[1] = unbroadcast(is_sub ? lax::neg(cts[0]) : cts[0], avals[1]);
      return r;
    };
    p.batch = broadcast_batcher(n, {!is_any});
  }
}

void register_mul_div_rules() {
  // mul: bilinear; transposable in the one linear operand.
  {
    auto& p = get_or_create_primitive("mul");
    p.jvp = binary_jvp(
        "mul", [](auto& t, auto&, auto& y, auto&) { return lax::mul(t, y); },
        [](auto& t, auto& x, auto&, auto&) { return lax::mul(x, t); });
    p.transpose = [](const Vec& cts, const Vec& args, const std::vector<ShapedArray>& avals,
                     const Params&) -> Vec {
      if (!args[0].defined() && !args[1].defined())
        throw NotDifferentiableError("mul transpose: both operands are linear (the product is not linear)");
      Vec r(2);
      if (!cts[0].defined()) return r;
      if (!args[0].defined()) r[0] = unbroadcast(lax::mul(cts[0], args[1]), avals[0]);
      if (!args[1].defined()) r[1] = unbroadcast(lax::mul(args[0], cts[0]), avals[1]);
      return r;
    };
    p.batch = broadcast_batcher("mul", {true});
  }

  // div: d/dx = 1/y, d/dy = -x/y^2; linear (transposable) in the numerator.
  {
    auto& p = get_or_create_primitive("div");
    p.jvp = binary_jvp(
        "div", [](auto& t, auto&, auto& y, auto&) { return lax::div(t, y); },
        [](auto& t, auto& x, auto& y, auto&) {
          return lax::mul(lax::mul(lax::neg(t), x), lax::integer_pow(y, -2));
        });
    p.transpose = [](const Vec& cts, const Vec& args, const std::vector<ShapedArray>& avals,
                     const Params&) -> Vec {
      if (!args[1].defined())
        throw NotDifferentiableError("div transpose: the denominator is linear (div is linear only in the numerator)");
      Vec r(2);
      if (cts[0].defined() && !args[0].defined()) r[0] = unbroadcast(lax::div(cts[0], args[1]), avals[0]);
      return r;
    };
    p.batch = broadcast_batcher("div", {true});
  }
}

void register_nonlinear_binary_rules() {
  auto ident = [](const Array& t, const Array&, const Array&, const Array&) { return t; };

  // rem(x, y) = x - y trunc(x/y): d/dx = 1, d/dy = -trunc(x/y).
  {
    auto& p = get_or_create_primitive("rem");
    p.jvp = binary_jvp("rem", ident, [](auto& t, auto& x, auto& y, auto&) {
      Array q = lax::div(x, y);
      return lax::mul(lax::neg(t), lax::mul(lax::sign(q), lax::floor(lax::abs(q))));
    });
    p.no_transpose_reason = "not linear";
    p.batch = broadcast_batcher("rem", {true});
  }

  // pow(x, y): d/dx = y x^(y-1), d/dy = log(x) x^y (with log(0) replaced by log(1), as JAX).
  {
    auto& p = get_or_create_primitive("pow");
    p.jvp = binary_jvp(
        "pow",
        [](auto& t, auto& x, auto& y, auto&) {
          return lax::mul(t, lax::mul(y, lax::pow(x, lax::sub(y, cst(y, 1)))));
        },
        [](auto& t, auto& x, auto&, auto& ans) {
          Array safe_x = select(lax::eq(x, cst(x, 0)), full_like(x, 1), x);
          return lax::mul(t, lax::mul(lax::log(safe_x), ans));
        });
    p.no_transpose_reason = "not linear";
    p.batch = broadcast_batcher("pow", {true});
  }

  // max/min: the tangent of the selected operand; ties split 0.5/0.5 (JAX's _balanced_eq).
  for (const char* n : {"max", "min"}) {
    auto& p = get_or_create_primitive(n);
    p.jvp = binary_jvp(
        n, [](auto& t, auto& x, auto& y, auto& ans) { return lax::mul(t, balanced_eq(x, ans, y)); },
        [](auto& t, auto& x, auto& y, auto& ans) { return lax::mul(t, balanced_eq(y, ans, x)); });
    p.no_transpose_reason = "not linear";
    p.batch = broadcast_batcher(n, {true});
  }

  // atan2(x, y): d/dx = y/(x^2+y^2), d/dy = -x/(x^2+y^2).
  {
    auto& p = get_or_create_primitive("atan2");
    p.jvp = binary_jvp(
        "atan2",
        [](auto& t, auto& x, auto& y, auto&) { return lax::mul(t, lax::div(y, lax::add(square(x), square(y)))); },
        [](auto& t, auto& x, auto& y, auto&) {
          return lax::div(lax::mul(t, lax::neg(x)), lax::add(square(x), square(y)));
        });
    p.no_transpose_reason = "not linear";
    p.batch = broadcast_batcher("atan2", {true});
  }
}

Registrar reg_binary_rules([] {
  register_add_sub_rules();
  register_mul_div_rules();
  register_nonlinear_binary_rules();
});

Registrar reg_select_clamp_broadcast_rules([] {
  // select_n(which, *cases): selects the cases' tangents; zeros instantiated only for the cases
  // whose tangent is zero when another case's is not. Linear in the cases.
  {
    auto& p = get_or_create_primitive("select_n");
    p.jvp = [](const Vec& primals, const Vec& tangents, const Params& params) -> JvpOut {
      Array ans = minijax::bind1(primitive("select_n"), primals, params);
      if (!is_floating(ans.dtype())) return {{ans}, {Array()}};
      bool any = false;
      for (size_t i = 1; i < tangents.size(); ++i) any |= nonzero(tangents[i]);
      if (!any) return {{ans}, {Array()}};
      Vec ts;
      for (size_t i = 1; i < tangents.size(); ++i)
        ts.push_back(nonzero(tangents[i]) ? tangents[i]
                                          : lax::zeros_like_aval(tangent_aval(primals[i].aval())));
      return {{ans}, {lax::select_n(primals[0], ts)}};
    };
    p.transpose = [](const Vec& cts, const Vec& args, const std::vector<ShapedArray>&,
                     const Params&) -> Vec {
      if (!args[0].defined())
        throw NotDifferentiableError("select_n transpose: the predicate cannot be linear");
      Vec r(args.size());
      if (!cts[0].defined()) return r;
      Array zeros = lax::zeros_like_aval(cts[0].aval());
      const size_t n = args.size() - 1;
      for (size_t i = 0; i < n; ++i) {
        if (args[i + 1].defined()) continue;
        Vec cases(n, zeros);
        cases[i] = cts[0];
        r[i + 1] = lax::select_n(args[0], cases);
      }
      return r;
    };
    p.batch = broadcast_batcher("select_n", {true, false});
  }

  // clamp(lo, x, hi): the tangent of whichever bound or operand is selected (JAX's rule).
  {
    auto& p = get_or_create_primitive("clamp");
    p.jvp = [](const Vec& primals, const Vec& tangents, const Params& params) -> JvpOut {
      const Array &lo = primals[0], &x = primals[1], &hi = primals[2];
      Array ans = minijax::bind1(primitive("clamp"), primals, params);
      if (!is_floating(ans.dtype())) return {{ans}, {Array()}};
      Array t;
      if (nonzero(tangents[0]))
        t = add_tangents(t, select(lax::and_(lax::gt(lo, x), lax::lt(lo, hi)),
                                   bcast_to(tangents[0], x.shape()), full_like(x, 0)));
      if (nonzero(tangents[1]))
        t = add_tangents(t, select(lax::and_(lax::gt(x, lo), lax::lt(x, hi)), tangents[1], full_like(x, 0)));
      if (nonzero(tangents[2]))
        t = add_tangents(t, select(lax::lt(hi, x), bcast_to(tangents[2], x.shape()), full_like(x, 0)));
      return {{ans}, {t}};
    };
    p.no_transpose_reason = "not linear";
    p.batch = broadcast_batcher("clamp", {true, false, true});
  }

  // broadcast_in_dim: linear; transpose sums over the broadcast dims (JAX's rule).
  {
    auto& p = get_or_create_primitive("broadcast_in_dim");
    p.jvp = [](const Vec& primals, const Vec& tangents, const Params& params) -> JvpOut {
      Array ans = minijax::bind1(primitive("broadcast_in_dim"), primals, params);
      if (!nonzero(tangents[0])) return {{ans}, {Array()}};
      return {{ans}, {minijax::bind1(primitive("broadcast_in_dim"), {tangents[0]}, params)}};
    };
    p.transpose = [](const Vec& cts, const Vec&, const std::vector<ShapedArray>& avals,
                     const Params& params) -> Vec {
      if (!cts[0].defined()) return {Array()};
      const Shape& in_shape = avals[0].shape;
      const BroadcastInDimParams b = BroadcastInDimParams::from(params);
      const auto& bd = b.broadcast_dimensions;
      const Shape& shape = b.shape;
      std::vector<int64_t> unit_dims, kept;
      for (size_t i = 0; i < in_shape.size(); ++i) {
        if (in_shape[i] == 1) unit_dims.push_back(int64_t(i));
        else kept.push_back(bd[i]);
      }
      std::vector<int64_t> axes;
      for (int64_t d = 0; d < int64_t(shape.size()); ++d)
        if (std::find(kept.begin(), kept.end(), d) == kept.end()) axes.push_back(d);
      Array r = cts[0];
      if (!axes.empty()) r = lax::reduce_sum(r, axes);
      if (!unit_dims.empty()) r = lax::expand_dims(r, unit_dims);
      return {r};
    };
    p.batch = [](const Vec& args, const std::vector<int64_t>& dims, const Params& params) -> BatchOut {
      Array x = move_batch_dim(args[0], dims[0], 0);
      const BroadcastInDimParams b = BroadcastInDimParams::from(params);
      Shape shape = b.shape;
      shape.insert(shape.begin(), x.shape()[0]);
      std::vector<int64_t> bd{0};
      for (int64_t d : b.broadcast_dimensions) bd.push_back(d + 1);
      return {{lax::broadcast_in_dim(x, shape, bd)}, {0}};
    };
  }
});

}  // namespace
}  // namespace minijax
