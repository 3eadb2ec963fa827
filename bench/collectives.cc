// minijax bench: the in-process communicator's all_reduce / all_gather / all_to_all over 8 device
// threads against a memcpy of the same bytes, and the compiled data-parallel MLP step on 1-8 devices.
//
// Usage: minijax_bench_collectives [--min-reps R (3)] [--big-reps R (3): reps at >= 64 MiB]
//                                  [--target-ms T (200)] [--max-kib K (65536)]
//                                  [--recv-cap-mib M (2048)] [--steps N (200)] [--warmup W (20)]
//                                  [--mlp-devices LIST (1,2,4,8)] [--skip-comm] [--skip-mlp]
// Communicator ("communicator"): for each collective (all_reduce sum f32, all_gather tiled dim 0,
// all_to_all split/concat dim 0) over the group {0..7} and each per-device payload of 4 KiB..64 MiB
// (f32[payload/4] sent by every device), 8 persistent std::threads (one per device id, created
// once, so thread creation is not timed) are released together through a condition variable;
// each builds its CollectiveBuffers, calls minijax::communicator().start and waits on the Event.
// One collective's time runs from the release to the last thread's return (median of the reps
// after one untimed warm-up; reps: enough for target-ms, at least min-reps, big-reps at >= 64 MiB).
// "bytes" is what the communicator counted: the sum over the 8 devices of
// collective_stats(d).bytes_received over the timed reps, divided by the reps (not a formula).
// The reference, measured in the same run after the collective's buffers are freed: a
// single-threaded std::memcpy of those bytes between two pre-faulted buffers (median, one warm-up).
// Sizes whose 8 receive buffers together exceed recv-cap-mib are skipped and listed with the reason.
// MLP ("mlp"): jit(value_and_grad + SGD) of 784-256-10 (relu, softmax cross-entropy), batch 256, on
// a mesh Mesh('data': d) of devices 0..d-1 for each d of --mlp-devices, in order, in one process:
// x P('data', None), y P('data'), parameters and loss replicated P(); arguments put onto their
// shardings before timing. ms/step:
// median of `steps` calls after `warmup`, each up to block_until_ready on the loss and parameters.
// "unsharded" is the same step as plain jit on one device. An error of one count is reported as
// its "error" and the next count runs.
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>

#include <minijax/minijax.h>

#include "bench/bench_common.h"
#include "jit/runtime/communicator.h"

namespace mjbench_collectives {
/// The benchmark's model: 784 -> 256 (relu) -> 10.
struct Mlp {
  mj::Array w1, b1, w2, b2;
};
}  // namespace mjbench_collectives
MJ_REGISTER_PYTREE(mjbench_collectives::Mlp, w1, b1, w2, b2)

namespace {

using mjbench::Json;
using mjbench_collectives::Mlp;

constexpr int kDevices = 8;
constexpr int64_t kKiB = 1024, kMiB = 1024 * 1024;

// --- the communicator -------------------------------------------------------------------------

/// kDevices persistent threads, one per device id, released together for each round.
class DeviceTeam {
 public:
  DeviceTeam() {
    for (int d = 0; d < kDevices; ++d) threads_.emplace_back([this, d] { loop(d); });
  }
  ~DeviceTeam() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    go_.notify_all();
    for (auto& t : threads_) t.join();
  }
  /// Runs body(device) on every device's thread at once; returns the seconds from the release to
  /// the last return. Rethrows the first device's error.
  double run(const std::function<void(int)>& body) {
    std::unique_lock<std::mutex> l(mu_);
    body_ = &body;
    done_ = 0;
    errors_.assign(kDevices, nullptr);
    ++round_;
    const auto t0 = mjbench::clock_type::now();
    go_.notify_all();
    done_cv_.wait(l, [&] { return done_ == kDevices; });
    const double t = mjbench::seconds_since(t0);
    for (auto& e : errors_)
      if (e) std::rethrow_exception(e);
    return t;
  }

