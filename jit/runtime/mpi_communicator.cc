// minijax MPI communicator: matching a collective's local members, its thread posting one header
// and payload per process pair, polling them with back-off against a deadline, abort and reset.
#include "jit/runtime/mpi_communicator.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "core/config.h"
#include "core/device.h"
#include "core/distributed.h"
#include "core/errors.h"
#include "core/profiler_hooks.h"
#include "jit/runtime/collective_wire.h"
#include "jit/runtime/mpi_world.h"

namespace minijax {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kMagic = 0x316a616a696e696dULL;  // "minijaj1"
constexpr int64_t kMaxMessage = int64_t(1) << 30;    // larger payloads go as several messages
constexpr auto kFirstBackoff = std::chrono::microseconds(20), kLastBackoff = std::chrono::microseconds(1000);

// What precedes every payload between two processes: which collective it belongs to, as the
// sender sees it, or the sender's error.
struct WireHeader {
  uint64_t magic = kMagic;
  uint64_t group_hash = 0, seq = 0, op_hash = 0;
  int32_t process = 0, status = 0;  // status 1: the sender failed; text holds its error
  char text[472] = {};
};
static_assert(sizeof(WireHeader) == 512, "the header is 512 bytes");

uint64_t fnv1a(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ULL;
  return h;
}

std::string ids_str(const std::vector<int>& g) {
  std::string s = "[";
  for (size_t i = 0; i < g.size(); ++i) s += (i ? ", " : "") + std::to_string(g[i]);
  return s + "]";
}

void set_text(WireHeader& h, const std::string& s) {
  const size_t k = std::min(s.size(), sizeof h.text - 1);
  std::memcpy(h.text, s.data(), k);
  h.text[k] = '\0';
}

// An error's message (a minijax Error's without its call site).
std::string text_of(const std::exception_ptr& err) {
  try {
    std::rethrow_exception(err);
  } catch (const Error& e) {
    return e.message();
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an unknown exception";
  }
}

struct Participant {
  int device = 0;
  CollectiveOp op;
  CollectiveBuffers bufs;
  Event ev;
};

// One other process of a collective: the messages to and from it.
struct Peer {
  size_t index = 0;  // in the split's procs
  int process = 0;
  WireHeader out_header, in_header;
  std::shared_ptr<std::vector<char>> out;  // payload sent (shared between peers when the same)
  std::vector<char> in;                    // payload received
  int64_t out_bytes = 0, expect_bytes = 0, received = 0;
  std::vector<mpi_world::Request> sends, recvs;  // recvs[0]: the header
  bool header_in = false;
};

// One collective spanning processes, from its first local start to its completion.
struct Job {
  std::vector<int> group;
  uint64_t seq = 0, group_hash = 0;
  int tag = 0;
  std::vector<std::optional<Participant>> at;
  size_t arrived = 0, local = 0;
  std::exception_ptr failed;  // under the communicator's mu: the events failed, nothing is written
  detail::WireCollective wire;
  std::vector<Peer> peers;
  Clock::time_point posted_at, deadline;
  int64_t begin_ns = -1;
  std::string what;  // "all_reduce f32[8] over devices [0, ..]" for messages
};

int64_t sum_bytes(const std::vector<Peer>& ps, int64_t Peer::* f) {
  int64_t b = 0;
  for (auto& p : ps) b += p.*f;
  return b;
}

}  // namespace

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator()
      : self_(process_index()), processes_(process_count()), tag_ub_(mpi_world::tag_upper_bound()) {
    thread_ = std::thread([this] {
      profiler::detail::name_this_thread("mpi communicator", 1 << 20);
      loop();
    });
  }
  ~MpiCommunicator() override { stop(); }

  Event start(const CollectiveOp& op, int device_id, const CollectiveBuffers& bufs,
              const std::vector<int>& group, const std::vector<int>& context) override {
    return start_job(op, device_id, bufs, group, context, false);
  }
  /// A collective of the runtime's own (exchange_texts): numbered apart from the programs'.
  Event start_control(const CollectiveOp& op, int device_id, const CollectiveBuffers& bufs,
                      const std::vector<int>& group) {
    return start_job(op, device_id, bufs, group, {}, true);
  }
  void abort(std::exception_ptr err, const std::vector<int>& context = {}) override;
  void reset() override;
  void stop();

 private:
  Event start_job(const CollectiveOp& op, int device_id, const CollectiveBuffers& bufs,
                  const std::vector<int>& group, const std::vector<int>& context, bool control);
  void loop();
  void post(Job& j);
  bool poll(Job& j, bool& hot);
  void finish(Job& j);
  void fail(Job& j, std::exception_ptr err);
  void check_deadline(Job& j, Clock::time_point now);
  void poll_control();
  void peer_failed(const WireHeader& h);
  void send_notices();
  void stopped();

  InProcessCommunicator local_;
  const int self_, processes_, tag_ub_;
  std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::map<std::pair<std::vector<int>, uint64_t>, std::unique_ptr<Job>> assembling_;
  std::map<std::pair<int, std::vector<int>>, uint64_t> seq_, control_seq_;
  std::deque<std::unique_ptr<Job>> ready_;
  std::set<Job*> posted_;             // jobs the thread owns (for abort)
  std::exception_ptr aborted_, broken_;
  bool peer_error_ = false;  // broken_ came from another process's failure
  bool stop_ = false;
  Job* finishing_ = nullptr;  // the job whose results the thread is writing
  Job* posting_ = nullptr;    // the job whose operands the thread is reading
  std::vector<std::unique_ptr<Job>> active_;         // the thread's
  std::vector<std::unique_ptr<Job>> abandoned_;      // sends MPI may still read: kept until exit
  // The control channel (tag 0): a process whose program failed tells the others. notify_: the
  // headers to send (under mu_), sent_: those MPI may still read (the thread's).
  std::deque<std::pair<std::vector<int>, WireHeader>> notify_;
  std::deque<std::pair<WireHeader, mpi_world::Request>> sent_;
  WireHeader control_in_;
  mpi_world::Request control_recv_;
  std::thread thread_;
};

