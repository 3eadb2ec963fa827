// minijax jit: resolving shardings, lowering (propagate + partition), run_spmd, the constrained pjit
// under a trace, and the non-template parts of compiled execution (signatures, texts, runs).
#include "jit/jit.h"

#include <sstream>

#include "core/views/control_flow.h"
#include "jit/passes/cost_analysis.h"
#include "jit/passes/fuse.h"
#include "jit/pipeline.h"
#include "jit/runtime/execute.h"
#include "memory/memory_analysis.h"
#include "memory/offload_report.h"
#include "memory/plan_buffers.h"

#include "core/config.h"
#include "core/errors.h"
#include "core/profiler_hooks.h"
#include "core/staging.h"
#include "core/views/collectives.h"
#include "core/views/memory_ops.h"
#include "sharding/plan_reshard.h"
#include "sharding/reshard_api.h"
#include "sharding/sharding_dot.h"

namespace minijax {

namespace {
// The NamedSharding a ShapeDtypeStruct's abstract Array carries (read back by resolve_shardings).
struct ShapeDtypeShardingParam final : ParamObject {
  explicit ShapeDtypeShardingParam(NamedSharding s) : sharding(std::move(s)) {}
  NamedSharding sharding;
  std::string str() const override { return sharding.str(); }
  bool equals(const ParamObject& o) const override {
    auto* q = dynamic_cast<const ShapeDtypeShardingParam*>(&o);
    return q && q->sharding.str() == sharding.str();
  }
};
}  // namespace

ShapeDtypeStruct::operator Array() const {
  checked_nbytes(shape, dtype);  // ShapeError for a negative dim or a size that overflows int64
  ShapedArray aval{shape, dtype, weak_type, sharding ? sharding->memory_kind : MemoryKind::device};
  ParamObjectPtr sh = sharding ? std::make_shared<ShapeDtypeShardingParam>(*sharding) : nullptr;
  return Array(std::make_shared<AbstractArray>(std::move(aval), std::move(sh)));
}

std::vector<bool> CallArgs::donated_leaves() const {
  std::vector<bool> d(leaves.size(), false);
  for (size_t p = 0; p < nargs; ++p)
    if ((donate_mask >> p) & 1)
      for (size_t l = first_leaf[p]; l < first_leaf[p + 1]; ++l) d[l] = true;
  return d;
}

namespace detail {

std::map<std::string, double> spmd_cost_analysis(const LoweredProgram& low) { return cost_analysis(low.program); }

CompiledMemoryStats spmd_memory_analysis(const LoweredProgram& low) {
  return memory_analysis(low.program, plan_buffers(low.program, std::vector<bool>(low.program.invars.size(), false)));
}

}  // namespace detail

namespace detail {

void check_not_abstract(const std::vector<Array>& leaves, const uint32_t* first_leaf, size_t nargs,
                        const std::string& name, std::source_location loc) {
  for (size_t i = 0; i < leaves.size(); ++i)
    if (leaves[i].is_abstract()) {
      const InputNames names{name, 0, first_leaf, nargs};
      throw TypeError("jit '" + name + "': " + names(i) + " is an abstract " + leaves[i].aval().str() +
                          " (a ShapeDtypeStruct, no value): it can be lowered (jit(f).lower(...)), not run; "
                          "pass an Array",
                      loc);
    }
}

std::vector<std::optional<Sharding>> resolve_shardings(
    const std::vector<std::optional<NamedSharding>>& given, const std::vector<ShapedArray>& avals,
    const std::vector<Array>& values, size_t num_consts, const char* what,
    std::shared_ptr<const Mesh>& mesh, const InputNames& names, std::source_location loc) {
  const size_t leaves = avals.size() - num_consts;
  std::vector<std::optional<Sharding>> out(avals.size());
  auto same_mesh = [&](const Sharding& s, size_t i, const std::string& shown) {
    if (mesh && !(*mesh == *s.mesh))
      throw ShardingError(std::string("jit: ") + what + " entry " + std::to_string(i) + " (" +
                              shown + ") is on " + s.mesh->str() +
                              ", but another sharding of the call is on " + mesh->str() +
                              "; one program runs on one mesh",
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
    const std::optional<NamedSharding>& ns =
        given.empty() ? none : given.size() == 1 ? given[0] : given[i];
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
        throw ValueError("jit '" + std::string(names.function) + "': in_shardings entry " + std::to_string(i) +
                             " (" + ns->str() + ") puts " + names(num_consts + i) + " in " +
                             memory_kind_name(s.memory_kind) + " memory, but " + names(num_consts + i) +
                             " is a " + aval.str() + " in " + memory_kind_name(aval.memory_kind) +
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
                                             const std::shared_ptr<const Mesh>& mesh, const JitOptions& opts,
                                             std::source_location loc) {
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

bool executes_now(const std::vector<Array>& a, const std::vector<Array>& b, std::source_location loc) {
  for (auto& v : a)
    if (!v.is_concrete()) return false;
  for (auto& v : b)
    if (!v.is_concrete()) return false;
  return dynamic_cast<EvalTrace*>(TraceStack::dynamic().get()) != nullptr;
}

uint64_t argnum_mask(const std::vector<int>& argnums, size_t nargs, const char* what, std::source_location loc) {
  uint64_t m = 0;
  for (int a : argnums) {
    int64_t i = a < 0 ? int64_t(nargs) + a : a;
    if (i < 0 || i >= int64_t(nargs))
      throw ValueError(std::string("jit: ") + what + " entry " + std::to_string(a) + " is out of range for " +
                           std::to_string(nargs) + " arguments",
                       loc);
    m |= uint64_t(1) << i;
  }
  return m;
}

void append_leaf_signature(Signature& sig, const std::vector<Array>& leaves, std::source_location loc) {
  for (const Array& l : leaves) {
    if (!l.defined()) throw ValueError("jit: an argument leaf is an empty (default-constructed) Array", loc);
    const ShapedArray& av = l.aval();
    // A ShapeDtypeStruct's sharding counts as the sharding of an Array laid out that way.
    const ShapeDtypeShardingParam* sds = nullptr;
    if (l.is_abstract())
      sds = dynamic_cast<const ShapeDtypeShardingParam*>(static_cast<const AbstractArray*>(l.impl())->sharding().get());
    const bool sharded = sds || l.is_sharded();
    sig.words.push_back(uint64_t(av.dtype) | uint64_t(av.weak_type) << 8 | uint64_t(av.memory_kind) << 9 |
                        uint64_t(sharded) << 12 | uint64_t(av.shape.size()) << 16);
    for (int64_t d : av.shape) sig.words.push_back(uint64_t(d));
    if (sharded) {
      const Sharding s = sds ? to_sharding(sds->sharding, int64_t(av.shape.size()), loc) : l.sharding(loc).sharding;
      const std::string t = s.mesh->str() + " " + s.str();
      sig.words.push_back(t.size());
      sig.text += t;
    }
  }
}

std::string signature_text(const std::vector<std::string>& structures, const std::vector<Array>& leaves,
                           std::source_location loc) {
  std::string r = "(";
  for (size_t i = 0; i < structures.size(); ++i) r += (i ? ", " : "") + structures[i];
  r += ") with leaves [";
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Array& l = leaves[i];
    r += (i ? ", " : "") + l.aval().str();
    if (l.weak_type()) r += "{weak}";
    if (l.is_sharded()) r += " @ " + l.sharding(loc).str();
    if (l.is_abstract())
      if (auto* p = dynamic_cast<const ShapeDtypeShardingParam*>(static_cast<const AbstractArray*>(l.impl())->sharding().get()))
        r += " @ " + p->sharding.str();
  }
  return r + "]";
}

void wait_ready(const std::vector<Array>& leaves) {
  for (const Array& a : leaves) {
    if (!a.is_concrete()) continue;
    const auto& c = *static_cast<const ConcreteArray*>(a.impl());
    if (c.is_sharded()) {
      for (const StoredShard& s : c.shards()) s.buffer->ready().wait();
    } else {
      c.buffer()->ready().wait();
    }
  }
}

std::vector<Array> run_compiled(const Executable& exe, const std::vector<Array>& consts,
                                const std::vector<Array>& leaves, const std::string& name,
                                const uint32_t* first_leaf, size_t nargs, std::source_location loc) {
  return execute(exe.loaded, consts, leaves, loc, InputNames{name, consts.size(), first_leaf, nargs});
}

CompileOptions compile_options(const JitOptions& opts, const std::vector<bool>& donated, bool spmd) {
  CompileOptions co;
  co.name = opts.name;
  co.donated = donated;
  co.dump_dir = opts.dump_dir;
  co.keep_llvm_ir = opts.keep_llvm_ir;
  co.spmd = spmd;
  co.offload.coalesce_bytes = config().offload_coalesce_bytes;
  co.offload.prefetch_bytes = config().offload_prefetch_bytes;
  co.offload.host_link_bytes_per_s = config().host_link_bytes_per_s;
  return co;
}

std::shared_ptr<const Executable> compile_traced(const ClosedJaxprPtr& jaxpr, const JitOptions& opts,
                                                 const std::vector<bool>& donated, std::source_location loc) {
  check_cache_bounds(loc);  // a negative bound names the user's line
  check_max_fusion_equations(loc);
  std::shared_ptr<const Executable> exe = compile_executable(*jaxpr->jaxpr, compile_options(opts, donated, false));
  check_compiled_capacity(*exe, 1, loc);
  return exe;
}

std::shared_ptr<const Executable> compile_lowering(const LoweredProgram& low, const JitOptions& opts,
                                                   const std::vector<bool>& donated, bool spmd,
                                                   std::source_location loc) {
  check_cache_bounds(loc);  // a negative bound names the user's line
  check_max_fusion_equations(loc);
  Compilation c;
  c.options = compile_options(opts, donated, spmd);
  c.program = low.program;
  c.dump = low.dump;
  std::shared_ptr<const Executable> exe = compile_lowered(std::move(c));
  check_compiled_capacity(*exe, low.mesh ? low.mesh->num_devices() : 1, loc);
  return exe;
}

std::string compiled_text(const Executable& exe, bool llvm_ir) {
  std::ostringstream os;
  os << "# compiled '" << exe.name << "': program after the passes\n" << to_string(exe.program) << "\n";
  os << "# lowering, one line per equation\n";
  for (auto& l : exe.lowered) os << "  [" << l.strategy << "] " << l.text << "\n";
  os << "# buffer plan\n" << exe.plan.str(exe.program);
  os << offload_report(exe.program).str();
  os << "# memory_analysis: " << exe.memory.str() << "\n";
  os << "# cost_analysis:";
  for (auto& [k, v] : exe.cost) os << " " << k << "=" << v;
  os << "\n# kernels (KIR)\n" << exe.kernels;
  if (llvm_ir) {
    os << "\n# optimized LLVM IR\n";
    os << (exe.llvm_ir.empty() ? std::string("(not kept: compile with JitOptions::keep_llvm_ir)\n") : exe.llvm_ir);
  }
  return os.str();
}

namespace {

// Whether j (or a body nested in it) constrains a sharding: the body of a sharded jit.
bool has_sharding_constraint(const Jaxpr& j) {
  for (const Eqn& e : j.eqns) {
    if (ShardingConstraintParams::is(e)) return true;
    for (auto& [k, v] : e.params.items()) {
      if (auto* cj = std::get_if<ClosedJaxprPtr>(&v)) {
        if (*cj && (*cj)->jaxpr && has_sharding_constraint(*(*cj)->jaxpr)) return true;
      } else if (auto* cjs = std::get_if<std::vector<ClosedJaxprPtr>>(&v)) {
        for (auto& c : *cjs)
          if (c && c->jaxpr && has_sharding_constraint(*c->jaxpr)) return true;
      }
    }
  }
  return false;
}

// Eagerly bound pjit equations (grad/vmap of a jit) run compiled: the body is compiled once per
// distinct program (the executable cache is keyed by the program after the passes). Sharded
// values and bodies with sharding constraints (a sharded jit under grad or vmap) are evaluated
// equation by equation instead: the one-device compiler does not partition.
std::vector<Array> run_pjit_compiled(const ClosedJaxprPtr& body, const std::string& name,
                                     const std::vector<Array>& args) {
  std::vector<Array> operands = body->consts;
  operands.insert(operands.end(), args.begin(), args.end());
  for (auto& a : operands)
    if (a.is_sharded()) return eval_jaxpr(*body, args);
  if (has_sharding_constraint(*body->jaxpr)) return eval_jaxpr(*body, args);
  Jaxpr j = body->consts.empty() ? *body->jaxpr : convert_constvars_jaxpr(*body->jaxpr);
  CompileOptions co;
  co.name = name;
  return execute(compile_executable(j, co)->loaded, operands);
}

const bool pjit_executor_installed = [] {
  set_pjit_executor(&run_pjit_compiled);
  return true;
}();

}  // namespace

}  // namespace detail

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

std::string LoweredProgram::as_text() const {
  std::ostringstream os;
  if (!mesh) {
    os << "# unpartitioned program (no sharding given: one device)\n" << to_string(program);
    return os.str();
  }
  os << "# global program on " << mesh->str() << " with propagated shardings\n"
     << propagation.text << "\n# SPMD program (one per device, local shapes)\n"
     << to_string(program) << "\n# collectives (bytes and messages per device, run_spmd's traffic model)\n"
     << spmd_collectives_text(program, *mesh);
  return os.str();
}

std::string to_dot(const LoweredProgram& lowered, DotOptions opts) {
  const Jaxpr& j = *lowered.jaxpr->jaxpr;
  return lowered.mesh ? to_dot(j, lowered.propagation, std::move(opts)) : to_dot(j, opts);
}

}  // namespace minijax