 private:
  void loop(int d) {
    int64_t seen = 0;
    std::unique_lock<std::mutex> l(mu_);
    while (true) {
      go_.wait(l, [&] { return stop_ || round_ != seen; });
      if (stop_) return;
      seen = round_;
      const auto* body = body_;
      l.unlock();
      std::exception_ptr err;
      try {
        (*body)(d);
      } catch (...) {
        err = std::current_exception();
      }
      l.lock();
      errors_[size_t(d)] = err;
      if (++done_ == kDevices) done_cv_.notify_one();
    }
  }
  std::mutex mu_;
  std::condition_variable go_, done_cv_;
  const std::function<void(int)>* body_ = nullptr;
  int64_t round_ = 0;
  int done_ = 0;
  bool stop_ = false;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;
};

struct Reps {
  int min_reps = 3, big_reps = 3;
  double target_s = 0.2;
  /// How many timed reps for a call that took `one` seconds at `bytes` per device.
  int count(double one, int64_t bytes) const {
    if (bytes >= 64 * kMiB) return big_reps;
    return std::max(min_reps, int(std::ceil(target_s / std::max(one, 1e-7))));
  }
};

const char* kind_name(mj::CollectiveKind k) { return mj::collective_kind_name(k); }

mj::CollectiveOp make_op(mj::CollectiveKind kind, int64_t bytes) {
  mj::CollectiveOp op;
  op.kind = kind;
  op.dtype = mj::DType::f32;
  op.shape = {bytes / 4};
  op.gather_dimension = 0;
  op.tiled = true;
  op.reduction = "sum";
  op.split_dimension = op.concat_dimension = 0;
  return op;
}

int64_t recv_bytes_of(const mj::CollectiveOp& op) {
  int64_t n = 4;
  for (int64_t s : op.result_shape(kDevices)) n *= s;
  return n;
}

/// Single-threaded memcpy of `bytes` between two pre-faulted buffers, reps as for a collective
/// of `payload` bytes per device.
mjbench::Stats time_memcpy(int64_t bytes, int64_t payload, const Reps& reps) {
  std::unique_ptr<char[]> src(new char[size_t(bytes)]), dst(new char[size_t(bytes)]);
  std::memset(src.get(), 1, size_t(bytes));
  std::memset(dst.get(), 0, size_t(bytes));
  auto copy = [&] { std::memcpy(dst.get(), src.get(), size_t(bytes)); };
  const double one = mjbench::stats(mjbench::time_calls(0, 1, copy)).median;
  auto s = mjbench::stats(mjbench::time_calls(0, reps.count(one, payload), copy));
  volatile char sink = dst[size_t(bytes) - 1];
  (void)sink;
  return s;
}

/// Whether device 0's result holds what the collective of the senders' values (1 + device) gives.
bool result_ok(mj::CollectiveKind kind, const float* recv, int64_t elems) {
  if (kind == mj::CollectiveKind::all_reduce) return recv[0] == float(kDevices * (kDevices + 1) / 2);
  // all_gather: sender k's f32[elems] at k * elems; all_to_all: its first piece at k * elems / 8.
  const int64_t stride = kind == mj::CollectiveKind::all_gather ? elems : elems / kDevices;
  for (int k = 0; k < kDevices; ++k)
    if (recv[k * stride] != float(1 + k)) return false;
  return true;
}

