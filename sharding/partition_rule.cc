// minijax partition rules: the table that partition_spmd asks how to bind an equation on local
// shards (entries registered with each primitive's sharding rule).
#include "sharding/partition_rule.h"

#include "core/primitive.h"

namespace minijax {

std::map<std::string, PartitionRule>& partition_rules() {
  static std::map<std::string, PartitionRule> t;
  return t;
}

const PartitionRule* partition_rule_of(const Eqn& e) {
  if (!e.primitive) return nullptr;
  auto it = partition_rules().find(e.primitive->name);
  return it == partition_rules().end() ? nullptr : &it->second;
}

}  // namespace minijax
