// minijax jit's flow behind its core: shardings resolved, a signature lowered (propagated and
// partitioned, or not), compiled with its capacity checks, run on one device or on every device of a mesh.
#include "jit/sharded_call.h"

#include <set>
#include <sstream>

#include "core/config.h"
#include "core/device.h"
#include "core/errors.h"
#include "core/staging.h"
#include "core/views/collectives.h"
#include "core/views/control_flow.h"
#include "core/views/memory_ops.h"
#include "jit/caches.h"
#include "jit/compile_cache.h"
#include "jit/passes/cost_analysis.h"
#include "jit/pipeline.h"
#include "jit/runtime/execute_spmd.h"
#include "jit/runtime/mpi_communicator.h"
#include "memory/plan_buffers.h"
#include "sharding/collective_traffic.h"
#include "sharding/plan_reshard.h"
#include "sharding/sharded_array.h"
#include "sharding/sharding_dot.h"

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
  for (size_t i = 0; i < exe.program.invars.size(); ++i)
    consider(exe.program.invars[i], "input " + std::to_string(i));
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
    throw ResourceExhaustedError(
        "compile '" + exe.name + "': its predicted peak of " + std::to_string(dev_peak) +
            " B of device memory per device exceeds the capacity of " + std::to_string(dev_cap) +
            " B (config().device_memory_bytes); largest buffer: " + big + ", " + std::to_string(bytes) + " B",
        loc);
  }
  if (host_cap > 0 && host_peak > host_cap) {
    int64_t bytes = 0;
    std::string big = largest_buffer(exe, bytes, true);
    throw ResourceExhaustedError("compile '" + exe.name + "': its predicted peak of " +
                                     std::to_string(host_peak) +
                                     " B of host memory (pinned_host and unpinned_host, all " +
                                     std::to_string(num_devices) + " devices) exceeds the capacity of " +
                                     std::to_string(host_cap) +
                                     " B (config().host_memory_bytes); largest host buffer: " + big + ", " +
                                     std::to_string(bytes) + " B; nothing ran",
                                 loc);
  }
}

namespace {

// One program everywhere: the processes whose devices `mesh` names exchange the fingerprint of
// what each compiled (the persistent cache key: the program after the passes, the options that
// change code, the library build, LLVM and the CPU), so a process that compiled something else
// fails here, on every process, instead of hanging in a collective.
void check_same_program(const Executable& exe, const CompileOptions& options, const Mesh& mesh,
                        std::source_location loc) {
  std::set<int> procs;
  for (int d : mesh.device_ids) procs.insert(detail::process_of_device(d));
  if (procs.size() < 2) return;
  const std::string mine = persistent_key(exe.program, options);
  const std::vector<int> order(procs.begin(), procs.end());
  const std::vector<std::string> all = exchange_texts(mine, order);
  std::string diff;
  for (size_t k = 0; k < all.size(); ++k)
    diff += (k ? ", " : "") + ("process " + std::to_string(order[k]) + ": " + all[k]);
  for (auto& f : all)
    if (f != all[0])
      throw DistributedError(
          "jit '" + exe.name + "': the processes of " + mesh.str() +
              " compiled different programs (fingerprints, the SHA-256 of the program after the "
              "passes, its options and the library build: " +
              diff +
              "); every process must call the same function with the same signature, "
              "shardings and library build",
          loc);
}

}  // namespace

