// minijax resharding planner: how reduced data moves from one sharding to another on one mesh.
// Owns ReshardPlan (steps, per-device messages and counts, as_text) and its eager executor.
#pragma once
#include <cstddef>
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/aval.h"
#include "sharding/boxes.h"
#include "sharding/sharding.h"

namespace minijax {

/// The collective a reshard step is. local_slice: no communication (every device already holds
/// its target box). The structured kinds are over named mesh axes (ReshardStep::axes);
/// ragged_all_to_all: each device sends each other device exactly the box it needs.
enum class ReshardKind : uint8_t {
  local_slice,
  all_gather,
  all_to_all,
  collective_permute,
  ragged_all_to_all
};

/// "local_slice", "all_gather", "all_to_all", "collective_permute", "ragged_all_to_all".
const char* reshard_kind_name(ReshardKind k);

/// One sender -> receiver transfer: the global index box the receiver gets from the sender.
/// sender and receiver are mesh positions (indices into mesh->device_ids).
struct ReshardMessage {
  size_t sender = 0;
  size_t receiver = 0;
  Box box;
  int64_t elements = 0;  ///< box.volume()
};

/// One collective step. For all_gather, `axes` are the gathered axes; for all_to_all the moved
/// axes, with `split_dim` the array dim that gains them and `concat_dim` the dim that loses them
/// (JAX's all_to_all split_axis / concat_axis); both -1 otherwise.
struct ReshardStep {
  ReshardKind kind = ReshardKind::ragged_all_to_all;
  std::vector<AxisRef> axes;
  int64_t split_dim = -1;
  int64_t concat_dim = -1;
  std::vector<ReshardMessage> messages;
};

/// A reshard of reduced data: the source and target boxes of every mesh position, the steps,
/// and per mesh position (indices into mesh->device_ids) the elements received and sent, the
/// messages received and sent, the elements copied locally (A(d) ∩ B(d)), the receive lower
/// bound |B(d)| − |A(d) ∩ B(d)|, and the extra memory (send staging, in elements).
///
/// Send staging (the model the executor measures): each device packs its outgoing messages, in
/// plan order, into batches of at most `staging_capacity` elements (the padded target shard,
/// max_d |B(d)|; every message fits since it is part of its receiver's target shard); a batch
/// is packed, delivered into the receivers' target shards and freed before the next one is
/// packed. extra_memory[d] is the largest batch of device d, so it never exceeds one target
/// shard. Receivers unpack directly into their target shard (which is the result, not extra).
struct ReshardPlan {
  Sharding src, dst;
  ShapedArray aval;
  std::vector<Box> src_boxes, dst_boxes;
  std::vector<ReshardStep> steps;
  std::vector<int64_t> received, sent, messages_received, messages_sent, local_copy,
      receive_bound, extra_memory;
  int64_t staging_capacity = 0;

  /// Number of messages over all steps.
  int64_t num_messages() const;
  /// Elements received over all devices (equals the elements sent).
  int64_t total_received() const;
  /// The largest per-device receive, in elements.
  int64_t max_received() const;
  /// Send staging batches of step `step`: [mesh position][batch] -> indices into
  /// steps[step].messages of the messages that device packs together (see above). Used by the
  /// executor and to compute extra_memory.
  std::vector<std::vector<std::vector<size_t>>> staging_batches(size_t step) const;

  /// The plan as text: the source and target shardings, the aval and mesh, then each step
  /// (kind, axes, message count) with each device's elements and bytes received and sent,
  /// messages and extra memory, and a summary line (max bytes received per device, total bytes
  /// and messages). Devices are printed by id.
  std::string as_text() const;
};

/// Plans the reshard of reduced data of `aval` from `src` to `dst` (same mesh).
///
/// Algorithm: with A(d), B(d) the boxes of device_boxes(src/dst, aval.shape), the devices with
/// equal non-empty A boxes form source replica groups (disjoint boxes covering the array).
/// Device r receives, from each source group g not containing it, the box B(r) ∩ A(g) as one
/// message, so (a) it receives exactly |B(r)| − |A(r) ∩ B(r)| elements and (c) the message count
/// is Σ_r #groups it needs data from; the rest is copied locally. Senders: within each group,
/// messages (largest first) go to members by a greedy assignment tried three ways, keeping the
/// first that keeps every member's sent volume within its own receive bound: (1) the fitting
/// member nearest the receiver on the mesh (fewest differing coordinates; this keeps structured
/// collectives' peer patterns), (2) the fitting member with the most capacity left; when neither
/// fits, (3) the member with the fewest elements sent so far, ties to members that also receive
/// (LPT scheduling towards the group optimum ⌈outgoing / group size⌉). (b)'s bounds are met by
/// this whenever the tests' exhaustive pairs show it; indivisible messages can in general make
/// the capacity assignment a bin-packing problem, where (3) is the fallback.
/// Kind (e): local_slice when nobody receives; all_gather over S when each dim of dst is its
/// dim of src with a minor suffix of axes removed (S = the removed axes); all_to_all when one
/// minor suffix of axes moves from the end of one dim to the end of another; collective_permute
/// when every receiver gets its whole target shard in one message and every sender sends at most
/// one; the structured kinds only when all source and all target shards have equal, non-zero
/// volume (padding would break the bounds); ragged_all_to_all otherwise. One step in all cases.
///
/// Throws ShardingError at `loc` (naming both shardings, the shape and the mesh) when the
/// shardings are on different meshes, either does not fit the shape (Sharding::check: rank
/// mismatch, unknown axis, ...), the memory kinds differ, or either has unreduced axes (this
/// planner covers reduced data only; reduce_scatter/all_reduce planning for partial sums is
/// separate work).
ReshardPlan plan_reshard(const Sharding& src, const Sharding& dst, const ShapedArray& aval,
                         std::source_location loc = std::source_location::current());

/// Eager reference: applies `plan` to per-device shards. `src_shards[d]` is the shard of mesh
/// position d: a concrete array of plan.aval's dtype whose shape is the extent of
/// plan.src_boxes[d]. Returns the target shards (shape = extent of plan.dst_boxes[d]), built
/// from the local copy A(d) ∩ B(d) and the plan's messages, staged in batches as described at
/// ReshardPlan; the global array is never assembled. If `peak_staging` is given it receives
/// each device's measured peak of live staging elements (== plan.extra_memory).
/// Throws ValueError when the shard count, a shard's shape or dtype does not match the plan.
std::vector<Array> execute_reshard(const ReshardPlan& plan, const std::vector<Array>& src_shards,
                                   std::vector<int64_t>* peak_staging = nullptr);

}  // namespace minijax
