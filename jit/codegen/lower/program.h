// minijax program lowering: the planned, fused jaxpr as one KIR entry function that calls its
// kernels, the GEMM library and the runtime, with scan/while/cond as native loops and branches.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/jaxpr.h"
#include "core/debug_callback.h"
#include "core/profiler_hooks.h"
#include "jit/codegen/kir.h"
#include "jit/codegen/lower/lowering.h"
#include "jit/runtime/collective_site.h"
#include "jit/runtime/dnnl_site.h"
#include "memory/plan_buffers.h"

namespace minijax::lower {

/// The entry function's name and signature: void minijax_main(ptr args, ptr outs, ptr arenas)
/// where args/outs are arrays of buffer addresses (one per program input/output) and arenas the
/// addresses of the temporary arenas per memory kind (device, pinned_host, unpinned_host).
inline constexpr const char* kEntryName = "minijax_main";

/// How each equation of the program was lowered, for Compiled::as_text and the registry test.
struct LoweredEqn {
  std::string strategy;  ///< "fused loop", "library call", "runtime call", "control flow", "view", ...
  std::string text;      ///< one line: kernel name and shape, GEMM flags, ...
};

class ProgramEmitter;

/// The lowering of a non-fused primitive in the program function (XLA's thunks, inlined).
using ProgramRule = std::function<void(ProgramEmitter& pe, const Eqn& eqn)>;

/// The operands of an equation whose rule asks whether they hold a NaN or -inf
/// (ProgramEmitter::nonfinite_flag).
using WatchedOperands = std::function<std::vector<size_t>(const Eqn& eqn)>;

/// The program rules keyed by primitive name, with their strategy name.
struct ProgramRuleEntry {
  std::string strategy;
  ProgramRule rule;
  WatchedOperands watched = nullptr;
};
std::map<std::string, ProgramRuleEntry>& program_rules();
struct RegisterProgramRule {
  RegisterProgramRule(const std::string& prim, std::string strategy, ProgramRule rule,
                      WatchedOperands watched = nullptr);
};

/// Emits the entry function, equation by equation.
class ProgramEmitter {
 public:
  ProgramEmitter(kir::Module& m, kir::Builder& b, const BufferPlan& plan);

  kir::Module& module;
  kir::Builder& b;
  const BufferPlan& plan;

  /// Emits every equation of scope `j` (the program or a body) in order.
  void emit_scope(const Jaxpr& j);
  /// The address (ptr) of atom a's buffer: from its planned location; a literal is stored to a
  /// fresh stack slot first.
  kir::Value addr(const Atom& a);
  /// Copies `bytes` from src to dst unless they are the same address (a runtime test).
  void copy_if_different(kir::Value dst, kir::Value src, int64_t bytes);
  /// Stores literal l's element into dst (in its storage representation).
  void store_literal(kir::Value dst, const Literal& l);
  /// Copies atom a (a variable or literal) to dst.
  void copy_atom(kir::Value dst, const Atom& a);

  /// The equation of the program (or of a body emitted so far) whose output `a` is; nullptr for a
  /// literal, an input or a body's invar.
  const Eqn* producer(const Atom& a) const;
  /// Whether the bytes of `a` are still those it was computed with (or given as) when equation
  /// `e` runs, so that a runtime call at `e` may read them although `e` does not take `a` as an
  /// operand: a program input that is not donated, or a value of e's own scope that a later
  /// equation of the scope or the scope's outputs read (the buffer plan never lets another value
  /// overwrite a live one). False for a literal and for anything else.
  bool intact_at(const Atom& a, const Eqn& e) const;
  /// The address of an i32 that is nonzero iff value `a` holds a NaN or -inf, or an invalid Value
  /// when nothing computed that: the loop fusion that wrote `a` checked each element it stored
  /// (emit_fusion_kernel's watch) because an equation of its scope whose rule watches that operand
  /// (RegisterProgramRule's `watched`) reads it. Valid after the fusion's emission.
  kir::Value nonfinite_flag(const Atom& a) const;

  /// The current iteration of the scan `loop` (an i64), while its body is being emitted.
  kir::Value iteration(const Eqn* loop) const;
  /// Runs `body` with `loop`'s iteration set to i (for loop_slice addresses).
  void with_iteration(const Eqn* loop, kir::Value i, const std::function<void()>& body);

  /// Emits the kernel of a fusion equation and the call of it on [0, outer) (in parallel through
  /// the runtime when it is large).
  void call_fusion(const Eqn& fusion);
  /// A fresh function name with `stem` (kernel names are unique per module).
  std::string fresh_name(const std::string& stem);
  /// Declares runtime function `name` (idempotent) and calls it.
  kir::Value call_runtime(const std::string& name, kir::Type ret, const std::vector<kir::Type>& params,
                          const std::vector<kir::Value>& args);
  /// The base address of the temporary arena of memory kind k.
  kir::Value arena(MemoryKind k) const { return arena_base_.at(size_t(k)); }
  /// The address of equation e's workspace (BufferPlan::scratch_of) in the device arena. Throws
  /// ValueError naming the primitive when the plan gave it none.
  kir::Value scratch(const Eqn& e);
  /// Records how eqn was lowered (for as_text), except inside emit_copy_of_scope(true, ...).
  void note(const Eqn& eqn, const std::string& strategy, const std::string& text);
  /// Runs `emit`, which emits a scope's equations; `again`: they were emitted before (a copy of
  /// an unrolled loop body), so their notes are not recorded twice. A fusion emitted again calls
  /// the kernel of its first emission (call_fusion) and a collective reuses its site.
  void emit_copy_of_scope(bool again, const std::function<void()>& emit);
  /// The index in collective_sites of collective `e` (added on its first emission).
  int32_t collective_site(const Eqn& e);
  /// The index in host_callbacks of debug_callback `e` (added on its first emission). Throws
  /// ValueError when e's params hold no host function (a jaxpr parsed from text).
  int32_t host_callback_site(const Eqn& e);

