// minijax communicator: CollectiveOp, the in-process backend (matching of participants, its one
// communicator thread, abort/reset), the process-wide accessor, counters and the test hook.
#include "jit/runtime/communicator.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "core/collectives.h"
#include "core/distributed.h"
#include "core/errors.h"
#include "core/profiler_hooks.h"
#include "jit/runtime/collective_transfers.h"
#include "jit/runtime/mpi_communicator.h"

namespace minijax {

// ---- CollectiveOp -------------------------------------------------------------------------------

const char* collective_kind_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::all_gather: return "all_gather";
    case CollectiveKind::all_reduce: return "all_reduce";
    case CollectiveKind::reduce_scatter: return "reduce_scatter";
    case CollectiveKind::all_to_all: return "all_to_all";
    case CollectiveKind::collective_permute: return "collective_permute";
    case CollectiveKind::ragged_all_to_all: return "ragged_all_to_all";
  }
  return "?";
}

Shape CollectiveOp::result_shape(int64_t n) const {
  Shape s = shape;
  auto in_range = [&](int64_t d) { return d >= 0 && d < int64_t(s.size()); };
  switch (kind) {
    case CollectiveKind::all_gather:
      if (!tiled && gather_dimension >= 0 && gather_dimension <= int64_t(s.size()))
        s.insert(s.begin() + gather_dimension, n);
      else if (tiled && in_range(gather_dimension)) s[size_t(gather_dimension)] *= n;
      break;
    case CollectiveKind::reduce_scatter:
      if (in_range(scatter_dimension) && n > 0) s[size_t(scatter_dimension)] /= n;
      break;
    case CollectiveKind::all_to_all:
      if (in_range(split_dimension) && in_range(concat_dimension) && n > 0) {
        s[size_t(split_dimension)] /= n;
        s[size_t(concat_dimension)] *= n;
      }
      break;
    case CollectiveKind::ragged_all_to_all: return output_shape;
    default: break;
  }
  return s;
}

bool CollectiveOp::same_collective(const CollectiveOp& o) const {
  if (kind != o.kind || dtype != o.dtype || shape != o.shape) return false;
  switch (kind) {
    case CollectiveKind::all_gather: return gather_dimension == o.gather_dimension && tiled == o.tiled;
    case CollectiveKind::all_reduce: return reduction == o.reduction;
    case CollectiveKind::reduce_scatter: return scatter_dimension == o.scatter_dimension;
    case CollectiveKind::all_to_all:
      return split_dimension == o.split_dimension && concat_dimension == o.concat_dimension;
    case CollectiveKind::collective_permute: return source_target_pairs == o.source_target_pairs;
    case CollectiveKind::ragged_all_to_all: return output_shape == o.output_shape;
  }
  return false;
}

std::string CollectiveOp::str() const {
  std::string s = std::string(collective_kind_name(kind)) + " " + dtype_name(dtype) + shape_str(shape);
  switch (kind) {
    case CollectiveKind::all_gather:
      return s + " gather_dimension=" + std::to_string(gather_dimension) +
             " tiled=" + (tiled ? "true" : "false");
    case CollectiveKind::all_reduce: return s + " reduction=" + reduction;
    case CollectiveKind::reduce_scatter: return s + " scatter_dimension=" + std::to_string(scatter_dimension);
    case CollectiveKind::all_to_all:
      return s + " split_dimension=" + std::to_string(split_dimension) +
             " concat_dimension=" + std::to_string(concat_dimension);
    case CollectiveKind::collective_permute: {
      s += " source_target_pairs=(";
      for (size_t i = 0; i < source_target_pairs.size(); ++i)
        s += (i ? ", " : "") + std::to_string(source_target_pairs[i]);
      return s + ")";
    }
    case CollectiveKind::ragged_all_to_all: return s + " output=" + shape_str(output_shape);
  }
  return s;
}

// ---- counters and the hook ----------------------------------------------------------------------

namespace {

// These and the communicator are never destroyed (as the device queues and copy engines): they
// are first used on a device thread during a call, so a static destructor would run before the
// exit drain registered at that call's dispatch, under device threads still running collectives.
std::mutex& stats_mutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::vector<CollectiveCounters>& stats_table() {
  static auto* t = new std::vector<CollectiveCounters>();
  return *t;
}
std::vector<ProcessPairCounters>& pair_table() {
  static auto* t = new std::vector<ProcessPairCounters>();
  return *t;
}
std::mutex& hook_mutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::function<void()>& hook_slot() {
  static auto* h = new std::function<void()>();
  return *h;
}

std::string group_str(const std::vector<int>& g) {
  std::string s = "[";
  for (size_t i = 0; i < g.size(); ++i) s += (i ? ", " : "") + std::to_string(g[i]);
  return s + "]";
}

}  // namespace

