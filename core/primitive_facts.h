// minijax primitive facts: what every registered primitive must have, checked one primitive at a time.
// Owns missing_facts (the registry-wide test runs it on every primitive) and the layers' required facts.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/primitive.h"

namespace minijax::detail {

/// A fact a layer requires of every primitive: `has(p)` is true when p has it (its rule, or the
/// declared reason for the rule's absence); `missing` says what p lacks when it has not.
struct RequiredFact {
  std::string missing;
  std::function<bool(const Primitive&)> has;
};

/// Adds a fact that every primitive must have, from the Registrar of the layer that reads it (the
/// lowering's in jit/codegen/lower/strategy.cc, the sharding rule's in sharding/sharding_rule.cc):
/// core names no table of a later layer.
void require_fact(RequiredFact fact);

/// The required facts `p` lacks, each as "primitive '<name>': <what is missing>": core's first (a
/// shape rule, an eager implementation, a JVP, transpose and batching rule or the declared reason for
/// each absence, a cost class, a cost rule for CostClass::custom, a fusion class), then each layer's,
/// in registration order. Empty when p has every fact. The registry-wide check
/// (tests/conformance, Registry.EveryPrimitiveHasEachRuleOrDeclaresItsAbsence) runs it on every
/// registered primitive.
std::vector<std::string> missing_facts(const Primitive& p);

}  // namespace minijax::detail
