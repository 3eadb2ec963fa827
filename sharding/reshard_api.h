// minijax's public resharding API: mj::reshard_plan (the planner's steps for a source -> target
// pair, with the bytes each device sends and receives).
#pragma once
#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "sharding/partition_spec.h"
#include "sharding/plan_reshard.h"

namespace minijax {

/// JAX-style entry point to the resharding planner: the plan (steps with their collective kind,
/// axes, messages; per device the elements received and sent, messages and extra memory) for
/// moving an array of `aval` from `src` to `dst`. `plan.as_text()` prints one line per step with
/// bytes per device. The NamedSharding overload converts both with to_sharding(ns, rank of
/// aval). Throws what to_sharding and plan_reshard throw (ShardingError at `loc` naming the
/// shardings, the shape and the mesh).
ReshardPlan reshard_plan(const NamedSharding& src, const NamedSharding& dst, const ShapedArray& aval,
                         std::source_location loc = std::source_location::current());
ReshardPlan reshard_plan(const Sharding& src, const Sharding& dst, const ShapedArray& aval,
                         std::source_location loc = std::source_location::current());

}  // namespace minijax