namespace {
MpiCommunicator* g_instance = nullptr;  // for stop_mpi_communicator
std::mutex g_instance_mu;
}  // namespace

Event MpiCommunicator::start_job(const CollectiveOp& op, int device_id, const CollectiveBuffers& bufs,
                                 const std::vector<int>& group, const std::vector<int>& context,
                                 bool control) {
  const std::string what = "communicator start of " + std::string(collective_kind_name(op.kind)) +
                           " by device " + std::to_string(device_id) + " over " + ids_str(group) + ": ";
  const int n_all = num_devices();
  bool spans = false;
  for (int d : group) {
    if (d >= n_all)
      throw ValueError(what + "device " + std::to_string(d) + " does not exist (" + std::to_string(n_all) +
                       " devices over " + std::to_string(processes_) + " processes)");
    if (d >= 0 && detail::process_of_device(d) != self_) spans = true;
  }
  if (!spans && !control) return local_.start(op, device_id, bufs, group, context);
  if (std::set<int>(group.begin(), group.end()).size() != group.size() ||
      *std::min_element(group.begin(), group.end()) < 0)
    throw ValueError(what + "the group has a repeated or negative device id");
  auto pos = std::find(group.begin(), group.end(), device_id);
  if (pos == group.end()) throw ValueError(what + "the device is not in the group");
  if (!detail::is_local_device(device_id))
    throw ValueError(what + "device " + std::to_string(device_id) + " is driven by process " +
                     std::to_string(detail::process_of_device(device_id)) + ", not this one");
  for (int d : group)
    if (!context.empty() && std::find(context.begin(), context.end(), d) == context.end())
      throw ValueError(what + "device " + std::to_string(d) + " of the group is not in the context " +
                       ids_str(context));
  if (!(config().collective_timeout_s > 0))
    throw ValueError(what + "config().collective_timeout_s = " +
                     std::to_string(config().collective_timeout_s) + " is not a positive number of seconds");
  Event ev;
  std::lock_guard<std::mutex> lk(mu_);
  if (stop_)
    return Event::failed_with(std::make_exception_ptr(DistributedError(
        "collective " + op.str() + " over devices " + ids_str(group) +
        ": it needs other processes, after mj::distributed::shutdown() (or exit) stopped the communicator")));
  if (broken_) {
    return Event::failed_with(std::make_exception_ptr(DistributedError(
        "collective " + op.str() + " over devices " + ids_str(group) + ": " + text_of(broken_))));
  }
  if (aborted_) return Event::failed_with(aborted_);
  const uint64_t seq = (control ? control_seq_ : seq_)[{device_id, group}]++;
  // A control collective's key and hash differ from any program collective's on the same group.
  std::vector<int> key = group;
  if (control) key.push_back(-1);
  auto& slot = assembling_[{key, seq}];
  if (!slot) {
    slot = std::make_unique<Job>();
    Job& j = *slot;
    j.group = group;
    j.seq = seq;
    j.group_hash = fnv1a(key.data(), key.size() * sizeof(int));
    j.tag = 1 + int(j.group_hash % uint64_t(std::max(1, tag_ub_ - 1)));
    j.at.resize(group.size());
    for (int d : group) j.local += detail::process_of_device(d) == self_ ? 1 : 0;
  }
  Job& j = *slot;
  j.at[size_t(pos - group.begin())] = Participant{device_id, op, bufs, ev};
  if (++j.arrived == j.local) {
    ready_.push_back(std::move(slot));
    assembling_.erase({key, seq});
    cv_.notify_all();
  }
  return ev;
}

