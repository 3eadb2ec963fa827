// minijax sharded jit, compiled: the SPMD program of a sharded lowering compiled once and bound to
// its mesh, its calls on every device (execute_spmd), and the capacity checks compile() makes.

#include "core/config.h"
#include "core/errors.h"
#include "jit/jit.h"
#include "jit/runtime/execute_spmd.h"
#include "sharding/sharded_array.h"

namespace minijax::detail {

namespace {

// The largest buffer of the compiled program in device memory (host = false) or in a host memory
// (an input, an output or a temporary of the top level), for capacity errors:
// "f32[1024,1024] (output of dot_general)".
std::string largest_buffer(const Executable& exe, int64_t& bytes, bool host = false) {
  std::string name = "none";
  bytes = 0;
  auto consider = [&](const Var& v, const std::string& what) {
    const ShapedArray& a = v.aval();
    if ((a.memory_kind != MemoryKind::device) != host || a.nbytes() <= bytes) return;
    bytes = a.nbytes();
    name = a.str() + " (" + what + ")";
  };
  for (size_t i = 0; i < exe.program.invars.size(); ++i) consider(exe.program.invars[i], "input " + std::to_string(i));
  for (const Eqn& e : exe.program.eqns)
    for (const Var& v : e.outputs) consider(v, "output of " + e.primitive->name);
  return name;
}

}  // namespace

void check_compiled_capacity(const Executable& exe, size_t num_devices, std::source_location loc) {
  const int64_t dev_cap = config().device_memory_bytes, host_cap = config().host_memory_bytes;
  const int64_t dev_peak = exe.memory.peak_bytes(MemoryKind::device);
  const int64_t host_peak = (exe.memory.peak_bytes(MemoryKind::pinned_host) +
                             exe.memory.peak_bytes(MemoryKind::unpinned_host)) *
                            int64_t(num_devices);
  if (dev_cap > 0 && dev_peak > dev_cap) {
    int64_t bytes = 0;
    std::string big = largest_buffer(exe, bytes);
    throw ResourceExhaustedError("compile '" + exe.name + "': its predicted peak of " + std::to_string(dev_peak) +
                                     " B of device memory per device exceeds the capacity of " +
                                     std::to_string(dev_cap) +
                                     " B (config().device_memory_bytes); largest buffer: " + big + ", " +
                                     std::to_string(bytes) + " B",
                                 loc);
  }
  if (host_cap > 0 && host_peak > host_cap) {
    int64_t bytes = 0;
    std::string big = largest_buffer(exe, bytes, true);
    throw ResourceExhaustedError("compile '" + exe.name + "': its predicted peak of " + std::to_string(host_peak) +
                                     " B of host memory (pinned_host and unpinned_host, all " +
                                     std::to_string(num_devices) + " devices) exceeds the capacity of " +
                                     std::to_string(host_cap) + " B (config().host_memory_bytes); largest host buffer: " +
                                     big + ", " + std::to_string(bytes) + " B; nothing ran",
                                 loc);
  }
}

std::shared_ptr<const SpmdExecutable> compile_sharded(const LoweredProgram& low, const JitOptions& opts,
                                                      const std::vector<bool>& donated, std::source_location loc,
                                                      std::shared_ptr<const Executable>* exe) {
  std::shared_ptr<const Executable> compiled = compile_lowering(low, opts, donated, true, loc);
  if (exe) *exe = compiled;
  return bind_spmd_executable(loaded_of(compiled), low.mesh, low.site_eqn_index, loc);
}

std::vector<Array> run_sharded(const std::shared_ptr<const LoweredProgram>& lowered,
                               const std::shared_ptr<const SpmdExecutable>& spmd,
                               const std::vector<Array>& operands, const InputNames& names,
                               std::shared_ptr<SpmdRun>* run, std::source_location loc) {
  const LoweredProgram& low = *lowered;
  check_mesh_devices(*low.mesh, loc);
  if (operands.size() != low.in_shardings.size())
    throw ValueError("jit: " + std::to_string(operands.size()) + " operands for a program of " +
                         std::to_string(low.in_shardings.size()) + " inputs",
                     loc);
  const size_t n = low.mesh->num_devices();
  std::vector<std::vector<Array>> dev(n);
  for (size_t k = 0; k < operands.size(); ++k) {
    std::vector<Array> shards = local_shards(operands[k], low.in_shardings[k], loc);
    for (size_t p = 0; p < n; ++p) dev[p].push_back(std::move(shards[p]));
  }
  std::shared_ptr<SpmdCall> call = execute_spmd(spmd, dev, loc, names);
  const LoadedExecutable& exe = *spmd->exe;
  const std::vector<ShapedArray> out_avals = low.jaxpr->jaxpr->out_avals();
  auto r = std::make_shared<SpmdRun>();
  r->lowered = lowered;
  r->call = call;
  r->outputs.resize(n);
  std::vector<Array> outs;
  for (size_t k = 0; k < exe.out_avals.size(); ++k) {
    std::vector<Array> shards;
    for (size_t p = 0; p < n; ++p) {
      shards.push_back(Array::from_buffer(exe.out_avals[k], call->outputs[p][k]));
      r->outputs[p].push_back(shards.back());
    }
    outs.push_back(make_sharded_array(out_avals[k], low.out_shardings[k], std::move(shards), loc));
  }
  if (run) *run = std::move(r);
  return outs;
}

std::shared_ptr<const SpmdRun> finished_run(const std::shared_ptr<const SpmdRun>& run) {
  if (!run || !run->call) return run;
  try {
    run->call->done.wait();
  } catch (...) {  // a failed call: its error reached the caller's reads; no statistics
    return run;
  }
  auto r = std::make_shared<SpmdRun>(*run);
  r->stats.collectives = run->call->collectives;
  r->call = nullptr;
  return r;
}

}  // namespace minijax::detail
