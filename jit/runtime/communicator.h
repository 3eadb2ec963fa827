// minijax communicator: the asynchronous collective interface between devices (Communicator),
// its in-process backend (InProcessCommunicator), and the per-device counters of moved bytes.
#pragma once
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/aval.h"
#include "core/dtype.h"
#include "jit/runtime/event.h"

namespace minijax {

/// The collectives a Communicator performs (core/collectives.h's primitives, axis_index aside:
/// it moves nothing).
enum class CollectiveKind {
  all_gather,
  all_reduce,
  reduce_scatter,
  all_to_all,
  collective_permute,
  ragged_all_to_all
};

/// The primitive's name ("all_gather", ...).
const char* collective_kind_name(CollectiveKind k);

/// One collective as one participant sees it: the kind, the element type, the participant's
/// local operand shape, and the parameters of core/collectives.h. Every participant of one
/// collective must give the same description (the ragged size tables aside, which are each
/// device's own); the result is bitwise what run_spmd (jit/reference/reference_executor.h)
/// computes for the equivalent equation, reductions applied in rank order 0..n-1 (between
/// processes, the MPI backend reduces each process's ranks first, then the processes' partial
/// sums: the same bits on every device, maybe not run_spmd's).
struct CollectiveOp {
  CollectiveKind kind = CollectiveKind::all_gather;
  DType dtype = DType::f32;
  Shape shape;  ///< the local operand (ragged_all_to_all: the `input` operand), elements per dim

  int64_t gather_dimension = 0;  ///< all_gather
  bool tiled = true;             ///< all_gather: concatenate (true) or stack in a new dim (false)
  std::string reduction =
      "sum";  ///< all_reduce: "sum", "max", "min", "and", "or" or "xor" (reduce_scatter sums)
  int64_t scatter_dimension = 0;  ///< reduce_scatter
  int64_t split_dimension = 0, concat_dimension = 0;  ///< all_to_all
  std::vector<int64_t> source_target_pairs;           ///< collective_permute: flat (source, target) ranks

  /// ragged_all_to_all: the shape of the `output` operand (and of the result).
  Shape output_shape;
  /// ragged_all_to_all: this device's four i32[n] index operands, as host values (rows of dim 0).
  std::vector<int32_t> input_offsets, send_sizes, output_offsets, recv_sizes;

