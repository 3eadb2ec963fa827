// minijax Jacobians: the flat engines behind jacfwd, jacrev and hessian.
// Owns standard_basis and the reshaping of batched (co)tangents into out.shape + in.shape.
#include "autodiff/jacobian.h"

#include <numeric>

#include "autodiff/jvp.h"
#include "autodiff/transpose.h"
#include "autodiff/vmap.h"
#include "core/lax.h"

namespace minijax {
namespace {

void check_floating(const ShapedArray& a, const char* what, std::source_location loc) {
  if (!is_floating(a.dtype))
    throw TypeError(std::string(what) + ", but got " + dtype_name(a.dtype) + " (" + a.str() +
                        "). If you want to use Boolean- or integer-valued inputs, use vjp or grad "
                        "with allow_int.",
                    loc);
}

Shape concat_shapes(const Shape& a, const Shape& b) {
  Shape s = a;
  s.insert(s.end(), b.begin(), b.end());
  return s;
}

}  // namespace

Array standard_basis(const ShapedArray& a, std::source_location loc) {
  check_floating(a, "standard_basis requires a floating dtype", loc);
  const int64_t n = a.size();
  ShapedArray out = a;
  out.weak_type = false;
  out.shape.insert(out.shape.begin(), n);
  Array b = Array::allocate(out);
  dispatch_dtype(a.dtype, [&]<class T>() {
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, bfloat16>) {
      T* d = b.mutable_data<T>();
      for (int64_t i = 0; i < n; ++i) d[i * n + i] = T(1.0f);
    }
  });
  return b;
}

std::vector<Array> jacfwd_flat(const FlatFn& f, const Array& x, std::source_location loc) {
  check_floating(x.aval(),
                 "jacfwd requires real-valued inputs (input dtype that is a sub-dtype of "
                 "floating)",
                 loc);
  const Shape in_shape = x.shape();
  Array basis = standard_basis(x.aval(), loc);
  // vmap over the basis of jvp at x: output i is [n, out_i.shape...].
  FlatFn push = [&](const std::vector<Array>& t) {
    auto [po, to] = jvp_flat(f, {x}, {t.at(0)}, loc);
    for (size_t i = 0; i < to.size(); ++i) to[i] = instantiate_zero(to[i], po[i].aval());
    return to;
  };
  std::vector<Array> outs = vmap_flat(push, {basis}, {0}, {}, loc);
  std::vector<Array> jacs;
  for (auto& o : outs) {
    // [n, out...] -> [out..., n] -> out.shape + in.shape
    const int64_t r = o.ndim() - 1;
    Shape out_shape(o.shape().begin() + 1, o.shape().end());
    Array moved = o;
    if (r > 0) {
      std::vector<int64_t> perm(size_t(r) + 1);
      std::iota(perm.begin(), perm.end() - 1, 1);
      perm.back() = 0;
      moved = lax::transpose(o, perm, loc);
    }
    jacs.push_back(lax::reshape(moved, concat_shapes(out_shape, in_shape), loc));
  }
  return jacs;
}

std::vector<Array> jacrev_flat(const FlatFn& f, const Array& x, std::source_location loc) {
  check_floating(x.aval(),
                 "jacrev requires real-valued inputs (input dtype that is a sub-dtype of "
                 "floating)",
                 loc);
  const Shape in_shape = x.shape();
  VjpResult vr = vjp_flat(f, {x}, loc);
  const size_t nout = vr.primal_outs.size();
  std::vector<Array> jacs;
  for (size_t i = 0; i < nout; ++i) {
    const ShapedArray& oa = vr.primal_outs[i].aval();
    check_floating(oa,
                   "jacrev requires real-valued outputs (output dtype that is a sub-dtype of "
                   "floating)",
                   loc);
    Array basis = standard_basis(oa, loc);
    // Row j of the Jacobian is the pullback of the j-th basis cotangent: [m, in...].
    FlatFn pull = [&](const std::vector<Array>& c) {
      std::vector<Array> cts(nout);
      cts[i] = c.at(0);
      return vr.pullback(cts, loc);
    };
    Array rows = vmap_flat(pull, {basis}, {0}, {}, loc).at(0);
    jacs.push_back(lax::reshape(rows, concat_shapes(oa.shape, in_shape), loc));
  }
  return jacs;
}

}  // namespace minijax
