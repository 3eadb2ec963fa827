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
/// reduce_scatter and all_reduce (sum) reduce partial sums over the unreduced axes (`axes`).
enum class ReshardKind : uint8_t {
  local_slice,
  all_gather,
  all_to_all,
  collective_permute,
  ragged_all_to_all,
  reduce_scatter,
  all_reduce
};

/// "local_slice", "all_gather", "all_to_all", "collective_permute", "ragged_all_to_all",
/// "reduce_scatter", "all_reduce".
const char* reshard_kind_name(ReshardKind k);

/// One sender -> receiver transfer: the global index box the receiver gets from the sender.
/// sender and receiver are mesh positions (indices into mesh->device_ids). `partial`: the box
/// holds the sender's partial sums, added into the receiver's (reduce phase); otherwise the
/// values are copied. `phase` 0 reads the sender's step input, phase 1 (the all_gather half of
/// an all_reduce) its step output after phase 0.
struct ReshardMessage {
  size_t sender = 0;
  size_t receiver = 0;
  Box box;
  int64_t elements = 0;  ///< box.volume()
  bool partial = false;
  int phase = 0;
};

/// One collective step, from sharding `from` (boxes `from_boxes`, per mesh position) to `to`
/// (`to_boxes`). For all_gather, `axes` are the gathered axes; for all_to_all the moved axes,
/// with `split_dim` the array dim that gains them and `concat_dim` the dim that loses them
/// (JAX's all_to_all split_axis / concat_axis; -1 when several dims do); for reduce_scatter the
/// unreduced axes, with `split_dim` the scattered dim; for all_reduce the unreduced axes, with
/// `split_dim` the dim its two phases split the shard along (all_reduce_split_dim; -1 for a
/// rank-0 array, reduced directly: each device gets every peer's partial sum).
struct ReshardStep {
  ReshardKind kind = ReshardKind::ragged_all_to_all;
  std::vector<AxisRef> axes;
  int64_t split_dim = -1;
  int64_t concat_dim = -1;
  std::vector<ReshardMessage> messages;
  Sharding from, to;
  std::vector<Box> from_boxes, to_boxes;
};

/// The dim a two-phase all_reduce (reduce_scatter, then all_gather of the reduced pieces)
/// splits a shard of `shape` along, over k devices: the first dim divisible by k, else the
/// largest dim (the first of equal ones); -1 for rank 0 (no split: direct exchange).
int64_t all_reduce_split_dim(const Shape& shape, int64_t k);
/// Elements of each rank's piece (k entries) of a shard of `shape` in that split: ceil-sized
/// blocks of the split dim times the other dims (trailing pieces smaller or empty); for rank 0,
/// the whole element at rank 0. The traffic model both the planner and run_spmd use for
/// all_reduce: rank r receives (k-1)·piece[r] (reduce phase) + (E - piece[r]) (gather phase)
/// elements and sends as much, E = the shard's elements; rank 0 arrays: (k-1)·1 both ways.
std::vector<int64_t> all_reduce_pieces(const Shape& shape, int64_t k);

/// A reshard: the source and target boxes of every mesh position, the steps, and per mesh
/// position (indices into mesh->device_ids) the elements received and sent (over all steps),
/// the messages received and sent, the elements copied locally (A(d) ∩ B(d) of the last step),
/// the receive lower bound (the sum over steps of each step's bound: |B(d)| − |A(d) ∩ B(d)| for
/// a move of reduced data, (k−1)·|B(d)| for a reduce_scatter over k devices, the two-phase
/// all_reduce_pieces volume for an all_reduce), and the extra memory (send staging, elements).
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
  /// Recomputes received, sent, message counts and extra_memory from the steps' messages.
  void tally();

  /// The plan as text: a header line (aval, mesh, source -> target), then one line per step:
  /// `step 0: all_to_all over {"x", "y"}: recv 1792 B/device, send 1792 B/device, 56 messages,
  /// extra 2048 B/device` (bytes per device; when devices differ, `recv 0..1792 B/device` gives
  /// the range), then a summary line (max bytes received per device, total bytes, messages).
  std::string as_text() const;
  /// as_text() followed by each device's line per step (elements and bytes received and sent,
  /// messages, local copy, extra memory), devices printed by id.
  std::string as_detailed_text() const;
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
/// volume (padding would break the bounds); ragged_all_to_all otherwise. One step for reduced
/// data. all_to_all also covers several moves at once (per dim, the axes after the common
/// prefix are released or acquired, no dim does both, and the released and acquired axes are
/// the same set: one all_to_all over them, as partition_spmd lowers it; split/concat_dim -1 when
/// more than one dim gains or loses axes).
///
/// Unreduced source (partial sums over src.unreduced = U, k devices; dst reduced): the
/// candidates are (1) an all_reduce over U in its two-phase form (reduce_scatter of the pieces
/// of all_reduce_pieces, then all_gather of the reduced pieces: 2(k−1)/k of the shard received
/// per device on even shapes), then a reduced reshard to dst if dst differs; (2) for each dim j
/// and each order of U, a reduce_scatter onto the intermediate I = src's dims with U appended
/// (minor) to dim j ((k−1)·|I(d)| received per device, one partial-sum message from each other
/// member of d's reduction group), then a reduced reshard I -> dst if dst differs. The cheapest
/// by (largest per-device receive, total receive, fewer steps, candidate order) wins.
///
/// Throws ShardingError at `loc` (naming both shardings, the shape and the mesh) when the
/// shardings are on different meshes, either does not fit the shape (Sharding::check: rank
/// mismatch, unknown axis, ...), the memory kinds differ, or dst has unreduced axes (turning
/// values into partial sums, or moving partial sums, is not a reshard this planner makes).
ReshardPlan plan_reshard(const Sharding& src, const Sharding& dst, const ShapedArray& aval,
                         std::source_location loc = std::source_location::current());

/// Eager reference: applies `plan` to per-device shards, step by step. `src_shards[d]` is the
/// shard of mesh position d (partial sums for an unreduced source): a concrete array of
/// plan.aval's dtype whose shape is the extent of plan.src_boxes[d]. Returns the target shards
/// (shape = extent of plan.dst_boxes[d]). Each step starts from the local copy of its input
/// box ∩ output box, then delivers its messages (phase 0 before phase 1; partial messages are
/// added, in sender order, others copied), staged in batches as described at ReshardPlan; the
/// global array is never assembled. If `peak_staging` is given it receives each device's
/// measured peak of live staging elements (== plan.extra_memory).
/// Throws ValueError when the shard count, a shard's shape or dtype does not match the plan, or
/// when partial sums of a non-numeric dtype (bool) would be added.
std::vector<Array> execute_reshard(const ReshardPlan& plan, const std::vector<Array>& src_shards,
                                   std::vector<int64_t>* peak_staging = nullptr);

}  // namespace minijax