void MpiCommunicator::post(Job& j) {
  std::vector<detail::CollectiveMember> part;
  for (auto& p : j.at)
    if (p) part.push_back({p->device, &p->op, p->bufs});
  const CollectiveOp& op = *part.at(0).op;
  j.what = op.str() + " over devices " + ids_str(j.group) + " (collective " + std::to_string(j.seq) +
           " of this group)";
  j.posted_at = Clock::now();
  j.deadline = j.posted_at + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(config().collective_timeout_s));
  j.begin_ns = profiler::detail::tracing() ? profiler::detail::now_ns() : -1;
  auto& w = j.wire;
  w.op = part[0].op;
  w.group = j.group;
  w.split = detail::split_group(j.group, self_, [](int d) { return detail::process_of_device(d); });
  w.members.assign(j.group.size(), {});
  for (size_t r = 0; r < j.group.size(); ++r)
    if (j.at[r]) w.members[r] = {j.at[r]->device, &j.at[r]->op, j.at[r]->bufs};
  std::exception_ptr local_error;
  {
    std::lock_guard<std::mutex> lk(mu_);
    local_error = j.failed;
  }
  if (!local_error) {
    try {
      detail::check_collective_part(part, j.group);
      detail::reduce_locally(w);
    } catch (...) {
      local_error = std::current_exception();
    }
  }
  const bool same_payload = op.kind == CollectiveKind::all_gather || op.kind == CollectiveKind::all_reduce ||
                            op.kind == CollectiveKind::ragged_all_to_all;
  std::shared_ptr<std::vector<char>> shared;
  j.peers.reserve(w.split.procs.size());  // MPI holds the addresses of their headers: never moved
  for (size_t i = 0; i < w.split.procs.size(); ++i) {
    if (i == w.split.me) continue;
    Peer& p = j.peers.emplace_back();
    p.index = i;
    p.process = w.split.procs[i];
    p.out_header.group_hash = j.group_hash;
    p.out_header.seq = j.seq;
    p.out_header.process = self_;
    std::string op_text = op.str();
    p.out_header.op_hash = fnv1a(op_text.data(), op_text.size());
    if (local_error) {
      p.out_header.status = 1;
      set_text(p.out_header, text_of(local_error));
    } else {
      set_text(p.out_header, op_text);
      p.out_bytes = detail::wire_payload_bytes(op, w.split, w.split.me, i);
      p.expect_bytes = detail::wire_payload_bytes(op, w.split, i, w.split.me);
      if (same_payload && shared) {
        p.out = shared;
      } else {
        p.out = std::make_shared<std::vector<char>>(size_t(p.out_bytes));
        detail::pack_payload(w, i, p.out->data());
        if (same_payload) shared = p.out;
      }
      p.in.resize(size_t(p.expect_bytes));
      p.recvs.push_back(mpi_world::irecv(&p.in_header, sizeof(WireHeader), p.process, j.tag));
      for (int64_t off = 0; off < p.expect_bytes; off += kMaxMessage)
        p.recvs.push_back(mpi_world::irecv(p.in.data() + off, std::min(kMaxMessage, p.expect_bytes - off),
                                           p.process, j.tag));
    }
    p.sends.push_back(mpi_world::isend(&p.out_header, sizeof(WireHeader), p.process, j.tag));
    for (int64_t off = 0; off < p.out_bytes; off += kMaxMessage)
      p.sends.push_back(
          mpi_world::isend(p.out->data() + off, std::min(kMaxMessage, p.out_bytes - off), p.process, j.tag));
    detail::add_process_pair_counters(p.process, {int64_t(sizeof(WireHeader)) + p.out_bytes, 0,
                                                  int64_t(p.sends.size()), 0});
  }
  if (local_error) fail(j, local_error);
}