/// One collective at one payload: timed, counted, checked, then its memcpy reference.
std::string measure_collective(DeviceTeam& team, mj::CollectiveKind kind, int64_t bytes, const Reps& reps) {
  const mj::CollectiveOp op = make_op(kind, bytes);
  const int64_t recv_bytes = recv_bytes_of(op), elems = bytes / 4;
  std::vector<std::unique_ptr<float[]>> send, recv;
  for (int d = 0; d < kDevices; ++d) {
    send.emplace_back(new float[size_t(elems)]);
    std::fill(send.back().get(), send.back().get() + elems, float(1 + d));
    recv.emplace_back(new float[size_t(recv_bytes / 4)]);
    std::memset(recv.back().get(), 0, size_t(recv_bytes));
  }
  std::vector<int> group(kDevices);
  for (int d = 0; d < kDevices; ++d) group[size_t(d)] = d;
  const std::function<void(int)> body = [&](int d) {
    mj::CollectiveBuffers b;
    b.send.push_back({send[size_t(d)].get(), bytes});
    b.recv = recv[size_t(d)].get();
    b.recv_bytes = recv_bytes;
    mj::communicator().start(op, d, b, group).wait();
  };
  const double warm = team.run(body);
  const int n = reps.count(warm, bytes);
  mj::reset_collective_stats();
  std::vector<double> times;
  for (int r = 0; r < n; ++r) times.push_back(team.run(body));
  int64_t received = 0, sent = 0, messages = 0;
  for (int d = 0; d < kDevices; ++d) {
    const auto c = mj::collective_stats(d);
    received += c.bytes_received, sent += c.bytes_sent, messages += c.messages;
  }
  const bool ok = result_ok(kind, recv[0].get(), elems);
  send.clear(), recv.clear();
  const auto s = mjbench::stats(times);
  const int64_t per_call = received / n;
  const auto m = per_call > 0 ? time_memcpy(per_call, bytes, reps) : mjbench::Stats{};
  Json j;
  j.str("kind", kind_name(kind)).integer("bytes_per_device", bytes).integer("recv_bytes_per_device", recv_bytes);
  j.integer("reps", n).num("median_s", s.median).num("min_s", s.min).num("max_s", s.max);
  j.integer("bytes_received_per_call", per_call).integer("bytes_sent_per_call", sent / n);
  j.integer("messages_per_call", messages / n);
  j.num("comm_bytes_per_s", double(per_call) / s.median);
  j.integer("memcpy_reps", int64_t(m.n)).num("memcpy_median_s", m.median);
  const double mbps = m.median > 0 ? double(per_call) / m.median : 0;
  j.num("memcpy_bytes_per_s", mbps).num("ratio_comm_to_memcpy", mbps > 0 ? double(per_call) / s.median / mbps : 0);
  j.boolean("result_checked_ok", ok);
  return j.text();
}

/// The "communicator" object: every kind and size, and the skipped ones with their reason.
std::string bench_communicator(const Reps& reps, int64_t max_bytes, int64_t recv_cap) {
  DeviceTeam team;
  std::string rows, skipped;
  const mj::CollectiveKind kinds[] = {mj::CollectiveKind::all_reduce, mj::CollectiveKind::all_gather,
                                      mj::CollectiveKind::all_to_all};
  for (auto kind : kinds) {
    for (int64_t bytes = 4 * kKiB; bytes <= max_bytes; bytes *= 4) {
      const int64_t recv_total = kDevices * recv_bytes_of(make_op(kind, bytes));
      if (recv_total > recv_cap) {
        Json k;
        k.str("kind", kind_name(kind)).integer("bytes_per_device", bytes).integer("recv_bytes_total", recv_total);
        k.str("reason", "receive buffers " + std::to_string(kDevices) + " devices x " +
                            std::to_string(recv_total / kDevices / kMiB) + " MiB = " +
                            std::to_string(recv_total / kMiB) + " MiB exceed the cap of " +
                            std::to_string(recv_cap / kMiB) + " MiB");
        skipped += (skipped.empty() ? "" : ",") + k.text();
        continue;
      }
      std::string row;
      try {
        row = measure_collective(team, kind, bytes, reps);
      } catch (const std::exception& e) {
        Json k;
        k.str("kind", kind_name(kind)).integer("bytes_per_device", bytes).str("error", e.what());
        row = k.text();
        mj::communicator().reset();
      }
      rows += (rows.empty() ? "" : ",") + row;
      std::fprintf(stderr, "collectives: %s\n", row.c_str());
    }
  }
  Json j;
  j.integer("devices", kDevices).str("group", "0..7").str("dtype", "f32");
  j.raw("results", "[" + rows + "]").raw("skipped", "[" + skipped + "]");
  return j.text();
}

// --- the sharded MLP step ---------------------------------------------------------------------

constexpr int64_t kBatch = 256, kIn = 784, kHidden = 256, kOut = 10;

