// minijax `fusion` primitive (declared in core/fusion.h): a fused kernel as one equation.
// Owns its kind/name check and absences; shape rule, impl and DCE are register_call_primitive's.
#include "core/fusion.h"
#include "core/param_reads.h"

#include "core/pjit.h"

namespace minijax {
namespace {

const char* kInternal = "compiler-internal: fuse runs after autodiff and batching";

Registrar reg([] {
  // A plain call whose body has no constvars, with a kind ("loop" or "reduction") and a name.
  CallSpec spec;
  spec.body_name = "fused jaxpr";
  spec.closed_name = "fused jaxpr";
  spec.closed_hint = "a fusion's values are all operands";
  spec.check = [](const Params& params, size_t) {
    const std::string& kind = param_string(params, "kind");
    if (kind != "loop" && kind != "reduction")
      throw ValueError("fusion kind must be 'loop' or 'reduction', got '" + kind + "'");
    (void)param_string(params, "name");
  };
  Primitive& p = register_call_primitive("fusion", spec);
  p.no_jvp_reason = kInternal;
  p.no_transpose_reason = kInternal;
  p.no_batch_reason = kInternal;
});

}  // namespace

const Primitive& fusion_p() { return primitive("fusion"); }

namespace {

// Classes: a fusion's inner values never reach memory, so its body counts without bytes and the
// kernel's own operands and results are its bytes accessed.
Registrar reg_fusion_classes([] {
  auto& p = get_or_create_primitive("fusion");
  set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
  p.cost = [](const Eqn& e, bool count_bytes, const JaxprCost& cost) {
    CostEstimate c = cost(*param_jaxpr(e.params, "jaxpr")->jaxpr, false);
    c.bytes = operand_and_result_bytes(e, count_bytes).bytes;
    return c;
  };
});

}  // namespace

}  // namespace minijax