// Fails j's events with err (unless they failed already: err null keeps the first error), makes
// the communicator broken and cancels j's receives. On the communicator thread.
void MpiCommunicator::fail(Job& j, std::exception_ptr err) {
  std::vector<Event> evs;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!j.failed)
      for (auto& p : j.at)
        if (p) evs.push_back(p->ev);
    if (!j.failed) j.failed = err;
    err = j.failed;
    if (!broken_)
      broken_ = std::make_exception_ptr(DistributedError(
          "an earlier collective between processes failed, so the processes no longer agree on what was "
          "exchanged (restart every process of the run): " +
          text_of(err)));
  }
  for (auto& p : j.peers)
    for (auto& r : p.recvs) mpi_world::cancel(r);
  for (auto& e : evs) e.set_error(err);
}

// Polls every request of j once; returns whether one completed. `hot`: every peer has joined.
bool MpiCommunicator::poll(Job& j, bool& hot) {
  bool progressed = false, all_headers = true;
  std::string error;
  bool failed;
  {
    std::lock_guard<std::mutex> lk(mu_);
    failed = j.failed != nullptr;
  }
  if (failed) {  // only let MPI finish (or cancel) what it holds
    for (Peer& p : j.peers) {
      for (auto& r : p.recvs) progressed = (r.active && mpi_world::test(r, nullptr, &error)) || progressed;
      for (auto& r : p.sends) progressed = (r.active && mpi_world::test(r, nullptr, &error)) || progressed;
    }
    return progressed;
  }
  for (Peer& p : j.peers) {
    for (size_t k = 0; k < p.recvs.size(); ++k) {
      if (!p.recvs[k].active) continue;
      int64_t got = 0;
      if (!mpi_world::test(p.recvs[k], &got, &error)) break;  // in order: the header first
      progressed = true;
      const std::string from = "process " + std::to_string(p.process);
      if (!error.empty())
        return fail(j, std::make_exception_ptr(DistributedError(
                           "collective " + j.what + ": the message from " + from + " failed: " + error))),
               true;
      detail::add_process_pair_counters(p.process, {0, got, 0, 1});
      if (k == 0) {
        const WireHeader& h = p.in_header;
        p.header_in = true;
        std::string why;
        if (got != int64_t(sizeof(WireHeader)) || h.magic != kMagic || h.process != p.process)
          why = "sent a message that is not a minijax collective header";
        else if (h.status != 0)
          why = std::string("failed: ") + std::string(h.text, strnlen(h.text, sizeof h.text));
        else if (h.group_hash != j.group_hash || h.seq != j.seq)
          why = "sent a message of another collective (its collective " + std::to_string(h.seq) +
                " of group hash " + std::to_string(h.group_hash) + ")";
        else if (h.op_hash != p.out_header.op_hash)
          why = "disagrees on the collective: its devices have " +
                std::string(h.text, strnlen(h.text, sizeof h.text));
        if (!why.empty()) {
          auto err = h.status != 0 && why.rfind("failed", 0) == 0
                         ? std::make_exception_ptr(
                               DistributedError("collective " + j.what + ": " + from + " " + why))
                         : std::make_exception_ptr(ValueError("collective " + j.what +
                                                              ": the participants disagree: " + "process " +
                                                              std::to_string(self_) + "'s devices have " +
                                                              j.wire.op->str() + ", " + from + " " + why));
          fail(j, err);
          return true;
        }
      } else {
        p.received += got;
      }
    }
    all_headers = all_headers && p.header_in;
    for (auto& r : p.sends) {
      if (!r.active) continue;
      if (!mpi_world::test(r, nullptr, &error)) break;
      progressed = true;
      if (!error.empty())
        return fail(j, std::make_exception_ptr(
                           DistributedError("collective " + j.what + ": the message to process " +
                                            std::to_string(p.process) + " failed: " + error))),
               true;
    }
  }
  hot = hot || all_headers;
  return progressed;
}