CollectiveCounters collective_stats(int device_id) {
  if (device_id < 0)
    throw ValueError("collective_stats: device id " + std::to_string(device_id) + " is negative");
  std::lock_guard<std::mutex> g(stats_mutex());
  const auto& t = stats_table();
  return size_t(device_id) < t.size() ? t[size_t(device_id)] : CollectiveCounters{};
}

ProcessPairCounters collective_process_stats(int peer) {
  if (peer < 0)
    throw ValueError("collective_process_stats: process " + std::to_string(peer) + " is negative");
  std::lock_guard<std::mutex> g(stats_mutex());
  const auto& t = pair_table();
  return size_t(peer) < t.size() ? t[size_t(peer)] : ProcessPairCounters{};
}

void reset_collective_stats() {
  std::lock_guard<std::mutex> g(stats_mutex());
  stats_table().clear();
  pair_table().clear();
}

void detail::add_process_pair_counters(int peer, const ProcessPairCounters& c) {
  if (peer < 0) return;
  std::lock_guard<std::mutex> g(stats_mutex());
  auto& t = pair_table();
  if (t.size() <= size_t(peer)) t.resize(size_t(peer) + 1);
  t[size_t(peer)].bytes_sent += c.bytes_sent;
  t[size_t(peer)].bytes_received += c.bytes_received;
  t[size_t(peer)].messages_sent += c.messages_sent;
  t[size_t(peer)].messages_received += c.messages_received;
}

void detail::add_collective_counters(int device_id, const CollectiveCounters& c) {
  if (device_id < 0) return;
  std::lock_guard<std::mutex> g(stats_mutex());
  auto& t = stats_table();
  if (t.size() <= size_t(device_id)) t.resize(size_t(device_id) + 1);
  t[size_t(device_id)].bytes_sent += c.bytes_sent;
  t[size_t(device_id)].bytes_received += c.bytes_received;
  t[size_t(device_id)].messages += c.messages;
}

void detail::set_collective_hook(std::function<void()> hook) {
  std::lock_guard<std::mutex> g(hook_mutex());
  hook_slot() = std::move(hook);
}

// ---- the in-process backend -------------------------------------------------------------------

namespace {

struct Participant {
  int device = 0;
  CollectiveOp op;
  CollectiveBuffers bufs;
  Event ev;
};

using Key = std::pair<std::vector<int>, uint64_t>;  // (group, per-device sequence number on it)

// One collective being assembled: a participant per rank, once it has started.
struct Pending {
  std::vector<int> group;
  std::vector<std::optional<Participant>> at;
  size_t arrived = 0;
};

// Which group a device named for its g-th start in a context (to find devices naming different
// groups for the same collective: under SPMD the g-th starts of a program's devices correspond).
struct Claim {
  std::vector<int> group;
  Key key;
};

}  // namespace

struct InProcessCommunicator::Impl {
  std::mutex mu;
  std::condition_variable work_cv, idle_cv;
  std::map<Key, Pending> pending;
  std::map<std::pair<int, std::vector<int>>, uint64_t> group_seq;
  // Per context (the devices running one program; empty: every device of the process): each
  // device's count of starts there, and the claims of its starts by number.
  struct Context {
    std::map<int, uint64_t> seq;
    std::map<uint64_t, std::map<int, Claim>> claims;
  };
  std::map<std::vector<int>, Context> contexts;
  std::map<Key, std::exception_ptr> poisoned;
  std::deque<Pending> ready;
  std::vector<Event> inflight;
  bool busy = false, stop = false;
  std::exception_ptr aborted;
  std::thread thread;