Mlp init_params() {
  auto key = [](uint32_t i) { return mj::random::PRNGKey(i); };
  const double b1 = 1.0 / std::sqrt(double(kIn)), b2 = 1.0 / std::sqrt(double(kHidden));
  return Mlp{mj::random::uniform(key(1), {kIn, kHidden}, mj::f32, -b1, b1),
             mj::random::uniform(key(2), {kHidden}, mj::f32, -b1, b1),
             mj::random::uniform(key(3), {kHidden, kOut}, mj::f32, -b2, b2),
             mj::random::uniform(key(4), {kOut}, mj::f32, -b2, b2)};
}

mj::Array loss_fn(const Mlp& p, const mj::Array& x, const mj::Array& y) {
  mj::Array h = mj::relu(mj::matmul(x, p.w1) + p.b1);
  mj::Array logp = mj::log_softmax(mj::matmul(h, p.w2) + p.b2, 1);
  return -mj::mean(mj::sum(logp * mj::one_hot(y, kOut), 1));
}

std::tuple<mj::Array, Mlp> sgd_step(const Mlp& p, const mj::Array& x, const mj::Array& y) {
  auto [loss, g] = mj::value_and_grad(loss_fn)(p, x, y);
  const float lr = 0.1f;
  return {loss, Mlp{p.w1 - g.w1 * lr, p.b1 - g.b1 * lr, p.w2 - g.w2 * lr, p.b2 - g.b2 * lr}};
}

struct MlpInputs {
  Mlp params;
  mj::Array x, y;
};

/// Times `step` (a jit of sgd_step) from `in`: first call, warm-up, then `steps` timed calls.
template <class J>
void time_steps(const J& step, MlpInputs in, int warmup, int steps, Json& j) {
  auto call = [&] {
    auto [loss, next] = step(in.params, in.x, in.y);
    mj::block_until_ready(loss);
    mj::block_until_ready(next);
    in.params = next;
    return loss;
  };
  const auto t0 = mjbench::clock_type::now();
  const double loss0 = call().template item<double>();
  j.num("first_call_ms", mjbench::seconds_since(t0) * 1e3).num("loss_first", loss0);
  for (int i = 0; i < warmup; ++i) call();
  mj::Array last;
  auto s = mjbench::stats(mjbench::time_calls(0, steps, [&] { last = call(); }));
  j.stats_ms("step", s).num("loss_last", last.item<double>());
}

/// One device count: the mesh, the shardings, the jit; errors reported, not thrown.
std::string bench_mlp_on(int d, const MlpInputs& host, int warmup, int steps) {
  Json j;
  j.integer("devices", d);
  try {
    std::vector<int> ids(static_cast<size_t>(d));
    for (int i = 0; i < d; ++i) ids[size_t(i)] = i;
    auto mesh = std::make_shared<const mj::Mesh>(ids, mj::Shape{d}, std::vector<std::string>{"data"});
    j.str("mesh", mesh->str());
    auto ns = [&](mj::P spec) { return mj::NamedSharding{mesh, std::move(spec), mj::MemoryKind::device}; };
    const auto rep = ns(mj::P()), rows = ns(mj::P("data", mj::None{})), vec = ns(mj::P("data"));
    mj::JitOptions o;
    o.name = "collectives_mlp_step";
    o.in_shardings = {rep, rep, rep, rep, rows, vec};
    o.out_shardings = {rep, rep, rep, rep, rep};
    auto step = mj::jit([](const Mlp& p, const mj::Array& x, const mj::Array& y) { return sgd_step(p, x, y); }, o);
    const Mlp& p = host.params;
    MlpInputs in{Mlp{mj::device_put(p.w1, rep), mj::device_put(p.b1, rep), mj::device_put(p.w2, rep),
                     mj::device_put(p.b2, rep)},
                 mj::device_put(host.x, rows), mj::device_put(host.y, vec)};
    time_steps(step, in, warmup, steps, j);
    if (auto run = step.last_run()) {
      int64_t max_recv = 0;
      for (auto& c : run->stats.collectives)
        if (!c.bytes_received.empty()) max_recv += *std::max_element(c.bytes_received.begin(), c.bytes_received.end());
      j.integer("collectives_per_step", int64_t(run->stats.collectives.size()));
      j.integer("max_bytes_received_per_device_per_step", max_recv);
      j.str("collectives_text", mj::collectives_text(run->stats, run->lowered->program));
    }
  } catch (const std::exception& e) {
    j.str("error", e.what());
    std::fprintf(stderr, "collectives: mlp on %d devices: %s\n", d, e.what());
  }
  return j.text();
}