void MpiCommunicator::finish(Job& j) {
  std::vector<const char*> incoming(j.wire.split.procs.size(), nullptr);
  std::exception_ptr err;
  try {
    for (Peer& p : j.peers) {
      if (p.received != p.expect_bytes)
        throw DistributedError("collective " + j.what + ": process " + std::to_string(p.process) + " sent " +
                               std::to_string(p.received) + " payload bytes, " +
                               std::to_string(p.expect_bytes) + " expected");
      incoming[p.index] = p.in.data();
    }
    detail::finish_collective(j.wire, incoming);
    for (size_t r = 0; r < j.group.size(); ++r)
      if (j.at[r]) detail::add_collective_counters(j.group[r], j.wire.counted[r]);
  } catch (...) {
    err = std::current_exception();
  }
  if (j.begin_ns >= 0) {
    try {
      namespace pd = profiler::detail;
      pd::Args a;
      a.add("op", j.wire.op->str()).add("group", ids_str(j.group));
      a.add("wire_bytes_sent", sum_bytes(j.peers, &Peer::out_bytes))
          .add("wire_bytes_received", sum_bytes(j.peers, &Peer::received))
          .add("processes", int64_t(j.wire.split.procs.size()));
      if (err) a.add("failed", true);
      pd::record("collective", collective_kind_name(j.wire.op->kind), j.begin_ns, pd::now_ns(), a.take());
    } catch (...) {
    }
  }
  if (err) return fail(j, err);
  for (auto& p : j.at)
    if (p) p->ev.set();
}

void MpiCommunicator::check_deadline(Job& j, Clock::time_point now) {
  if (now < j.deadline) return;
  std::string missing, stalled;
  for (Peer& p : j.peers) {
    const int l = num_devices() / processes_;
    const std::string who = std::to_string(p.process) + " (devices " + std::to_string(p.process * l) + ".." +
                            std::to_string(p.process * l + l - 1) + ")";
    if (!p.header_in) missing += (missing.empty() ? "" : ", ") + who;
    else stalled += (stalled.empty() ? "" : ", ") + who;
  }
  auto secs_of = [](double s) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", s);
    return std::string(b);
  };
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1f", std::chrono::duration<double>(now - j.posted_at).count());
  const std::string msg = "collective " + j.what + ": process " + std::to_string(self_) + " waited " + secs +
                          " s for process" +
                          (missing.empty() ? "es " + stalled + " to finish sending, which did not"
                                           : (missing.find(',') != std::string::npos ? "es " : " ") +
                                                 missing + ", which did not join") +
                          " (config().collective_timeout_s = " + secs_of(config().collective_timeout_s) + ")";
  fail(j, std::make_exception_ptr(DistributedError(msg)));
}