  // Removes a pending collective (and its claims), appending its events to `out`. Under mu.
  void drop(const Key& key, std::vector<Event>& out) {
    auto it = pending.find(key);
    if (it == pending.end()) return;
    for (auto& p : it->second.at)
      if (p) out.push_back(p->ev);
    pending.erase(it);
  }
  // Claims stay after their collective completes (a device naming another group may come
  // later) until every device seen so far has started past them.
  static void prune_claims(Context& c) {
    uint64_t low = UINT64_MAX;
    for (auto& kv : c.seq) low = std::min(low, kv.second);
    while (!c.claims.empty() && c.claims.begin()->first < low) c.claims.erase(c.claims.begin());
  }
  // Every event not yet completed by the thread (pending, ready, in flight); clears the queues.
  std::vector<Event> take_all() {
    std::vector<Event> evs = inflight;
    std::vector<Key> keys;
    for (auto& kv : pending) keys.push_back(kv.first);
    for (auto& k : keys) drop(k, evs);
    for (auto& job : ready)
      for (auto& p : job.at) evs.push_back(p->ev);
    ready.clear();
    for (auto& [ids, c] : contexts) c.claims.clear();
    return evs;
  }
  // A device naming another group than a peer for the same (g-th) start: the error, or null.
  std::exception_ptr group_conflict(Context& c, int device, const std::vector<int>& group, uint64_t g,
                                    const CollectiveOp& op, std::vector<Event>& fail, const Key& key) {
    auto cit = c.claims.find(g);
    if (cit == c.claims.end()) return nullptr;
    for (auto& [e, cl] : cit->second) {
      const bool related = std::count(group.begin(), group.end(), e) ||
                           std::count(cl.group.begin(), cl.group.end(), device);
      if (!related || cl.group == group) continue;
      auto err = std::make_exception_ptr(ValueError(
          "collective " + std::string(collective_kind_name(op.kind)) + " (start " + std::to_string(g) +
          " of these devices): the participants disagree on the group: device " + std::to_string(device) +
          " names " + group_str(group) + ", device " + std::to_string(e) + " names " + group_str(cl.group)));
      const Key other = cl.key;
      drop(other, fail);
      drop(key, fail);
      poisoned[other] = err;
      poisoned[key] = err;
      return err;
    }
    return nullptr;
  }
  void loop();
  void run(Pending& job);
};

namespace {

// A collective's event on the communicator's track: the op, its group and the bytes it moved.
void trace_collective(const Pending& job, const std::vector<CollectiveCounters>& counted, bool failed,
                      int64_t begin) noexcept {
  try {
    namespace pd = profiler::detail;
    const CollectiveOp& op = job.at.at(0)->op;
    int64_t sent = 0, messages = 0;
    for (auto& c : counted) sent += c.bytes_sent, messages += c.messages;
    pd::Args a;
    a.add("op", op.str()).add("dtype", dtype_name(op.dtype)).add("shape", shape_str(op.shape));
    a.add("group", group_str(job.group)).add("bytes", sent).add("messages", messages);
    a.add("result_bytes", job.at.at(0)->bufs.recv_bytes);
    if (failed) a.add("failed", true);
    pd::record("collective", collective_kind_name(op.kind), begin, pd::now_ns(), a.take());
  } catch (...) {
  }
}

}  // namespace

void InProcessCommunicator::Impl::run(Pending& job) {
  {
    std::function<void()> hook;
    {
      std::lock_guard<std::mutex> g(hook_mutex());
      hook = hook_slot();
    }
    if (hook) hook();
  }
  std::exception_ptr err;
  {
    std::lock_guard<std::mutex> g(mu);
    err = aborted;
  }
  std::vector<detail::CollectiveMember> members;
  for (auto& p : job.at) members.push_back({p->device, &p->op, p->bufs});
  std::vector<CollectiveCounters> counted;
  const int64_t begin = profiler::detail::tracing() ? profiler::detail::now_ns() : -1;
  if (!err) {
    try {
      detail::check_collective(members, job.group);
      detail::perform_collective(members, counted);
      for (size_t r = 0; r < members.size(); ++r)
        detail::add_collective_counters(members[r].device, counted[r]);
    } catch (...) {
      err = std::current_exception();
    }
  }
  if (begin >= 0) trace_collective(job, counted, err != nullptr, begin);
  for (auto& p : job.at) err ? p->ev.set_error(err) : p->ev.set();
}

void InProcessCommunicator::Impl::loop() {
  for (;;) {
    Pending job;
    {
      std::unique_lock<std::mutex> lk(mu);
      work_cv.wait(lk, [&] { return stop || !ready.empty(); });
      if (ready.empty()) return;
      job = std::move(ready.front());
      ready.pop_front();
      busy = true;
      for (auto& p : job.at) inflight.push_back(p->ev);
    }
    run(job);
    {
      std::lock_guard<std::mutex> lk(mu);
      busy = false;
      inflight.clear();
    }
    idle_cv.notify_all();
  }
}

