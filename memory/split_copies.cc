// minijax offload stage split_copies (memory/split_copies.h): device_puts between memory kinds as
// copy_start / copy_done pairs, in every body.
#include "memory/split_copies.h"

#include <variant>

#include "core/views/memory_ops.h"
#include "memory/offload_loops.h"

namespace minijax {

Jaxpr split_copies(const Jaxpr& j) {
  Jaxpr r = j;
  r.eqns.clear();
  for (const Eqn& e : j.eqns) {
    const bool between_kinds = DevicePutParams::is(e) && e.inputs.size() == 1 && std::holds_alternative<Var>(e.inputs[0]) &&
                               atom_aval(e.inputs[0]).memory_kind != e.outputs.at(0).aval().memory_kind;
    if (!between_kinds) {
      r.eqns.push_back(offload::with_bodies(e, split_copies));
      continue;
    }
    const Var& b = e.outputs[0];
    Var h(b.aval());
    r.eqns.push_back(offload::copy_eqn(CopyParams::start(b.aval().memory_kind),
                                       {e.inputs[0]}, h));
    r.eqns.push_back(offload::copy_done(h, {e.inputs[0]}, b));
  }
  return r;
}

}  // namespace minijax