// The control channel: posts its receive (from any process), and on a peer's failure header
// fails every collective between processes with it. Sent notifications are kept until MPI is done.
void MpiCommunicator::poll_control() {
  std::string error;
  while (!sent_.empty()) {
    if (!mpi_world::test(sent_.front().second, nullptr, &error)) break;
    sent_.pop_front();
  }
  for (;;) {
    if (!control_recv_.active) control_recv_ = mpi_world::irecv(&control_in_, sizeof(WireHeader), -1, 0);
    int64_t got = 0;
    if (!mpi_world::test(control_recv_, &got, &error)) return;
    if (error.empty() && got == int64_t(sizeof(WireHeader)) && control_in_.magic == kMagic &&
        control_in_.status)
      peer_failed(control_in_);
  }
}

void MpiCommunicator::peer_failed(const WireHeader& h) {
  const std::string text(h.text, strnlen(h.text, sizeof h.text));
  const std::string who = "process " + std::to_string(h.process) + " failed: " + text;
  std::vector<Job*> jobs;
  std::vector<std::pair<Event, std::exception_ptr>> evs;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!peer_error_) {
      broken_ = std::make_exception_ptr(DistributedError(
          who +
          " (so every collective between processes fails from now on: restart every process of the run)"));
      peer_error_ = true;
    }
    auto take = [&](Job& j, const std::string& what) {
      if (j.failed) return;
      j.failed = std::make_exception_ptr(DistributedError("collective " + what + ": " + who));
      for (auto& p : j.at)
        if (p) evs.push_back({p->ev, j.failed});
    };
    for (auto& [k, j] : assembling_) {
      std::string what;
      for (auto& p : j->at)
        if (p) what = p->op.str() + " over devices " + ids_str(j->group);
      take(*j, what);
    }
    for (auto& j : ready_) take(*j, ids_str(j->group));
    for (Job* j : posted_)
      if (j != finishing_) take(*j, j->what);
  }
  for (auto& [e, err] : evs) e.set_error(err);
}

// Sends the queued failure notices (under mu_). A send MPI refuses is dropped: the peers then
// find out at their deadline.
void MpiCommunicator::send_notices() {
  for (auto& [procs, h] : notify_)
    for (int q : procs) {
      sent_.push_back({h, {}});
      try {
        sent_.back().second = mpi_world::isend(&sent_.back().first, sizeof(WireHeader), q, 0);
      } catch (...) {
        sent_.pop_back();
      }
    }
  notify_.clear();
}

// Whether some request of j is still with MPI (its buffers must stay).
static bool in_flight(const Job& j) {
  for (auto& p : j.peers) {
    for (auto& r : p.recvs)
      if (r.active) return true;
    for (auto& r : p.sends)
      if (r.active) return true;
  }
  return false;
}

