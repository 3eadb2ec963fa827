// minijax sharding rules: the primitives declared as having no factor rule, with the reason
// (primitives with sub-jaxprs, whose bodies the propagation pass handles itself; collectives).
#include "core/primitive.h"
#include "sharding/sharding_rule.h"

namespace minijax {
namespace {

Registrar reg([] {
  auto& t = no_sharding_rule_reasons();
  const std::string body =
      "its body jaxpr is propagated through by the sharding pass itself (later work), not by a "
      "factor rule";
  for (const char* n : {"scan", "cond", "while", "checkpoint", "pjit", "closed_call",
                        "custom_jvp_call", "custom_vjp_call"})
    t[n] = body;
  // Collectives (core/collectives.h) act on per-device values of an SPMD program, named by mesh
  // axis; they are what partitioning emits, not what the global-view propagation reads.
  for (const char* n : {"all_gather", "all_reduce", "reduce_scatter", "all_to_all",
                        "collective_permute", "ragged_all_to_all", "axis_index"})
    t[n] =
        "a per-device SPMD collective (emitted by partitioning or written in manual per-device "
        "code); global-view sharding propagation does not pass through it";
  t["custom_lin"] =
      "an autodiff-internal placeholder for a custom VJP's linear part; its sharding would come "
      "from the user's backward function, propagated by the pass itself (later work)";
});

}  // namespace
}  // namespace minijax
