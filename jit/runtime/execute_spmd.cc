// minijax multi-device executor: checks, capacity checks, donation, buffers per device, the call's
// tasks on every device's compute queue (in call order), and the call's completion.
#include "jit/runtime/execute_spmd.h"
#include "jit/runtime/host_callback.h"

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <set>
#include <utility>

#include "core/allocator.h"
#include "core/config.h"
#include "core/device.h"
#include "core/errors.h"
#include "jit/runtime/abi.h"
#include "jit/runtime/communicator.h"
#include "jit/runtime/device_queue.h"
#include "jit/runtime/dnnl_ops.h"
#include "jit/runtime/gemm.h"
#include "jit/runtime/profiler.h"

namespace minijax {

namespace {

// Calls run one at a time, in dispatch order, on all devices: call k starts on a device once
// call k-1 has completed everywhere. Devices of a call therefore start its collectives in the
// same order, and an abort or reset of the communicator only touches the call that failed.
struct CallOrder {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t next_ticket = 1;  // under dispatch_mu
  uint64_t completed = 0;    // under mu
  std::mutex dispatch_mu;    // enqueueing one call on all its devices is atomic

  void wait_turn(uint64_t ticket) {
    std::unique_lock<std::mutex> g(mu);
    cv.wait(g, [&] { return completed + 1 == ticket; });
  }
  void complete(uint64_t ticket) {
    {
      std::lock_guard<std::mutex> g(mu);
      completed = ticket;
    }
    cv.notify_all();
  }
  // Blocks until every call dispatched so far has completed.
  void drain() {
    uint64_t last;
    {
      std::lock_guard<std::mutex> g(dispatch_mu);
      last = next_ticket - 1;
    }
    std::unique_lock<std::mutex> g(mu);
    cv.wait(g, [&] { return completed >= last; });
  }
};

CallOrder& call_order() {
  static auto* o = new CallOrder();  // outlives device threads at exit
  return *o;
}

// A program that returns from main (or calls std::exit) with calls still running would have its
// device threads run kernels while the libraries they call are destroyed. So exit drains the
// dispatched calls, from a handler registered with atexit. Handlers and static destructors run in
// the reverse order of their registration, so a drain runs before the destructors of what was
// constructed before it was registered, and after those of what came later. Two per compiled
// program (keyed by its LoadedExecutable, which the compile caches share, so bounded by the
// compilations, not by the calls nor by Lowered::compile() calls that hit a cache):
//  - at its first dispatch, after the GEMM libraries made on this thread what they create at
//    their first call (initialize_gemm_libraries): before this, a program that exited during its
//    first call destroyed what the call's device threads were using (the communicator: a heap
//    corruption at exit in about 1 run in 4 of a doc block, docs/sharding.md, ending with
//    `y = f(x)` not waited for; oneDNN's kernels: a crash in 39 runs in 40 of a matmul chain);
//  - after its first call completes: oneDNN frees the JIT'ed GEMM kernels a program's first run
//    created in static destructors registered during that run (a crash at exit in about 1 run in
//    5 of ShardedMlp.ValueAndGradEqualsTheUnshardedRun before this one existed).
// The runtime's own singletons used from device threads are never destroyed (device_queue.cc,
// copy_engine.cc, communicator.cc, allocator.cc), so no order of destruction can hurt them.
// (An executable freed and another compiled at its address gets no drains of its own: the earlier
// ones still drain every call, only their place among the destructors is older.)
enum class DrainMoment { kFirstDispatch, kFirstCompletion };
void register_exit_drain(const LoadedExecutable& exe, DrainMoment moment) {
  static auto* mu = new std::mutex();  // never destroyed: used from device threads
  static auto* registered = new std::set<std::pair<const LoadedExecutable*, DrainMoment>>();
  {
    std::lock_guard<std::mutex> g(*mu);
    if (!registered->insert({&exe, moment}).second) return;
  }
  std::atexit([] { call_order().drain(); });
}

// What one device runs: its buffers' addresses, the buffers kept alive until it has run, the
// events it waits for.
struct DeviceWork {
  std::vector<void*> in_ptrs, out_ptrs;
  void* arena_ptrs[3] = {nullptr, nullptr, nullptr};
  std::vector<std::shared_ptr<Buffer>> keep;  // inputs and arenas: freed when this device is done
  std::vector<ReadyEvent> wait_for;
  SpmdDeviceContext ctx;
};

// The state of one call shared by its device tasks.
struct CallState {
  std::shared_ptr<const SpmdExecutable> spmd;
  std::shared_ptr<SpmdCall> call;
  std::vector<DeviceWork> work;
  uint64_t ticket = 0;
  std::string fn;
  std::source_location loc;
  std::mutex mu;
  size_t remaining = 0;
  size_t first_local = 0;  // the first mesh position this process runs
  std::exception_ptr error;
};

std::string fn_name(const SpmdExecutable& s, const InputNames& names) {
  return "jit '" + std::string(names.function.empty() ? std::string_view(s.exe->name) : names.function) + "'";
}

// Per-device checks of the inputs; returns the buffers [position][input] (not waited for).
std::vector<std::vector<std::shared_ptr<Buffer>>> check_inputs(const SpmdExecutable& s,
                                                               const std::vector<std::vector<Array>>& inputs,
                                                               const std::string& fn, const InputNames& names,
                                                               std::source_location loc) {
  const LoadedExecutable& exe = *s.exe;
  const size_t n = s.mesh->num_devices(), n_in = exe.in_avals.size();
  if (inputs.size() != n)
    throw ValueError(fn + ": inputs for " + std::to_string(inputs.size()) + " devices, but " + s.mesh->str() +
                         " has " + std::to_string(n),
                     loc);
  std::vector<std::vector<std::shared_ptr<Buffer>>> bufs(n);
  for (size_t p = 0; p < n; ++p) {
    const int dev = s.mesh->device_ids[p];
    if (!detail::is_local_device(dev)) continue;  // another process runs it
    if (inputs[p].size() != n_in)
      throw TypeError(fn + " takes " + std::to_string(n_in) + " inputs, got " +
                          std::to_string(inputs[p].size()),
                      loc);
    for (size_t i = 0; i < n_in; ++i) {
      const Array& a = inputs[p][i];
      auto what = [&] { return names(i) + " (" + (a.defined() ? a.aval().str() : "empty") + ")"; };
      if (!a.defined() || !a.is_concrete() || a.is_sharded())
        throw TypeError(fn + ": the shard of " + what() + " for device " + std::to_string(dev) +
                            " is not a concrete local Array",
                        loc);
      if (!a.aval().same_type(exe.in_avals[i]))
        throw TypeError(fn + ": the shard of " + what() + " for device " + std::to_string(dev) +
                            " does not match the compiled program's " + exe.in_avals[i].str(),
                        loc);
      std::shared_ptr<Buffer> b = static_cast<const ConcreteArray*>(a.impl())->buffer_no_wait();
      if (b->donated())
        throw ValueError(fn + ": " + what() + " was donated to an earlier call and cannot be read", loc);
      if (b->device_id() != dev)
        throw ValueError(fn + ": the shard of " + what() + " for mesh position " + std::to_string(p) +
                             " is on device " + std::to_string(b->device_id()) + ", but " + s.mesh->str() +
                             " runs it on device " + std::to_string(dev),
                         loc);
      bufs[p].push_back(std::move(b));
    }
    for (size_t i = 0; i < n_in; ++i)
      if (exe.donated[i])
        for (size_t j = 0; j < n_in; ++j)
          if (j != i && bufs[p][j] == bufs[p][i])
            throw ValueError(fn + ": " + names(i) + " is donated and its buffer is also passed as " +
                                 names(j) + " (a donated buffer may be passed once per call)",
                             loc);
  }
  return bufs;
}

// The mesh positions whose devices this process drives (every position in a run of one process).
std::vector<size_t> local_positions(const Mesh& m) {
  std::vector<size_t> ps;
  for (size_t p = 0; p < m.num_devices(); ++p)
    if (detail::is_local_device(m.device_ids[p])) ps.push_back(p);
  return ps;
}

// ResourceExhaustedError when what the call allocates on a device (temporaries, fresh outputs)
// does not fit beside the bytes in use there.
void check_capacity(const SpmdExecutable& s, const std::string& fn, std::source_location loc) {
  const LoadedExecutable& exe = *s.exe;
  int64_t new_bytes[3] = {exe.arena_bytes[0], exe.arena_bytes[1], exe.arena_bytes[2]};
  std::string largest = "temporaries (arena)";
  int64_t largest_bytes = exe.arena_bytes[0];
  for (size_t k = 0; k < exe.out_avals.size(); ++k) {
    const OutputPlan& op = exe.outputs[k];
    if (op.kind != OutputPlan::fresh && op.kind != OutputPlan::literal) continue;
    const ShapedArray& av = exe.out_avals[k];
    new_bytes[size_t(av.memory_kind)] += av.nbytes();
    if (av.memory_kind == MemoryKind::device && av.nbytes() > largest_bytes) {
      largest = "output " + std::to_string(k) + " " + av.str();
      largest_bytes = av.nbytes();
    }
  }
  auto fail = [&](const std::string& where, int64_t in_use, int64_t need, int64_t cap) {
    throw ResourceExhaustedError(fn + ": " + where + " has " + std::to_string(in_use) +
                                     " B in use and the call " + "needs " + std::to_string(need) +
                                     " B more (largest buffer: " + largest + ", " +
                                     std::to_string(largest_bytes) + " B; planned peak " +
                                     std::to_string(exe.predicted_device_peak_bytes) +
                                     " B per device), past its capacity of " + std::to_string(cap) +
                                     " B (config().device_memory_bytes / host_memory_bytes); nothing ran",
                                 loc);
  };
  const int64_t dev_cap = config().device_memory_bytes, host_cap = config().host_memory_bytes;
  if (dev_cap > 0 && new_bytes[0] > 0)
    for (int id : s.mesh->device_ids) {
      if (!detail::is_local_device(id)) continue;
      const int64_t used = allocator().stats(id, MemoryKind::device).bytes_in_use;
      if (used + new_bytes[0] > dev_cap)
        fail("device " + std::to_string(id) + "'s device memory", used, new_bytes[0], dev_cap);
    }
  const std::vector<size_t> local = local_positions(*s.mesh);
  const int64_t host_new = (new_bytes[1] + new_bytes[2]) * int64_t(local.size());
  if (host_cap > 0 && host_new > 0) {
    const int dev0 =
        s.mesh->device_ids[local[0]];  // the host spaces are the process's: any device reports them
    const int64_t used = allocator().stats(dev0, MemoryKind::pinned_host).bytes_in_use +
                         allocator().stats(dev0, MemoryKind::unpinned_host).bytes_in_use;
    if (used + host_new > host_cap) fail("the process's host memory", used, host_new, host_cap);
  }
}

// Position p's fresh outputs, literal outputs and arenas (allocation may throw
// ResourceExhaustedError: nothing is donated yet).
void allocate_buffers(CallState& st, size_t p) {
  const LoadedExecutable& exe = *st.spmd->exe;
  const int dev = st.spmd->mesh->device_ids[p];
  std::vector<std::shared_ptr<Buffer>>& out = st.call->outputs[p];
  out.resize(exe.out_avals.size());
  for (size_t k = 0; k < out.size(); ++k) {
    const OutputPlan& op = exe.outputs[k];
    const ShapedArray& av = exe.out_avals[k];
    const bool hoisted = op.kind == OutputPlan::param && size_t(op.index) >= exe.in_avals.size();
    if (op.kind != OutputPlan::fresh && op.kind != OutputPlan::literal && !hoisted) continue;
    out[k] = std::make_shared<Buffer>(size_t(av.nbytes()), av.memory_kind, dev, Init::uninitialized);
    if (op.kind == OutputPlan::literal) std::memcpy(out[k]->data(), op.value.raw_data(), size_t(av.nbytes()));
    else if (hoisted) std::memcpy(out[k]->data(), st.work[p].in_ptrs[size_t(op.index)], size_t(av.nbytes()));
    else out[k]->set_ready_event(st.call->done);
  }
  DeviceWork& w = st.work[p];
  for (size_t k = 0; k < 3; ++k)
    if (exe.arena_bytes[k] > 0) {
      auto a = std::make_shared<Buffer>(size_t(exe.arena_bytes[k]), MemoryKind(k), dev, Init::uninitialized);
      w.arena_ptrs[k] = a->data();
      w.keep.push_back(std::move(a));
    }
}

// Position p's remaining outputs: inputs returned, donated inputs whose bytes an output takes
// over (the caller's Array is consumed), repeats; then every donated input is marked consumed.
void bind_outputs(CallState& st, size_t p, const std::vector<std::shared_ptr<Buffer>>& in) {
  const LoadedExecutable& exe = *st.spmd->exe;
  std::vector<std::shared_ptr<Buffer>>& out = st.call->outputs[p];
  std::vector<std::shared_ptr<Buffer>> taken(in.size());
  for (size_t k = 0; k < out.size(); ++k) {
    const OutputPlan& op = exe.outputs[k];
    if (op.kind == OutputPlan::param && size_t(op.index) < in.size()) out[k] = in[size_t(op.index)];
    if (op.kind == OutputPlan::same_as) out[k] = out[size_t(op.index)];
    if (op.kind == OutputPlan::donated_param) {
      const size_t src = size_t(op.index);
      if (!taken[src]) {
        taken[src] = Buffer::take(*in[src]);
        taken[src]->set_ready_event(st.call->done);
      }
      out[k] = taken[src];
    }
    st.work[p].out_ptrs.push_back(out[k]->data());
  }
  for (size_t i = 0; i < in.size(); ++i)
    if (exe.donated[i] && !taken[i]) in[i]->mark_donated();
}

// The per-collective traffic of the devices, merged into CollectiveStats (by execution order).
void merge_traffic(CallState& st) {
  const size_t n = st.work.size();
  const std::vector<size_t> local = local_positions(*st.spmd->mesh);
  size_t count = std::numeric_limits<size_t>::max();
  for (size_t p : local) count = std::min(count, st.work[p].ctx.traffic.size());
  for (size_t k = 0; k < count; ++k) {
    const int32_t site = st.work[local[0]].ctx.traffic[k].site;
    const CollectiveSite& s = st.spmd->sites[size_t(site)];
    CollectiveStats cs;
    const size_t id = size_t(s.site_id);  // the stable id: its top-level equation
    cs.eqn_index = s.site_id >= 0 && id < st.spmd->site_eqn_index.size() ? st.spmd->site_eqn_index[id]
                                                                         : std::numeric_limits<size_t>::max();
    cs.primitive = s.primitive;
    cs.axes = s.axes;
    cs.bytes_sent.resize(n);
    cs.bytes_received.resize(n);
    for (size_t p : local) {  // other processes' positions count 0 here
      cs.bytes_sent[p] = st.work[p].ctx.traffic[k].moved.bytes_sent;
      cs.bytes_received[p] = st.work[p].ctx.traffic[k].moved.bytes_received;
    }
    st.call->collectives.push_back(std::move(cs));
  }
}

// Device p's part of the call, on its compute thread.
void run_on_device(const std::shared_ptr<CallState>& st, size_t p) {
  call_order().wait_turn(st->ticket);
  DeviceWork& w = st->work[p];
  std::exception_ptr err;
  try {
    for (auto& e : w.wait_for) e.wait();
    set_spmd_context(&w.ctx);
    {
      profiler::detail::KernelSitesScope sites(&st->spmd->exe->kernel_sites);
      profiler::detail::Scope trace("call", "call");
      if (trace.active()) {
        trace.set_name(st->fn);
        trace.set_args(profiler::detail::Args()
                           .add("device", w.ctx.device_id)
                           .add("mesh_position", int64_t(p))
                           .add("program", st->spmd->exe->name)
                           .take());
      }
      // The host functions see whole values (their operands are replicated): the mesh's first
      // device of this process calls them, once per call of the program in each process.
      HostCallbacksScope callbacks(st->spmd->exe->host_callbacks, p == st->first_local);
      DnnlScope dnnl(st->spmd->exe->dnnl.get());
      st->spmd->exe->entry(w.in_ptrs.data(), w.out_ptrs.data(), w.arena_ptrs);
      callbacks.rethrow_if_failed();
    }
    set_spmd_context(nullptr);
    std::string rt = take_runtime_error();
    if (w.ctx.error) err = w.ctx.error;
    else if (!rt.empty())
      err = std::make_exception_ptr(
          ValueError(st->fn + " failed on device " + std::to_string(w.ctx.device_id) + ": " + rt, st->loc));
  } catch (...) {
    set_spmd_context(nullptr);
    err = std::current_exception();
  }
  if (err) communicator().abort(err, st->spmd->mesh->device_ids);
  w.wait_for.clear();
  std::unique_lock<std::mutex> g(st->mu);
  if (err && !st->error) st->error = err;
  if (--st->remaining > 0) return;
  g.unlock();
  // The inputs and arenas are freed only now: after an abort the communicator thread may still
  // be copying a collective of this call into or out of them until reset() returns.
  if (st->error) communicator().reset();
  else merge_traffic(*st);
  for (DeviceWork& d : st->work) d.keep.clear();
  register_exit_drain(*st->spmd->exe, DrainMoment::kFirstCompletion);
  if (st->error) st->call->done.set_error(st->error);
  else st->call->done.set();
  call_order().complete(st->ticket);
}

}  // namespace

void drain_spmd_calls() { call_order().drain(); }

std::shared_ptr<const SpmdExecutable> bind_spmd_executable(std::shared_ptr<const LoadedExecutable> exe,
                                                           std::shared_ptr<const Mesh> mesh,
                                                           std::vector<size_t> site_eqn_index,
                                                           std::source_location loc) {
  auto s = std::make_shared<SpmdExecutable>();
  s->sites = bind_collective_sites(exe->collective_sites, *mesh, loc);
  s->exe = std::move(exe);
  s->mesh = std::move(mesh);
  s->site_eqn_index = std::move(site_eqn_index);
  return s;
}

std::shared_ptr<SpmdCall> execute_spmd(const std::shared_ptr<const SpmdExecutable>& spmd,
                                       const std::vector<std::vector<Array>>& inputs,
                                       std::source_location loc, const InputNames& names) {
  const LoadedExecutable& exe = *spmd->exe;
  initialize_gemm_libraries();  // before the drain (register_exit_drain); before any claim: may throw
  register_exit_drain(exe, DrainMoment::kFirstDispatch);
  const std::string fn = fn_name(*spmd, names);
  const size_t n = spmd->mesh->num_devices(), n_in = exe.in_avals.size();
  const std::vector<size_t> local = local_positions(*spmd->mesh);
  auto st = std::make_shared<CallState>();
  st->spmd = spmd;
  st->call = std::make_shared<SpmdCall>();
  st->call->outputs.resize(n);
  if (local.empty()) {  // a mesh of other processes' devices only: nothing runs here
    st->call->done.set();
    return st->call;
  }
  std::vector<std::vector<std::shared_ptr<Buffer>>> in = check_inputs(*spmd, inputs, fn, names, loc);
  check_capacity(*spmd, fn, loc);
  // Every local device's queue before anything is claimed (an id beyond the configured count
  // throws here, not after a ticket is taken, which would stall every later call). Positions of
  // other processes' devices run there.
  std::vector<DeviceQueue*> queues(n, nullptr);
  for (size_t p : local) queues[p] = &compute_queue(spmd->mesh->device_ids[p]);
  // Donated shards are claimed atomically before anything is allocated or enqueued; a call that
  // fails before it is enqueued releases its claims, so the caller's Arrays stay readable.
  DonationClaims claims;
  for (size_t p : local)
    for (size_t i = 0; i < n_in; ++i)
      if (exe.donated[i] && !claims.claim(in[p][i].get()))
        throw ValueError(fn + ": " + names(i) + " was donated to another call and cannot be read", loc);
  st->work.resize(n);
  st->fn = fn;
  st->loc = loc;
  st->remaining = local.size();
  st->first_local = local[0];
  for (size_t p : local) {
    DeviceWork& w = st->work[p];
    w.ctx.device_id = spmd->mesh->device_ids[p];
    w.ctx.position = p;
    w.ctx.sites = &spmd->sites;
    w.ctx.program = &exe.name;
    for (auto& b : in[p]) {
      w.in_ptrs.push_back(b->data());
      if (!b->ready().is_ready() || b->ready().error()) w.wait_for.push_back(b->ready());
      w.keep.push_back(b);
    }
    for (const Array& c : exe.hoisted_consts) w.in_ptrs.push_back(hoisted_data(c));  // shared, read-only
  }
  for (size_t p : local) allocate_buffers(*st, p);  // may throw ResourceExhaustedError
  claims.commit();
  for (size_t p : local) bind_outputs(*st, p, in[p]);
  CallOrder& order = call_order();
  std::lock_guard<std::mutex> g(order.dispatch_mu);
  st->ticket = order.next_ticket++;
  for (size_t p : local) queues[p]->enqueue([st, p] { run_on_device(st, p); });
  return st->call;
}

}  // namespace minijax