  /// The index in dnnl_sites of the oneDNN call of equation `e` (added, as `spec`, on its first
  /// emission; an unrolled copy of a body calls the same site).
  int32_t dnnl_site(const Eqn& e, const DnnlSiteSpec& spec);

  std::vector<LoweredEqn> lowered;  ///< in emission order (bodies' equations after their loop)
  /// An SPMD program (compiled for the devices of a mesh): its collectives over more than one
  /// device and its axis_index equations are runtime calls (mj_rt_collective, mj_rt_axis_index)
  /// naming their index in this table (each site described once, at its first emission), which
  /// the executor binds to the mesh and turns into communicator operations. Null for a program
  /// compiled for one device (collectives of axis_size > 1 are refused).
  std::vector<CollectiveSiteSpec>* collective_sites = nullptr;
  /// The kernel call sites, in emission order: call_fusion brackets kernel i's call with
  /// mj_rt_kernel_begin(i) / mj_rt_kernel_end(i), always (with no trace active each costs a call
  /// and one atomic load), so one object code serves traced and untraced runs alike.
  std::vector<profiler::detail::KernelSite> kernel_sites;
  /// The debug_callback sites, in emission order: each is a call mj_rt_host_callback(i, operands).
  std::vector<HostCallbackSite> host_callbacks;
  /// The oneDNN convolution and pooling sites, in emission order: each is a call
  /// mj_rt_dnnl(i, buffers) (jit/runtime/dnnl_ops.h), whose primitive the loaded program
  /// creates once.
  std::vector<DnnlSiteSpec> dnnl_sites;
  /// The equation of each oneDNN site (parallel to dnnl_sites).
  std::vector<const Eqn*> dnnl_site_eqns;

 private:
  kir::Value args_, outs_, arenas_;
  std::vector<kir::Value> arena_base_;
  std::unordered_map<const Eqn*, kir::Value> iter_;
  std::unordered_map<uint64_t, const Eqn*> producers_;  ///< by Var id, filled by emit_scope
  /// Where each equation is and, by Var id, the last equation that reads each value (SIZE_MAX:
  /// an output of the scope), as (scope, index in it); filled by emit_scope, for intact_at.
  using ScopeIndex = std::pair<const Jaxpr*, size_t>;
  std::unordered_map<const Eqn*, ScopeIndex> positions_;
  std::unordered_map<uint64_t, ScopeIndex> last_reads_;
  std::map<std::string, int> names_;
  /// The kernel each fusion equation was emitted as (call_fusion), by equation.
  struct EmittedKernel {
    std::string name;
    KernelInfo info;
    bool parallel = false;
    int32_t site = 0;
    kir::Value bufs;
    std::vector<size_t> watch;       ///< watched outputs
    std::vector<kir::Value> flags;   ///< their i32 flags (function stack slots)
  };
  std::unordered_set<uint64_t> watched_vars_;                 ///< by Var id, filled by emit_scope
  std::unordered_map<uint64_t, kir::Value> nonfinite_flags_;  ///< by Var id, filled by call_fusion
  std::unordered_map<const Eqn*, EmittedKernel> kernels_;
  std::unordered_map<const Eqn*, int32_t> collective_site_ids_;
  std::unordered_map<const Eqn*, int32_t> host_callback_ids_;
  std::unordered_map<const Eqn*, int32_t> dnnl_site_ids_;
  int muted_ = 0;
};

/// The site-table entry of collective or axis_index equation `e` of SPMD program `program` (its
/// name: the entry in the table for its kind, params, dtype, local shapes and bytes, and its
/// stable id Eqn::site). ValueError (an internal error naming the primitive and the program) when
/// `e` has no site id: number_collective_sites did not run, or a pass lost it.
CollectiveSiteSpec describe_collective_site(const Eqn& e, const std::string& program = "");

/// Lowers `program` (fused; planned by `plan`) into module m: kernels + the entry function.
/// Returns how each equation was lowered. Throws ValueError naming the primitive for an equation
/// no rule lowers. `collective_sites`: non-null for an SPMD program (ProgramEmitter's field): it
/// receives the table of the collective and axis_index sites the code calls the runtime for, in
/// site order (describe_collective_site).
/// `kernel_sites`, `host_callbacks` and `dnnl_sites`, when given, receive ProgramEmitter's lists.
std::vector<LoweredEqn> lower_program(kir::Module& m, const Jaxpr& program, const BufferPlan& plan,
                                      std::vector<CollectiveSiteSpec>* collective_sites = nullptr,
                                      std::vector<profiler::detail::KernelSite>* kernel_sites = nullptr,
                                      std::vector<HostCallbackSite>* host_callbacks = nullptr,
                                      std::vector<DnnlSiteSpec>* dnnl_sites = nullptr);

}  // namespace minijax::lower