std::shared_ptr<const SpmdExecutable> compile_sharded(const LoweredProgram& low, const JitOptions& opts,
                                                      const std::vector<bool>& donated,
                                                      std::source_location loc,
                                                      std::shared_ptr<const Executable>* exe) {
  std::shared_ptr<const Executable> compiled = compile_lowering(low, opts, donated, true, loc);
  check_same_program(*compiled, compile_options(opts, donated, true), *low.mesh, loc);
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
    for (size_t p = 0; p < n; ++p) {  // other processes' positions: no shard here
      shards.push_back(call->outputs[p].empty() ? Array()
                                                : Array::from_buffer(exe.out_avals[k], call->outputs[p][k]));
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

std::map<std::string, double> spmd_cost_analysis(const LoweredProgram& low) {
  return cost_analysis(low.program);
}

CompiledMemoryStats spmd_memory_analysis(const LoweredProgram& low) {
  return memory_analysis(low.program,
                         plan_buffers(low.program, std::vector<bool>(low.program.invars.size(), false)));
}

std::vector<std::optional<Sharding>> resolve_shardings(const std::vector<std::optional<NamedSharding>>& given,
                                                       const std::vector<ShapedArray>& avals,
                                                       const std::vector<Array>& values, size_t num_consts,
                                                       const char* what, std::shared_ptr<const Mesh>& mesh,
                                                       const InputNames& names, std::source_location loc) {
  const size_t leaves = avals.size() - num_consts;
  std::vector<std::optional<Sharding>> out(avals.size());
  auto same_mesh = [&](const Sharding& s, size_t i, const std::string& shown) {
    if (mesh && !(*mesh == *s.mesh))
      throw ShardingError(std::string("jit: ") + what + " entry " + std::to_string(i) + " (" + shown +
                              ") is on " + s.mesh->str() + ", but another sharding of the call is on " +
                              mesh->str() + "; one program runs on one mesh",
                          loc);
    if (!mesh) mesh = s.mesh;
  };
  if (given.empty() && values.empty()) return out;
  if (given.size() > 1 && given.size() != leaves)
    throw ShardingError(std::string("jit: ") + what + " has " + std::to_string(given.size()) +
                            " entries but the function has " + std::to_string(leaves) +
                            " flattened leaves (give one per leaf, or one for all)",
                        loc);
  for (size_t i = 0; i < leaves; ++i) {
    const std::optional<NamedSharding> none;
    const std::optional<NamedSharding>& ns = given.empty() ? none : given.size() == 1 ? given[0] : given[i];
    const ShapedArray& aval = avals[num_consts + i];
    if (ns) {
      Sharding s;
      try {
        s = to_sharding(*ns, int64_t(aval.shape.size()), loc);
        s.check(aval.shape, loc);
      } catch (const ShardingError& e) {  // name the leaf and its shape (the spec is in e)
        throw ShardingError(std::string("jit: ") + what + " entry " + std::to_string(i) + " for a " +
                                aval.str() + " leaf: " + e.message(),
                            loc);
      }
      same_mesh(s, i, ns->str());
      // An input sharding says where the argument already is (JAX's in_shardings never move
      // memory): another memory kind than the argument's is the caller's mistake.
      if (std::string_view(what) == "in_shardings" && s.memory_kind != aval.memory_kind)
        throw ValueError("jit '" + std::string(names.function) + "': in_shardings entry " +
                             std::to_string(i) + " (" + ns->str() + ") puts " + names(num_consts + i) +
                             " in " + memory_kind_name(s.memory_kind) + " memory, but " +
                             names(num_consts + i) + " is a " + aval.str() + " in " +
                             memory_kind_name(aval.memory_kind) +
                             " memory (memory kinds passed to jit must match the argument's, as in JAX; "
                             "device_put the argument to the sharding first)",
                         loc);
      out[num_consts + i] = std::move(s);
    } else if (i < values.size() && values[i].is_abstract()) {
      if (auto* p = dynamic_cast<const ShapeDtypeShardingParam*>(
              static_cast<const AbstractArray*>(values[i].impl())->sharding().get())) {
        Sharding s = to_sharding(p->sharding, int64_t(aval.shape.size()), loc);
        s.check(aval.shape, loc);
        same_mesh(s, i, "the ShapeDtypeStruct's sharding " + p->sharding.str());
        out[num_consts + i] = std::move(s);
      }
    } else if (i < values.size() && values[i].is_sharded()) {
      Sharding s = values[i].sharding(loc).sharding;
      same_mesh(s, i, "the argument's own sharding " + s.str());
      out[num_consts + i] = std::move(s);
    }
  }
  return out;
}

namespace {

// The sharding a program output is returned in: the output reshard's target if one was placed
// there, else the output variable's sharding; a literal output is replicated.
Sharding output_sharding(const PropagationResult& prop, const Jaxpr& j, size_t k,
                         const std::shared_ptr<const Mesh>& mesh) {
  for (auto& r : prop.reshards)
    if (r.on_output && r.index == k) return r.to;
  if (auto* v = std::get_if<Var>(&j.outvars[k])) return prop.of(*v);
  return Sharding::replicated_on(mesh, int64_t(j.out_avals()[k].shape.size()));
}

}  // namespace

std::shared_ptr<const LoweredProgram> lower_sharded(const ClosedJaxprPtr& jaxpr, size_t num_consts,
                                                    const std::vector<std::optional<Sharding>>& in,
                                                    const std::vector<std::optional<Sharding>>& out_given,
                                                    const std::shared_ptr<const Mesh>& mesh,
                                                    const JitOptions& opts, std::source_location loc) {
  // The lower phase: dead equations (e.g. the zeros relu's derivative builds and drops) go
  // before propagation, which would give them shardings, maybe reshards, and buffers on every
  // device; every input stays (one per operand) and every output is used. Outputs are reduced
  // by propagation itself (no partial sums unless an out_sharding asks).
  const ShardingRequest request{mesh, in, out_given, loc};
  Compilation c = start_compilation(*jaxpr->jaxpr, compile_options(opts, {}, true), &request);
  run_phase(c, StagePhase::lower);
  auto low = std::make_shared<LoweredProgram>();
  low->mesh = mesh;
  auto live = std::make_shared<ClosedJaxpr>(*jaxpr);
  live->jaxpr = std::make_shared<Jaxpr>(std::move(c.global));
  low->jaxpr = live;
  low->num_consts = num_consts;
  low->propagation = std::move(c.propagation);
  low->program = std::move(c.program);
  low->site_eqn_index = std::move(c.site_eqn_index);
  low->dump = c.dump;
  const Jaxpr& j = *live->jaxpr;
  for (auto& v : j.invars) low->in_shardings.push_back(low->propagation.of(v));
  for (size_t k = 0; k < j.outvars.size(); ++k)
    low->out_shardings.push_back(output_sharding(low->propagation, j, k, mesh));
  return low;
}

std::shared_ptr<const LoweredProgram> lower_unsharded(const ClosedJaxprPtr& jaxpr, size_t num_consts,
                                                      const JitOptions& opts) {
  Compilation c = start_compilation(*jaxpr->jaxpr, compile_options(opts, {}, false));
  run_phase(c, StagePhase::lower);
  auto live = std::make_shared<ClosedJaxpr>(*jaxpr);
  live->jaxpr = std::make_shared<Jaxpr>(c.program);
  auto low = std::make_shared<LoweredProgram>();
  low->jaxpr = live;
  low->num_consts = num_consts;
  low->program = std::move(c.program);
  low->dump = c.dump;
  return low;
}

void check_mesh_devices(const Mesh& mesh, std::source_location loc) {
  const int count = num_devices(loc);
  for (int id : mesh.device_ids)
    if (id >= count)
      throw ShardingError("jit: " + mesh.str() + " names device " + std::to_string(id) + ", but there are " +
                              std::to_string(count) + " devices (ids 0.." + std::to_string(count - 1) +
                              "; config().num_cpu_devices sets the count before first use)",
                          loc);
}

SpmdRun run_lowered(const std::shared_ptr<const LoweredProgram>& lowered, const std::vector<Array>& operands,
                    std::source_location loc) {
  const LoweredProgram& low = *lowered;
  if (!low.mesh)
    throw ShardingError("jit: run_lowered on an unpartitioned Lowered (no sharding given, no mesh)", loc);
  const size_t n = low.mesh->num_devices();
  check_mesh_devices(*low.mesh, loc);
  if (operands.size() != low.in_shardings.size())
    throw ValueError("jit: " + std::to_string(operands.size()) + " operands for a program of " +
                         std::to_string(low.in_shardings.size()) + " inputs",
                     loc);
  std::vector<std::vector<Array>> dev(n);
  for (size_t k = 0; k < operands.size(); ++k) {
    std::vector<Array> shards = local_shards(operands[k], low.in_shardings[k], loc);
    for (size_t p = 0; p < n; ++p) dev[p].push_back(std::move(shards[p]));
  }
  SpmdRun run;
  run.lowered = lowered;
  run.outputs = run_spmd(low.program, *low.mesh, dev, &run.stats);
  return run;
}

std::pair<ClosedJaxprPtr, std::vector<Array>> constrained_body(
    const ClosedJaxprPtr& body, const std::vector<std::optional<Sharding>>& in,
    const std::vector<std::optional<Sharding>>& out, std::source_location loc) {
  const Jaxpr& j = *body->jaxpr;
  ClosedJaxpr cj = trace_to_jaxpr(
      [&](const std::vector<Array>& ins) {
        std::vector<Array> args = ins;
        for (size_t i = 0; i < args.size(); ++i)
          if (in[i]) args[i] = with_sharding_constraint(args[i], *in[i], loc);
        std::vector<Array> outs = eval_jaxpr(*body, args);
        for (size_t k = 0; k < outs.size(); ++k)
          if (out[k]) outs[k] = with_sharding_constraint(outs[k], *out[k], loc);
        return outs;
      },
      j.in_avals(), loc);
  auto wrapped = std::make_shared<ClosedJaxpr>();
  wrapped->jaxpr = std::make_shared<Jaxpr>(convert_constvars_jaxpr(*cj.jaxpr));
  return {wrapped, cj.consts};
}

std::vector<Array> sharded_outputs(const LoweredProgram& low, SpmdRun& run, std::source_location loc) {
  std::vector<Array> outs;
  const std::vector<ShapedArray> out_avals = low.jaxpr->jaxpr->out_avals();
  for (size_t k = 0; k < low.out_shardings.size(); ++k) {
    std::vector<Array> shards;
    for (auto& dev : run.outputs) shards.push_back(dev[k]);
    outs.push_back(make_sharded_array(out_avals[k], low.out_shardings[k], std::move(shards), loc));
  }
  return outs;
}

}  // namespace minijax::detail

namespace minijax {

std::string collectives_text(const SpmdStats& stats, const Jaxpr& program) {
  std::string out;
  for (auto& c : stats.collectives) {
    // Where: the top-level equation; one holding the collective in a body is named as
    // spmd_collectives_text names it (`eqn 1 closed_call reshard_ragged /`).
    // A compiled site the matcher could not place (SIZE_MAX) is named by its primitive alone.
    std::string where = c.eqn_index < program.eqns.size() ? "eqn " + std::to_string(c.eqn_index) : "(site)";
    if (c.eqn_index < program.eqns.size()) {
      const Eqn& e = program.eqns[c.eqn_index];
      if (!CollectiveParams::is(e)) {
        where += " " + e.primitive->name;
        if (is_pjit(*e.primitive) || is_closed_call(*e.primitive))
          if (auto name = call_params(e).name) where += " " + *name;
        where += " /";
      }
    }
    CollectiveTraffic t;
    t.primitive = c.primitive;
    t.axes = c.axes;
    t.bytes_sent = c.bytes_sent;
    t.bytes_received = c.bytes_received;
    out += collective_line(where, t);
  }
  return out;
}

}  // namespace minijax
