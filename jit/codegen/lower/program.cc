// minijax program lowering: the entry function (addresses from the buffer plan, kernel calls,
// copies) and the program rules of fusions, views and control flow (scan, while, cond).
#include "jit/codegen/lower/program.h"

#include "core/bodies.h"
#include "core/errors.h"
#include "core/views/control_flow.h"
#include "core/views/memory_ops.h"
#include "jit/codegen/lower/transcendentals.h"

namespace minijax::lower {

using kir::Op;
using kir::Pred;
using kir::Type;
using kir::Value;

std::map<std::string, ProgramRuleEntry>& program_rules() {
  static std::map<std::string, ProgramRuleEntry> rules;
  return rules;
}

RegisterProgramRule::RegisterProgramRule(const std::string& prim, std::string strategy, ProgramRule rule,
                                         WatchedOperands watched) {
  program_rules()[prim] = ProgramRuleEntry{std::move(strategy), std::move(rule), std::move(watched)};
}

ProgramEmitter::ProgramEmitter(kir::Module& m, kir::Builder& builder, const BufferPlan& p)
    : module(m), b(builder), plan(p) {
  args_ = b.arg(0);
  outs_ = b.arg(1);
  arenas_ = b.arg(2);
  for (int k = 0; k < 3; ++k) arena_base_.push_back(b.load(kir::kPtr, arenas_, b.i64(k)));
}

std::string ProgramEmitter::fresh_name(const std::string& stem) {
  int n = names_[stem]++;
  return n == 0 ? stem : stem + "_" + std::to_string(n);
}

Value ProgramEmitter::iteration(const Eqn* loop) const {
  auto it = iter_.find(loop);
  if (it == iter_.end()) throw ValueError("program emitter: a loop slice used outside its loop");
  return it->second;
}

void ProgramEmitter::with_iteration(const Eqn* loop, Value i, const std::function<void()>& body) {
  iter_[loop] = i;
  body();
  iter_.erase(loop);
}

void ProgramEmitter::store_literal(Value dst, const Literal& l) {
  const Array& a = l.value;
  dispatch_dtype(a.dtype(), [&]<class T>() {
    T x = *a.data<T>();
    if constexpr (std::is_same_v<T, float>) b.store(dst, b.i64(0), b.f32(x));
    else if constexpr (std::is_same_v<T, double>) b.store(dst, b.i64(0), b.f64(x));
    else if constexpr (std::is_same_v<T, bfloat16>) b.store(dst, b.i64(0), b.const_int(kir::kI16, x.bits));
    else if constexpr (std::is_same_v<T, bool>) b.store(dst, b.i64(0), b.const_int(kir::kI8, x ? 1 : 0));
    else b.store(dst, b.i64(0), b.i32(int32_t(x)));
  });
}

Value ProgramEmitter::addr(const Atom& a) {
  if (auto* l = std::get_if<Literal>(&a)) {
    Value slot = b.stack_slot(kir::kI64);  // 8 bytes hold any scalar
    store_literal(slot, *l);
    return slot;
  }
  const Var& v = std::get<Var>(a);
  const Location& loc = plan.at(v);
  switch (loc.place) {
    case Place::param: return b.load(kir::kPtr, args_, b.i64(loc.index));
    case Place::output: return b.load(kir::kPtr, outs_, b.i64(loc.index));
    case Place::temp: return b.ptr_add(arena_base_.at(size_t(loc.index)), b.i64(loc.offset));
    case Place::view: {
      Value base = addr(loc.base);
      return loc.offset ? b.ptr_add(base, b.i64(loc.offset)) : base;
    }
    case Place::loop_slice: {
      Value i = iteration(loc.loop);
      if (loc.reversed) i = b.sub(b.i64(loc.length - 1), i);
      return b.ptr_add(addr(loc.base), b.mul(i, b.i64(loc.stride)));
    }
    case Place::literal: return addr(loc.literal);
    case Place::undefined:
      throw ValueError("program emitter: an allocate_buffer value without bytes was read (it may only "
                       "initialize a loop carry)");
  }
  return {};
}

Value ProgramEmitter::scratch(const Eqn& e) {
  const Scratch* s = plan.scratch_of(e);
  if (!s) throw ValueError("program lowering: the buffer plan gave " + e.primitive->name + " no workspace");
  return b.ptr_add(arena(MemoryKind::device), b.i64(s->offset));
}

void ProgramEmitter::copy_if_different(Value dst, Value src, int64_t bytes) {
  if (bytes <= 0) return;
  b.if_(b.icmp(Pred::ne, dst, src), [&] { b.memcpy(dst, src, b.i64(bytes)); });
}

void ProgramEmitter::copy_atom(Value dst, const Atom& a) {
  if (auto* l = std::get_if<Literal>(&a)) return store_literal(dst, *l);
  if (plan.at(std::get<Var>(a)).place == Place::undefined) return;  // unspecified contents: nothing to copy
  copy_if_different(dst, addr(a), atom_aval(a).nbytes());
}

Value ProgramEmitter::call_runtime(const std::string& name, Type ret, const std::vector<Type>& params,
                                   const std::vector<Value>& args) {
  module.declare(kir::Extern{name, params, ret});
  return b.call(name, ret, args);
}

namespace {

// A kernel's profiler event args: the fusion, how it runs, its operands' and results' types and
// the bytes it reads and writes.
std::string kernel_site_args(const Eqn& e, const KernelInfo& info, bool parallel) {
  auto types = [](const auto& atoms, int64_t& bytes) {
    std::string t = "[";
    for (auto& a : atoms) {
      const ShapedArray av = atom_aval(Atom(a));  // a copy: `a` may be a Var converted to a temporary Atom
      t += (t.size() > 1 ? ", " : "") + av.str();
      bytes += av.nbytes();
    }
    return t + "]";
  };
  int64_t in_bytes = 0, out_bytes = 0;
  profiler::detail::Args a;
  a.add("fusion", call_params(e).name.value()).add("kind", info.kind).add("loop", info.describe());
  a.add("inputs", types(e.inputs, in_bytes)).add("outputs", types(e.outputs, out_bytes));
  a.add("bytes_in", in_bytes).add("bytes_out", out_bytes).add("parallel", parallel);
  return a.take();
}

}  // namespace

void ProgramEmitter::call_fusion(const Eqn& e) {
  // A fusion emitted again (a copy of an unrolled loop body) calls the kernel of its first
  // emission, under the same profiler site.
  auto known = kernels_.find(&e);
  if (known == kernels_.end()) {
    EmittedKernel k;
    k.name = fresh_name(call_params(e).name.value());
    for (char& c : k.name)
      if (c == '.') c = '_';
    if (call_params(e).kind.value() == "loop")
      for (size_t o = 0; o < e.outputs.size(); ++o)
        if (watched_vars_.count(e.outputs[o].id()) && e.outputs[o].aval().dtype == DType::f32) k.watch.push_back(o);
    k.info = emit_fusion_kernel(module, e, k.name, k.watch);
    for (size_t i = 0; i < k.watch.size(); ++i) k.flags.push_back(b.function_stack_slot(kir::kI32));
    // Large kernels are split across threads (outer index chunks of >= kGrainElems elements);
    // small ones run inline on the calling thread.
    constexpr int64_t kParallelElems = int64_t(1) << 16;
    k.parallel = k.info.outer_extent * k.info.work_per_outer >= kParallelElems && k.info.outer_extent > 1;
    if (!k.parallel) module.functions[size_t(module.find(k.name))].unroll_loops = false;
    k.site = int32_t(kernel_sites.size());
    kernel_sites.push_back({k.name, kernel_site_args(e, k.info, k.parallel)});
    // The operand addresses' slot, one per fusion, at the top of the function: an unrolled
    // loop's copies (in the loop and after it) share it rather than grow the stack per copy.
    k.bufs = b.function_stack_slot(kir::kPtr, int64_t(e.inputs.size() + e.outputs.size() + k.watch.size()));
    known = kernels_.emplace(&e, std::move(k)).first;
  }
  const EmittedKernel& k = known->second;
  const KernelInfo& info = k.info;
  const Value bufs = k.bufs;
  size_t slot = 0;
  for (auto& in : e.inputs) b.store(bufs, b.i64(int64_t(slot++)), addr(in));
  for (auto& out : e.outputs) b.store(bufs, b.i64(int64_t(slot++)), addr(out));
  for (size_t i = 0; i < k.watch.size(); ++i) {
    b.store(k.flags[i], b.i64(0), b.i32(0));
    b.store(bufs, b.i64(int64_t(slot++)), k.flags[i]);
    nonfinite_flags_[e.outputs[k.watch[i]].id()] = k.flags[i];
  }
  constexpr int64_t kGrainElems = int64_t(1) << 14;
  call_runtime("mj_rt_kernel_begin", kir::kVoid, {kir::kI32}, {b.i32(k.site)});
  if (k.parallel) {
    int64_t grain = std::max<int64_t>(1, kGrainElems / std::max<int64_t>(1, info.work_per_outer));
    if (info.outer_vectorized) grain = (grain + info.lanes - 1) / info.lanes * info.lanes;
    call_runtime("mj_rt_parallel_for", kir::kVoid, {kir::kPtr, kir::kPtr, kir::kI64, kir::kI64},
                 {b.func_addr(k.name), bufs, b.i64(info.outer_extent), b.i64(grain)});
  } else {
    b.call(k.name, kir::kVoid, {bufs, b.i64(0), b.i64(info.outer_extent)});
  }
  call_runtime("mj_rt_kernel_end", kir::kVoid, {kir::kI32}, {b.i32(k.site)});
  std::string watched;
  for (size_t o : k.watch) watched += (watched.empty() ? "; notes a NaN or -inf it stores in output " : ", ") + std::to_string(o);
  note(e, "fused loop", k.name + " " + info.describe() + (k.parallel ? " parallel" : "") + watched);
}

void ProgramEmitter::note(const Eqn& eqn, const std::string& strategy, const std::string& text) {
  if (muted_ == 0) lowered.push_back(LoweredEqn{strategy, eqn.primitive->name + ": " + text});
}

int32_t ProgramEmitter::collective_site(const Eqn& e) {
  auto [it, added] = collective_site_ids_.emplace(&e, int32_t(collective_sites->size()));
  if (added) collective_sites->push_back(describe_collective_site(e, module.name));
  return it->second;
}

int32_t ProgramEmitter::host_callback_site(const Eqn& e) {
  auto [it, added] = host_callback_ids_.emplace(&e, int32_t(host_callbacks.size()));
  if (added) {
    const DebugCallbackObject* cb = debug_callback_params(e).host_function();  // alive in e.params
    if (!cb || !cb->fn) detail::call_debug_callback(e.params, {});  // throws: no host function to call
    HostCallbackSite site{cb->fn, {}};
    for (const Atom& a : e.inputs) site.operands.push_back(atom_aval(a));
    host_callbacks.push_back(std::move(site));
  }
  return it->second;
}

int32_t ProgramEmitter::dnnl_site(const Eqn& e, const DnnlSiteSpec& spec) {
  auto [it, added] = dnnl_site_ids_.emplace(&e, int32_t(dnnl_sites.size()));
  if (added) {
    dnnl_sites.push_back(spec);
    dnnl_site_eqns.push_back(&e);
  }
  return it->second;
}

void ProgramEmitter::emit_copy_of_scope(bool again, const std::function<void()>& emit) {
  muted_ += again;
  try {
    emit();
  } catch (...) {
    muted_ -= again;
    throw;
  }
  muted_ -= again;
}

const Eqn* ProgramEmitter::producer(const Atom& a) const {
  const Var v = atom_var(a);
  if (!v.defined()) return nullptr;
  auto it = producers_.find(v.id());
  return it == producers_.end() ? nullptr : it->second;
}

bool ProgramEmitter::intact_at(const Atom& a, const Eqn& e) const {
  const Var v = atom_var(a);
  if (!v.defined()) return false;
  if (auto loc = plan.where.find(v); loc != plan.where.end() && loc->second.place == Place::param) {
    const size_t k = size_t(loc->second.index);
    if (k >= plan.donated.size() || !plan.donated[k]) return true;
  }
  auto read = last_reads_.find(v.id());
  auto at = positions_.find(&e);
  return read != last_reads_.end() && at != positions_.end() && read->second.first == at->second.first &&
         read->second.second > at->second.second;
}

kir::Value ProgramEmitter::nonfinite_flag(const Atom& a) const {
  const Var v = atom_var(a);
  if (!v.defined()) return {};
  auto it = nonfinite_flags_.find(v.id());
  return it == nonfinite_flags_.end() ? kir::Value{} : it->second;
}

void ProgramEmitter::emit_scope(const Jaxpr& j) {
  for (size_t i = 0; i < j.eqns.size(); ++i) {
    positions_[&j.eqns[i]] = {&j, i};
    if (auto rule = program_rules().find(j.eqns[i].primitive->name);
        rule != program_rules().end() && rule->second.watched)
      for (size_t k : rule->second.watched(j.eqns[i]))
        if (const Var v = atom_var(j.eqns[i].inputs.at(k)); v.defined()) watched_vars_.insert(v.id());
    for (const Atom& a : j.eqns[i].inputs)
      if (const Var v = atom_var(a); v.defined()) last_reads_[v.id()] = {&j, i};
  }
  for (const Atom& a : j.outvars)
    if (const Var v = atom_var(a); v.defined()) last_reads_[v.id()] = {&j, SIZE_MAX};
  for (const Eqn& e : j.eqns) {
    // Values without bytes (float0 tangents of integers, tokens) need no code, whatever computes
    // them (fuse leaves such equations unfused).
    bool no_data = !e.outputs.empty() && !has_bodies(e.params);
    for (auto& o : e.outputs) no_data &= o.aval().nbytes() == 0;
    for (const Var& o : e.outputs) producers_[o.id()] = &e;
    if (no_data) continue;
    auto it = program_rules().find(e.primitive->name);
    if (it == program_rules().end())
      throw ValueError("no compiled lowering for primitive " + e.primitive->name +
                       " (it must be fused, or have a program rule in jit/codegen/lower/)");
    it->second.rule(*this, e);
  }
}

namespace {

// ---- views: reshape, squeeze, expand_dims, optimization_barrier, same-kind device_put ---------
void lower_view(ProgramEmitter& pe, const Eqn& e) {
  for (size_t k = 0; k < e.outputs.size(); ++k) {
    if (e.outputs[k].aval().is_token()) continue;
    pe.copy_atom(pe.addr(e.outputs[k]), e.inputs.at(k < e.inputs.size() ? k : 0));
  }
  pe.note(e, "view", "aliases its operand (a copy only when the plan placed them apart)");
}

// The copies at the end of a body: staged sources first (a carry buffer another copy overwrites),
// then the outvars from `ncar` on (ys slices, which no copy reads), then the first ncar (carries,
// whose buffers the ys copies may read).
void end_copies(ProgramEmitter& pe, const Jaxpr& body, const std::vector<Value>& dest, size_t ncar) {
  auto it = pe.plan.scopes.find(&body);
  if (it == pe.plan.scopes.end()) return;
  std::vector<Value> src(body.outvars.size());
  for (auto& c : it->second.end_copies) {
    const Atom& a = body.outvars[c.outvar];
    if (!c.staged) continue;
    // staging: arena of the value's kind at c.staging_offset
    Value stage = pe.b.ptr_add(pe.arena(atom_aval(a).memory_kind), pe.b.i64(c.staging_offset));
    pe.copy_atom(stage, a);
    src[c.outvar] = stage;
  }
  for (bool carries : {false, true})
    for (auto& c : it->second.end_copies) {
      if ((c.outvar < ncar) != carries) continue;
      const Atom& a = body.outvars[c.outvar];
      if (c.staged) pe.copy_if_different(dest[c.outvar], src[c.outvar], atom_aval(a).nbytes());
      else pe.copy_atom(dest[c.outvar], a);
    }
}

// How the compiled loop of a scan is unrolled (JAX's _scan_impl): k copies of the body per trip
// of `trips` trips, then `remainder` copies; k is the equation's unroll param, the whole length
// when that is 0 or larger than the length, and a single trip of k copies is no loop at all.
struct Unrolled {
  int64_t k = 1, trips = 0, remainder = 0;
};

Unrolled unrolled(const Eqn& e, int64_t length) {
  Unrolled u;
  u.k = scan_params(e).unroll_or_one();
  if (u.k <= 0 || u.k > length) u.k = std::max<int64_t>(length, 1);
  u.trips = length / u.k;
  u.remainder = length % u.k;
  if (u.k != 1 && u.trips == 1 && u.remainder == 0) u = Unrolled{u.k, 0, length};
  return u;
}

std::string unrolled_text(const Unrolled& u, int64_t length) {
  if (u.k == 1) return "native loop of " + std::to_string(length) + " iterations";
  auto count = [](int64_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); };
  std::string t = "unrolled by " + std::to_string(u.k) + ": ";
  t += u.trips ? "native loop of " + count(u.trips, "trip", "trips") + " x " + count(u.k, "body copy", "body copies")
               : std::string("no loop");
  if (u.remainder) t += (u.trips ? ", then " : ", ") + count(u.remainder, "body copy", "body copies");
  return t + " (" + count(length, "iteration", "iterations") + ")";
}

// A scan: its carries live in its carry outputs' buffers (copied in from the initial values), xs
// slices and ys rows are addressed by the iteration (memory/plan_buffers.h). Iteration i (in
// execution order; a reverse scan's slices count from the end) is one emission of the body at
// i; unrolled, trip t emits the body at t*k ... t*k + k - 1 and the remainder after the loop at
// constant iterations. Each copy is a whole iteration, so results are those of the rolled loop.
void lower_scan(ProgramEmitter& pe, const Eqn& e) {
  kir::Builder& b = pe.b;
  const ScanParams sp = scan_params(e);
  const BodyLayout lay = body_layout(e);  // consts | carry | xs
  const Jaxpr& body = *sp.jaxpr->jaxpr;
  const size_t ncar = lay.num_carry;
  const int64_t length = sp.length;
  const bool reverse = sp.reverse;
  for (size_t k = 0; k < ncar; ++k) pe.copy_atom(pe.addr(e.outputs[k]), e.inputs[lay.carry_begin() + k]);
  int64_t copies = 0;
  auto iteration = [&](Value i) {
    pe.emit_copy_of_scope(copies++ > 0, [&] {
      pe.with_iteration(&e, i, [&] {
        pe.emit_scope(body);
        std::vector<Value> dest;
        for (size_t o = 0; o < body.outvars.size(); ++o) dest.push_back(pe.addr(e.outputs[o]));
        // ys destinations are slices: outputs[o] is the whole stacked buffer
        for (size_t o = ncar; o < body.outvars.size(); ++o) {
          Value row = reverse ? b.sub(b.i64(length - 1), i) : i;
          dest[o] = b.ptr_add(dest[o], b.mul(row, b.i64(atom_aval(body.outvars[o]).nbytes())));
        }
        end_copies(pe, body, dest, ncar);
      });
    });
  };
  const Unrolled u = unrolled(e, length);
  if (u.trips > 0)
    b.for_(b.i64(0), b.i64(u.trips), b.i64(1), [&](Value t) {
      Value first = u.k == 1 ? t : b.mul(t, b.i64(u.k));
      for (int64_t j = 0; j < u.k; ++j) iteration(j ? b.add(first, b.i64(j)) : first);
    });
  for (int64_t j = 0; j < u.remainder; ++j) iteration(b.i64(u.trips * u.k + j));
  pe.note(e, "control flow", unrolled_text(u, length));
}

void lower_while(ProgramEmitter& pe, const Eqn& e) {
  kir::Builder& b = pe.b;
  const WhileParams wp = while_params(e);
  const BodyLayout lay = body_layout(e);  // cond_consts | body_consts | carry
  const Jaxpr& cj = *wp.cond_jaxpr->jaxpr;
  const Jaxpr& bj = *wp.body_jaxpr->jaxpr;
  for (size_t k = 0; k < e.outputs.size(); ++k) pe.copy_atom(pe.addr(e.outputs[k]), e.inputs[lay.carry_begin() + k]);
  b.while_(
      [&] {
        pe.emit_scope(cj);
        const Atom& pred = cj.outvars.at(0);
        Value bits = std::holds_alternative<Literal>(pred)
                         ? b.const_int(kir::kI8, std::get<Literal>(pred).value.item<bool>() ? 1 : 0)
                         : b.load(kir::kI8, pe.addr(pred), b.i64(0));
        return b.icmp(Pred::ne, bits, b.const_int(kir::kI8, 0));
      },
      [&] {
        pe.emit_scope(bj);
        std::vector<Value> dest;
        for (auto& o : e.outputs) dest.push_back(pe.addr(o));
        end_copies(pe, bj, dest, bj.outvars.size());
      });
  pe.note(e, "control flow", "native while loop");
}

void lower_cond(ProgramEmitter& pe, const Eqn& e) {
  kir::Builder& b = pe.b;
  const std::vector<ClosedJaxprPtr> branches = cond_params(e).branches;
  const int64_t n = int64_t(branches.size());
  const Atom& index = e.inputs.at(0);
  Value idx;
  if (auto* l = std::get_if<Literal>(&index)) idx = b.i32(int32_t(l->value.item<int64_t>()));
  else idx = atom_aval(index).dtype == DType::bool_
                 ? b.cast(Op::ZExt, kir::kI32, b.load(kir::kI8, pe.addr(index), b.i64(0)))
                 : b.load(kir::kI32, pe.addr(index), b.i64(0));
  // Out-of-range indices are clamped, as lax.switch does.
  idx = b.intrinsic("smax", kir::kI32, {b.intrinsic("smin", kir::kI32, {idx, b.i32(int32_t(n - 1))}), b.i32(0)});
  std::function<void(int64_t)> chain = [&](int64_t k) {
    auto run = [&, k] {
      const Jaxpr& br = *branches[size_t(k)]->jaxpr;
      pe.emit_scope(br);
      std::vector<Value> dest;
      for (auto& o : e.outputs) dest.push_back(pe.addr(o));
      end_copies(pe, br, dest, 0);
    };
    if (k == n - 1) return run();
    b.if_(b.icmp(Pred::eq, idx, b.i32(int32_t(k))), run, [&, k] { chain(k + 1); });
  };
  chain(0);
  pe.note(e, "control flow", "native branch over " + std::to_string(n) + " cases");
}

const RegisterProgramRule reg_fusion("fusion", "fused loop", [](ProgramEmitter& pe, const Eqn& e) { pe.call_fusion(e); });
const RegisterProgramRule reg_reshape("reshape", "view", lower_view);
const RegisterProgramRule reg_squeeze("squeeze", "view", lower_view);
const RegisterProgramRule reg_expand("expand_dims", "view", lower_view);
const RegisterProgramRule reg_barrier("optimization_barrier", "view", lower_view);
const RegisterProgramRule reg_scan("scan", "control flow", lower_scan);
const RegisterProgramRule reg_while("while", "control flow", lower_while);
const RegisterProgramRule reg_cond("cond", "control flow", lower_cond);

}  // namespace

