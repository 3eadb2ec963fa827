// minijax sharding rules: the primitives declared as having no factor rule, with the reason
// (collectives, and custom_lin; the primitives with bodies are entered by propagation instead).
#include "core/primitive.h"
#include "sharding/sharding_rule.h"

namespace minijax {
namespace {

Registrar reg([] {
  auto& t = no_sharding_rule_reasons();
  // scan, cond, while, checkpoint, pjit, closed_call, custom_jvp_call and custom_vjp_call are
  // not here: propagation enters their bodies (propagation_enters_bodies, propagate_shardings.h).
  // Collectives (core/collectives.h) act on per-device values of an SPMD program, named by mesh
  // axis; they are what partitioning emits, not what the global-view propagation reads.
  for (const char* n : {"all_gather", "all_reduce", "reduce_scatter", "all_to_all",
                        "collective_permute", "ragged_all_to_all", "axis_index"})
    t[n] =
        "a per-device SPMD collective (emitted by partitioning or written in manual per-device "
        "code); global-view sharding propagation does not pass through it";
  t["fusion"] =
      "a compiler-internal kernel that jit/passes/fuse makes after partitioning (the pass pipeline runs "
      "propagate_shardings and partition_spmd first), so propagation never meets it";
  for (const char* n : {"copy_start", "copy_done", "copy_slice_start", "copy_update_start", "allocate_buffer"})
    t[n] =
        "a compiler-internal copy (or loop buffer) that the offload stages (memory/) make after "
        "fusion (after partitioning), so propagation never meets it";
  t["custom_lin"] =
      "an autodiff-internal placeholder for a custom VJP's linear part that exists only while "
      "linearize runs; finished programs never hold it, so propagation never meets it";
});

}  // namespace
}  // namespace minijax