void MpiCommunicator::loop() {
  auto backoff = kFirstBackoff;
  bool hot = false;
  for (;;) {
    std::deque<std::unique_ptr<Job>> fresh;
    {
      std::unique_lock<std::mutex> lk(mu_);
      auto woken = [&] { return stop_ || !ready_.empty() || !notify_.empty(); };
      // Idle, the control channel is still polled, at most 50 ms apart.
      if (active_.empty()) cv_.wait_for(lk, std::max(backoff, std::chrono::microseconds(50000)), woken);
      else if (!hot) cv_.wait_for(lk, backoff, woken);
      send_notices();
      if (stop_) break;
      fresh.swap(ready_);
      for (auto& j : fresh) posted_.insert(j.get());
    }
    for (auto& j : fresh) {
      {
        std::lock_guard<std::mutex> lk(mu_);
        posting_ = j.get();  // reset() waits: post reads the members' buffers
      }
      try {
        post(*j);
      } catch (...) {
        fail(*j, std::current_exception());
      }
      {
        std::lock_guard<std::mutex> lk(mu_);
        posting_ = nullptr;
      }
      idle_cv_.notify_all();
      active_.push_back(std::move(j));
    }
    try {
      poll_control();
    } catch (...) {  // MPI refused the control receive: peers' failures are then seen at deadlines
    }
    bool progressed = false;
    hot = false;
    const auto now = Clock::now();
    for (auto& j : active_) {
      bool job_hot = false;
      progressed = poll(*j, job_hot) || progressed;
      const bool done = !in_flight(*j);
      bool failed;
      {
        std::lock_guard<std::mutex> lk(mu_);
        failed = j->failed != nullptr;
        if (done && !failed) finishing_ = j.get();
      }
      if (done && !failed) {
        finish(*j);
        std::lock_guard<std::mutex> lk(mu_);
        finishing_ = nullptr;
      } else if (!done) {
        if (!failed) check_deadline(*j, now);
        hot = hot || (job_hot && !failed);
      }
      if (failed && !done) fail(*j, nullptr);  // failed by abort() or a peer: cancel its receives
      if (done || failed) {
        std::lock_guard<std::mutex> lk(mu_);
        posted_.erase(j.get());
      }
    }
    idle_cv_.notify_all();
    // A failed job's requests may still be with MPI (a matched receive cannot be cancelled and
    // goes on writing; a send goes on reading): kept until MPI is done with each; a done one goes.
    for (auto& j : active_) {
      bool failed;
      {
        std::lock_guard<std::mutex> lk(mu_);
        failed = j->failed != nullptr;
      }
      if (failed && in_flight(*j)) abandoned_.push_back(std::move(j));
      else if (failed || !in_flight(*j)) j.reset();
    }
    active_.erase(std::remove(active_.begin(), active_.end(), nullptr), active_.end());
    for (auto& j : abandoned_) {
      std::string error;
      for (auto& p : j->peers) {
        for (auto& r : p.recvs) mpi_world::test(r, nullptr, &error);
        for (auto& r : p.sends) mpi_world::test(r, nullptr, &error);
      }
      if (!in_flight(*j)) j.reset();
    }
    abandoned_.erase(std::remove(abandoned_.begin(), abandoned_.end(), nullptr), abandoned_.end());
    backoff = progressed ? kFirstBackoff : std::min(backoff * 2, kLastBackoff);
    if (hot && !progressed) std::this_thread::yield();
  }
  stopped();
}

// After the loop: every collective not completed fails, and what MPI still holds is cancelled and
// released (its buffers are never freed: the process is leaving MPI).
void MpiCommunicator::stopped() {
  const auto stopped_err = [](const std::string& what) {
    return std::make_exception_ptr(
        DistributedError("collective " + what + ": mj::distributed::shutdown() or exit stopped it"));
  };
  for (auto& j : active_) fail(*j, stopped_err(j->what));
  std::vector<std::pair<Event, std::exception_ptr>> evs;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto take = [&](Job& j) {
      if (!j.failed) {
        j.failed = stopped_err(ids_str(j.group));
        for (auto& p : j.at)
          if (p) evs.push_back({p->ev, j.failed});
      }
    };
    for (auto& j : ready_) take(*j);
    for (auto& [k, j] : assembling_) take(*j);
  }
  for (auto& [e, err] : evs) e.set_error(err);
  mpi_world::cancel(control_recv_);
  for (auto* list : {&active_, &abandoned_})
    for (auto& j : *list) {
      for (auto& p : j->peers) {
        for (auto& r : p.recvs) mpi_world::release(r);
        for (auto& r : p.sends) mpi_world::release(r);
      }
      (void)j.release();  // leaked on purpose: MPI may hold its buffers until MPI_Finalize
    }
  for (auto& [h, r] : sent_) mpi_world::release(r);
  mpi_world::release(control_recv_);
}