std::vector<LoweredEqn> lower_program(kir::Module& m, const Jaxpr& program, const BufferPlan& plan,
                                      std::vector<CollectiveSiteSpec>* collective_sites,
                                      std::vector<profiler::detail::KernelSite>* kernel_sites,
                                      std::vector<HostCallbackSite>* host_callbacks,
                                      std::vector<DnnlSiteSpec>* dnnl_sites) {
  kir::Function f;
  f.name = kEntryName;
  f.params = {kir::kPtr, kir::kPtr, kir::kPtr};
  f.param_names = {"args", "outs", "arenas"};
  f.linkage = kir::Linkage::external;
  // args, outs and arenas are the executor's tables of addresses: the program only reads them,
  // and no buffer overlaps them.
  f.noalias_ptr_params = true;
  kir::Builder b(f);
  ProgramEmitter pe(m, b, plan);
  pe.collective_sites = collective_sites;
  pe.emit_scope(program);
  if (kernel_sites) *kernel_sites = std::move(pe.kernel_sites);
  if (host_callbacks) *host_callbacks = std::move(pe.host_callbacks);
  if (dnnl_sites) *dnnl_sites = std::move(pe.dnnl_sites);
  // Outputs the plan could not place where they are produced (an input or literal returned,
  // a value returned twice) are copied by the runtime from the plan's OutputPlan.
  b.ret();
  m.functions.push_back(std::move(f));
  math::define_outlined_functions(m);  // the transcendentals the kernels call, once each
  return pe.lowered;
}

}  // namespace minijax::lower
