// minijax sharding rules: the primitives declared as having no factor rule, with the reason
// (primitives with sub-jaxprs, whose bodies the propagation pass will handle itself).
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
  t["custom_lin"] =
      "an autodiff-internal placeholder for a custom VJP's linear part; its sharding would come "
      "from the user's backward function, propagated by the pass itself (later work)";
});

}  // namespace
}  // namespace minijax
