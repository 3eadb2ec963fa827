// minijax primitive facts (core/primitive_facts.h): core's own facts about a primitive and the
// table of the facts later layers require, checked on one primitive.
#include "core/primitive_facts.h"

#include <mutex>

namespace minijax::detail {

namespace {

std::vector<RequiredFact>& layer_facts() {
  static std::vector<RequiredFact> f;
  return f;
}
std::mutex& layer_facts_mu() {
  static std::mutex m;
  return m;
}

// The facts core/primitive.h's fields carry: set where the primitive is defined (core/primitives/,
// core/control_flow/) and by its autodiff rules (autodiff/rules/).
const std::vector<RequiredFact>& core_facts() {
  static const std::vector<RequiredFact> f = {
      {"no shape rule", [](const Primitive& p) { return bool(p.shape_rule); }},
      {"no eager implementation", [](const Primitive& p) { return bool(p.impl); }},
      {"no JVP rule and no declared reason (no_jvp_reason)",
       [](const Primitive& p) { return bool(p.jvp) || !p.no_jvp_reason.empty(); }},
      {"no transpose rule and no declared reason (no_transpose_reason, e.g. \"not linear\")",
       [](const Primitive& p) { return bool(p.transpose) || !p.no_transpose_reason.empty(); }},
      {"no batching rule and no declared reason (no_batch_reason)",
       [](const Primitive& p) { return bool(p.batch) || !p.no_batch_reason.empty(); }},
      {"no cost class (cost_class is unset)", [](const Primitive& p) { return p.cost_class != CostClass::unset; }},
      {"cost class custom without a cost rule",
       [](const Primitive& p) { return p.cost_class != CostClass::custom || bool(p.cost); }},
      {"no fusion class (fusion_class is unset)",
       [](const Primitive& p) { return p.fusion_class != FusionClass::unset; }},
  };
  return f;
}

}  // namespace

void require_fact(RequiredFact fact) {
  std::lock_guard<std::mutex> g(layer_facts_mu());
  layer_facts().push_back(std::move(fact));
}

std::vector<std::string> missing_facts(const Primitive& p) {
  std::vector<RequiredFact> facts = core_facts();
  {
    std::lock_guard<std::mutex> g(layer_facts_mu());
    facts.insert(facts.end(), layer_facts().begin(), layer_facts().end());
  }
  std::vector<std::string> missing;
  for (const RequiredFact& f : facts)
    if (!f.has(p)) missing.push_back("primitive '" + p.name + "': " + f.missing);
  return missing;
}

}  // namespace minijax::detail