void MpiCommunicator::abort(std::exception_ptr err, const std::vector<int>& context) {
  if (!err) err = std::make_exception_ptr(ValueError("communicator aborted"));
  local_.abort(err);
  std::vector<Event> evs;
  {
    std::lock_guard<std::mutex> lk(mu_);
    aborted_ = err;
    // The other processes of the failed program stop waiting for this one: they are told, unless
    // the failure came from one of them (then they know).
    std::set<int> others;
    for (int d : context)
      if (d >= 0 && detail::process_of_device(d) != self_) others.insert(detail::process_of_device(d));
    if (!others.empty() && err != broken_ && !peer_error_) {
      WireHeader h;
      h.process = self_;
      h.status = 1;
      set_text(h, text_of(err));
      notify_.push_back({std::vector<int>(others.begin(), others.end()), h});
      if (!broken_)
        broken_ = std::make_exception_ptr(DistributedError(
            "a program over devices of several processes failed on this process (" + std::string(h.text) +
            "), so the processes no longer agree on their collectives (restart every process of the run)"));
    }
    // Jobs not yet posted: their events fail now; posting sends the error to the peers.
    auto take = [&](Job& j) {
      if (j.failed) return;
      j.failed = err;
      for (auto& p : j.at)
        if (p) evs.push_back(p->ev);
    };
    for (auto& [k, j] : assembling_) {
      take(*j);
      ready_.push_back(std::move(j));
    }
    assembling_.clear();
    for (auto& j : ready_) take(*j);
    for (Job* j : posted_)
      if (j != finishing_) take(*j);
    cv_.notify_all();
  }
  for (auto& e : evs) e.set_error(err);
}

void MpiCommunicator::reset() {
  local_.reset();
  std::unique_lock<std::mutex> lk(mu_);
  aborted_ = nullptr;
  idle_cv_.wait(lk, [&] { return finishing_ == nullptr && posting_ == nullptr; });
}

void MpiCommunicator::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::unique_ptr<Communicator> make_mpi_communicator() {
  auto c = std::make_unique<MpiCommunicator>();
  std::lock_guard<std::mutex> g(g_instance_mu);
  g_instance = c.get();
  return c;
}

std::vector<std::string> exchange_texts(const std::string& text, const std::vector<int>& processes) {
  (void)communicator();  // made on first use: the MPI one after initialize()
  MpiCommunicator* c;
  {
    std::lock_guard<std::mutex> g(g_instance_mu);
    c = g_instance;
  }
  if (!c || processes.size() < 2) return std::vector<std::string>(processes.size(), text);
  const int l = num_devices() / process_count();
  std::vector<int> group;
  for (int p : processes) group.push_back(p * l);
  const int64_t words = int64_t((text.size() + 3) / 4) + 1;
  CollectiveOp op;
  op.kind = CollectiveKind::all_gather;
  op.dtype = DType::u32;
  op.shape = {words};
  std::vector<uint32_t> send(size_t(words), 0), recv(size_t(words) * processes.size(), 0);
  send[0] = uint32_t(text.size());
  std::memcpy(send.data() + 1, text.data(), text.size());
  CollectiveBuffers b;
  b.send = {{send.data(), int64_t(send.size() * 4)}};
  b.recv = recv.data();
  b.recv_bytes = int64_t(recv.size() * 4);
  c->start_control(op, process_index() * l, b, group).wait();
  std::vector<std::string> out;
  for (size_t k = 0; k < processes.size(); ++k) {
    const uint32_t* w = recv.data() + k * size_t(words);
    out.emplace_back(reinterpret_cast<const char*>(w + 1), std::min<size_t>(w[0], size_t(words - 1) * 4));
  }
  return out;
}

void stop_mpi_communicator() {
  std::lock_guard<std::mutex> g(g_instance_mu);
  if (g_instance) g_instance->stop();
}

}  // namespace minijax
