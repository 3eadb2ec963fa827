// minijax linearize: JVP with concrete primals, tangents staged into a linear jaxpr.
// Owns linearize_flat (the tangent trace sits below the JVP trace, so tangent ops are staged).
#include "autodiff/linearize.h"

#include "autodiff/jvp.h"
#include "core/config.h"
#include "core/lax.h"
#include "core/lax_params.h"
#include "core/views/array_ops.h"

namespace minijax {

LinearizeResult linearize_flat(const FlatFn& f, const std::vector<Array>& primals,
                               std::source_location loc) {
  for (size_t i = 0; i < primals.size(); ++i)
    if (!primals[i].defined())
      throw ValueError("linearize/vjp: primal argument leaf " + std::to_string(i) +
                           " is an empty (default-constructed) Array",
                       loc);
  // The tangent trace must sit below the JVP trace and must not be dynamic: operations on
  // primals alone run on the primals' own trace (eagerly, or staged by an outer jit).
  TraceScope<JaxprTrace> tscope(/*dynamic=*/false);
  std::vector<Array> tangent_ins;
  for (auto& p : primals) tangent_ins.push_back(tscope->new_arg(tangent_aval(p.aval())));
  LinearizeResult res;
  std::vector<Array> touts;
  {
    TraceScope<JVPTrace> jscope(/*dynamic=*/false);
    std::vector<Array> ins;
    for (size_t i = 0; i < primals.size(); ++i) {
      Array t = is_floating(primals[i].dtype()) ? tangent_ins[i] : Array();
      ins.push_back(Array(std::make_shared<JVPTracer>(jscope.get(), primals[i], t)));
    }
    std::vector<Array> outs = f(ins);
    for (auto& o : outs) {
      auto [p, t] = jvp_unpack(*jscope, o);
      res.primal_outs.push_back(p);
      touts.push_back(t);
    }
  }
  // Zero tangents of outputs are staged as broadcasts of a 0 literal inside the linear jaxpr.
  const Primitive& bcast = primitive("broadcast_in_dim");
  for (size_t i = 0; i < touts.size(); ++i) {
    bool zero = !touts[i].defined();
    if (!zero) {
      // A tangent that does not depend on the inputs' tangents (a constant) is still linear in
      // them only if it is zero; rules never produce such values, so it is staged as is.
      res.out_zero.push_back(false);
      continue;
    }
    res.out_zero.push_back(true);
    ShapedArray ta = tangent_aval(res.primal_outs[i].aval());
    // float0 (the tangent of an int/bool output) is staged the same way, from its one value, as
    // JAX's zeros_like_aval does: never a constant of the linear jaxpr (so never a residual).
    Array zero_scalar = ta.dtype == DType::float0 ? Array::allocate(ShapedArray{{}, DType::float0})
                                                  : lax::scalar(0.0, ta.dtype);
    if (ta.memory_kind != MemoryKind::device) zero_scalar = lax::device_put(zero_scalar, ta.memory_kind);
    const Params ps = BroadcastInDimParams{ta.shape, {}}.to_params();
    touts[i] = tscope->add_eqn(bcast, {tscope->lift(zero_scalar)}, ps, {ta})[0];
  }
  res.linear = tscope->to_jaxpr(tangent_ins, touts, loc);
  return res;
}

}  // namespace minijax