InProcessCommunicator::InProcessCommunicator() : impl_(std::make_unique<Impl>()) {
  impl_->thread = std::thread([this] {
    profiler::detail::name_this_thread("communicator", 1 << 20);
    impl_->loop();
  });
}

InProcessCommunicator::~InProcessCommunicator() {
  std::vector<Event> evs;
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->stop = true;
    evs = impl_->take_all();
  }
  impl_->work_cv.notify_all();
  auto err = std::make_exception_ptr(ValueError("communicator destroyed with the collective pending"));
  for (auto& e : evs) e.set_error(err);
  impl_->thread.join();
}

Event InProcessCommunicator::start(const CollectiveOp& op, int device_id, const CollectiveBuffers& bufs,
                                   const std::vector<int>& group, const std::vector<int>& context) {
  const std::string what = "communicator start of " + std::string(collective_kind_name(op.kind)) +
                           " by device " + std::to_string(device_id) + " over " + group_str(group) + ": ";
  if (group.empty()) throw ValueError(what + "the group is empty");
  if (std::set<int>(group.begin(), group.end()).size() != group.size() ||
      *std::min_element(group.begin(), group.end()) < 0)
    throw ValueError(what + "the group has a repeated or negative device id");
  auto pos = std::find(group.begin(), group.end(), device_id);
  if (pos == group.end()) throw ValueError(what + "the device is not in the group");
  if (!context.empty())
    for (int d : group)
      if (std::find(context.begin(), context.end(), d) == context.end())
        throw ValueError(what + "device " + std::to_string(d) + " of the group is not in the context " +
                         group_str(context));
  const size_t rank = size_t(pos - group.begin());

  Impl& m = *impl_;
  Event ev;
  std::vector<Event> fail;
  std::exception_ptr err;
  {
    std::lock_guard<std::mutex> lk(m.mu);
    if (m.aborted) return Event::failed_with(m.aborted);
    Impl::Context& c = m.contexts[context];
    const uint64_t g = c.seq[device_id]++;
    const Key key{group, m.group_seq[{device_id, group}]++};
    if (auto it = m.poisoned.find(key); it != m.poisoned.end()) return Event::failed_with(it->second);
    err = m.group_conflict(c, device_id, group, g, op, fail, key);
    Impl::prune_claims(c);
    if (!err) {
      c.claims[g][device_id] = Claim{group, key};
      Pending& p = m.pending[key];
      if (p.at.empty()) {
        p.group = group;
        p.at.resize(group.size());
      }
      p.at[rank] = Participant{device_id, op, bufs, ev};
      if (++p.arrived == group.size()) {
        m.ready.push_back(std::move(p));
        m.pending.erase(key);
        m.work_cv.notify_one();
      }
    }
  }
  if (err) {
    for (auto& e : fail) e.set_error(err);
    ev.set_error(err);
  }
  return ev;
}

void InProcessCommunicator::abort(std::exception_ptr err, const std::vector<int>&) {
  if (!err) err = std::make_exception_ptr(ValueError("communicator aborted"));
  std::vector<Event> evs;
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->aborted = err;
    evs = impl_->take_all();
  }
  for (auto& e : evs) e.set_error(err);
}

void InProcessCommunicator::reset() {
  std::vector<Event> evs;
  {
    std::unique_lock<std::mutex> lk(impl_->mu);
    Impl& m = *impl_;
    std::vector<Event> inflight = m.inflight;
    evs = m.take_all();
    evs.erase(evs.begin(), evs.begin() + std::ptrdiff_t(inflight.size()));  // the thread completes those
    m.group_seq.clear();
    m.contexts.clear();
    m.poisoned.clear();
    m.aborted = nullptr;
    m.idle_cv.wait(lk, [&] { return !m.busy; });
  }
  auto err = std::make_exception_ptr(ValueError("communicator reset with the collective pending"));
  for (auto& e : evs) e.set_error(err);
}

Communicator& communicator() {
  // Never destroyed: see stats_mutex(). Made after initialize() (which refuses to run once the
  // devices were used), so a run of several processes gets the MPI backend.
  static Communicator* c = process_count() > 1 ? make_mpi_communicator().release()
                                               : static_cast<Communicator*>(new InProcessCommunicator());
  return *c;
}

}  // namespace minijax