/// The "mlp" object: the unsharded step, then each device count of `counts` in order.
std::string bench_mlp(const std::vector<int>& counts, int warmup, int steps) {
  MlpInputs host{init_params(), mj::random::uniform(mj::random::PRNGKey(5), {kBatch, kIn}),
                 mj::random::randint(mj::random::PRNGKey(6), {kBatch}, 0, kOut)};
  Json unsharded;
  try {
    auto step = mj::jit([](const Mlp& p, const mj::Array& x, const mj::Array& y) { return sgd_step(p, x, y); },
                        "collectives_mlp_step_unsharded");
    time_steps(step, host, warmup, steps, unsharded);
  } catch (const std::exception& e) {
    unsharded.str("error", e.what());
  }
  std::string rows;
  for (int d : counts) {
    rows += (rows.empty() ? "" : ",") + bench_mlp_on(d, host, warmup, steps);
    std::fprintf(stderr, "collectives: mlp %d devices done\n", d);
  }
  Json j;
  j.str("model", "784-256-10").integer("batch", kBatch).str("update", "SGD lr 0.1");
  j.str("sharding", "x P('data', None), y P('data'), params and loss P()");
  j.integer("steps", steps).integer("warmup", warmup);
  j.raw("unsharded", unsharded.text()).raw("sharded", "[" + rows + "]");
  j.str("note", "every virtual device runs on the same host CPUs: with 2 cores, splitting the batch "
                "over more devices cannot make the step faster (the same FLOPs plus collectives)");
  return j.text();
}

/// "1,2,4,8" -> {1, 2, 4, 8}; each count must be 1..8.
std::vector<int> parse_counts(const std::string& text) {
  std::vector<int> out;
  for (size_t pos = 0; pos < text.size();) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const int d = std::atoi(text.substr(pos, comma - pos).c_str());
    if (d < 1 || d > kDevices) {
      std::fprintf(stderr, "minijax_bench_collectives: --mlp-devices: bad count in '%s'\n", text.c_str());
      std::exit(2);
    }
    out.push_back(d);
    pos = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  mjbench::Args args(argc, argv,
                     "usage: minijax_bench_collectives [--min-reps R] [--big-reps R] [--target-ms T] "
                     "[--max-kib K] [--recv-cap-mib M] [--steps N] [--warmup W] [--mlp-devices LIST] [--skip-comm] [--skip-mlp]");
  Reps reps;
  reps.min_reps = args.integer("min-reps", 3);
  reps.big_reps = args.integer("big-reps", 3);
  reps.target_s = args.integer("target-ms", 200) / 1e3;
  const int64_t max_bytes = int64_t(args.integer("max-kib", 65536)) * kKiB;
  const int64_t recv_cap = int64_t(args.integer("recv-cap-mib", 2048)) * kMiB;
  const int steps = args.integer("steps", 200), warmup = args.integer("warmup", 20);
  const bool skip_comm = args.flag("skip-comm"), skip_mlp = args.flag("skip-mlp");
  const std::vector<int> counts = parse_counts(args.string("mlp-devices", "1,2,4,8"));
  args.check();
  mjbench::Environment env;
  try {
    mj::set_num_devices(kDevices);
    Json j;
    j.str("name", "collectives");
    if (!skip_comm) j.raw("communicator", bench_communicator(reps, max_bytes, recv_cap));
    if (!skip_mlp) j.raw("mlp", bench_mlp(counts, warmup, steps));
    env.add_to(j);
    std::printf("%s\n", j.text().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minijax_bench_collectives: %s\n", e.what());
    return 1;
  }
  return 0;
}