  /// The result's local shape on a group of `group_size` devices (no validation).
  Shape result_shape(int64_t group_size) const;
  /// Whether `o` describes the same collective (every field but the ragged index tables).
  bool same_collective(const CollectiveOp& o) const;
  /// `all_gather f32[2,3] gather_dimension=0 tiled=true` (for error messages).
  std::string str() const;
};

/// A host buffer: `bytes` bytes at `data`.
struct ConstBufferRef {
  const void* data = nullptr;
  int64_t bytes = 0;
};

/// One participant's buffers. `send`: the operands, row-major, dense (one: the operand;
/// ragged_all_to_all two: `input`, then `output`, whose rows not received are kept). `recv`:
/// the result, `recv_bytes` bytes (result_shape × itemsize). `recv` must not overlap any
/// participant's send or receive buffer, except that a ragged_all_to_all's recv may be exactly
/// its own `output` operand (in place). Buffers must stay valid until the event completes, or,
/// after an abort, until reset() returns.
struct CollectiveBuffers {
  std::vector<ConstBufferRef> send;
  void* recv = nullptr;
  int64_t recv_bytes = 0;
};

/// What the communicator moved for one device since the last reset_collective_stats(): bytes it
/// sent to other devices, bytes it received from them, and messages it sent (one per sender,
/// receiver and transfer phase with a non-zero byte count). Copies to itself count nothing.
/// The counts follow run_spmd's traffic model exactly (CollectiveStats in jit/runtime/collective_stats.h,
/// collective_traffic in sharding/reshard_api.h) because they are counted at each copy of that
/// model's transfers: all_reduce as a reduce-scatter of all_reduce_pieces then an all-gather of
/// the reduced pieces (a rank-0 operand: every device sends its value to the n-1 others).
struct CollectiveCounters {
  int64_t bytes_sent = 0, bytes_received = 0, messages = 0;
};

/// An asynchronous collective transport between devices. The devices of one process are
/// threads (InProcessCommunicator); a multi-process backend (MPI) plugs in behind the same
/// interface. Thread-safe: every device calls start from its own thread.
class Communicator {
 public:
  virtual ~Communicator() = default;
  /// Device `device_id` joins a collective over `group` (the global device ids of the
  /// participants in rank order: rank = index in group) with its buffers. Returns at once; the
  /// event completes when this device's result is in bufs.recv. The k-th collective a device
  /// starts on a group is matched with the k-th of every other member (SPMD: every device
  /// starts the same collectives in the same order, each over its own group). Failures reach
  /// every participant's event: a ValueError when participants disagree (kind, dtype, shapes,
  /// params, or group: the message names the collective and the disagreeing devices), when the
  /// op does not fit the group or the buffers, or for ragged sizes that disagree between peers
  /// or fall outside the buffers (run_spmd's messages); TypeError for a sum of bools; the
  /// abort error after abort(). A group disagreement is found by comparing the groups the
  /// devices name for their g-th start in `context`: the devices that run one program and so
  /// start the same sequence of collectives (an SPMD executor passes its mesh's device ids; empty,
  /// the default: every device of the process). Programs on different device subsets (meshes)
  /// therefore each have their own context, or a device that sat out another mesh's collectives
  /// would be compared with the wrong start. Members of a group that completed before a disagreeing
  /// device started keep their result, every participant still pending fails (no deadlock).
  /// Throws ValueError at once (nothing started) for an empty group, a repeated or negative id,
  /// or a device_id not in group, or a group member outside a non-empty context.
  virtual Event start(const CollectiveOp& op, int device_id, const CollectiveBuffers& bufs,
                      const std::vector<int>& group, const std::vector<int>& context = {}) = 0;
  /// Fails every pending collective's events, and every start until reset(), with `err` (when
  /// one device's program fails, so the others stop waiting). A null err is a ValueError
  /// "communicator aborted". `context`: the devices of the failed program (its mesh), so that a
  /// multi-process backend tells the processes driving them (empty: none told).
  virtual void abort(std::exception_ptr err, const std::vector<int>& context = {}) = 0;
  /// Forgets the abort state, the sequence numbers and the pending collectives (their events
  /// fail with ValueError "communicator reset"; the MPI backend keeps its sequence numbers of
  /// collectives between processes, which every process must agree on); returns once no transfer is running (so it must
  /// not be called from an Event callback, which may run on the communicator thread).
  virtual void reset() = 0;
};

/// The in-process backend: devices are threads of this process sharing memory. A participant's
/// start registers its buffers; when every member of the group has started, the backend's one
/// communicator thread (woken by a condition variable) reads the peers' buffers directly, each
/// receiver's bytes copied straight from the sender's buffer (reductions read every sender's
/// piece in rank order), counts what it moved (collective_stats) and completes the events.
class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator();
  /// Fails what is pending (ValueError "communicator destroyed") and joins the thread.
  ~InProcessCommunicator() override;
  InProcessCommunicator(const InProcessCommunicator&) = delete;
  InProcessCommunicator& operator=(const InProcessCommunicator&) = delete;

  Event start(const CollectiveOp& op, int device_id, const CollectiveBuffers& bufs,
              const std::vector<int>& group, const std::vector<int>& context = {}) override;
  void abort(std::exception_ptr err, const std::vector<int>& context = {}) override;
  void reset() override;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// The process-wide communicator, created on first use: the in-process one in a run of one
/// process, the MPI one (jit/runtime/mpi_communicator.h, which keeps the in-process path for
/// groups inside this process) after mj::distributed::initialize() joined several.
Communicator& communicator();

/// What the communicators of this process moved for device `device_id` since the last
/// reset_collective_stats() (zeros for a device that moved nothing). ValueError if negative.
CollectiveCounters collective_stats(int device_id);
/// What this process's communicator sent to and received from process `peer` over MPI since the
/// last reset_collective_stats(): payload and header bytes as handed to MPI_Isend and as
/// MPI_Get_count reported for each completed receive, and the messages. Zeros in a run of one
/// process or for a peer never written to. ValueError for a negative peer.
struct ProcessPairCounters {
  int64_t bytes_sent = 0, bytes_received = 0, messages_sent = 0, messages_received = 0;
};
ProcessPairCounters collective_process_stats(int peer);
/// Zeroes every device's CollectiveCounters and every ProcessPairCounters.
void reset_collective_stats();

namespace detail {
/// Test hook: the communicator thread calls `hook` (when set) before it performs each
/// collective, so a test can hold a collective back. An empty function removes it.
void set_collective_hook(std::function<void()> hook);
/// Adds `c` to device `device_id`'s counters (what a backend moved); used by the backends.
void add_collective_counters(int device_id, const CollectiveCounters& c);
/// Adds `c` to this process's counters for process `peer` (the MPI backend).
void add_process_pair_counters(int peer, const ProcessPairCounters& c);
}  // namespace detail

}  // namespace minijax
