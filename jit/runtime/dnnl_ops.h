// minijax oneDNN convolution and pooling at run time: the per-program primitives (DnnlSites), the
// per-thread scope a run installs (DnnlScope) and mj_rt_dnnl, which compiled code calls per site.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "jit/runtime/dnnl_site.h"

namespace minijax {

namespace dnnl_detail {
struct SitesImpl;
struct RunState;
}  // namespace dnnl_detail

/// Whether oneDNN 2.6's CPU engine creates a primitive for `spec`: the spec is checked (sizes,
/// output sizes, strides, dtypes) and the primitive descriptor created (what oneDNN rejects,
/// such as f64 or integer dtypes, throws dnnl::error inside, caught here). When not, and `why`
/// is given, *why says why ("f64: oneDNN has no f64 convolution on the CPU", "oneDNN: could not
/// create a primitive descriptor ... (unimplemented)"). Never throws for a bad spec. The compiler
/// asks this before it emits a site; what it refuses is compiled as a loop nest.
bool dnnl_supported(const DnnlSiteSpec& spec, std::string* why = nullptr);

/// The implementation oneDNN picks for a supported spec (pd.impl_info_str(): "jit:avx512_core",
/// "x64:gemm:jit", "ref:any", ...), with `threads` in the OpenMP team the primitive is created
/// for (0: dnnl_default_threads(); SPMD programs run with 1). Throws ValueError (with
/// dnnl_supported's reason) for an unsupported spec.
std::string dnnl_impl_name(const DnnlSiteSpec& spec, int threads = 0);

/// The copies a convolution site makes of its weights on every call: with weights_flipped, the
/// weights reversed back into their given layout; with weights_any, when oneDNN picked another
/// format, the reorder from the given layout into it (forward, backward-data) or, `after` the
/// primitive, from it into the given layout (backward-weights). `from` and `to` are the formats as
/// text: the dtype, the logical dims from outermost to innermost in memory ('a' is the first:
/// "f32 cdba" is HWIO for [O, I, H, W]; upper case for a blocked dim) and the inner blocks
/// ("f32 ABcd16b16a"); " flipped" marks weights reversed along their spatial dims. `bytes`: of
/// the weights as given. needed false: no copy (pooling sites included).
struct DnnlWeightsReorder {
  bool needed = false;
  std::string from, to;
  int64_t bytes = 0;
  bool after = false;
};
/// The weights copies of `spec` (above), with `threads` as dnnl_impl_name. Throws as dnnl_impl_name.
DnnlWeightsReorder dnnl_weights_reorder(const DnnlSiteSpec& spec, int threads = 0);

/// Element strides of the logical dims of a row-major array of shape `shape` whose logical dim k
/// is array axis axes[k]: NHWC [N,H,W,C] as [N, C, H, W] is axes {0, 3, 1, 2}, HWIO [H,W,I,O] as
/// [O, I, H, W] is axes {3, 2, 0, 1}. Throws ValueError when axes is not a permutation of shape's.
std::vector<int64_t> dnnl_layout_strides(const std::vector<int64_t>& shape, const std::vector<int>& axes);

/// The OpenMP team of a oneDNN call of a program run on one device: omp_get_max_threads() as the
/// first caller in the process sees it (OMP_NUM_THREADS when set, else the CPUs of the process's
/// affinity mask). See DnnlSites on threads.
int dnnl_default_threads();

/// The oneDNN primitives of one compiled program, one per site of its table, created once (by
/// the pipeline's load stage, jit/pipeline.cc) and shared, read-only, by every run of the
/// program on any thread. Each site's primitive is created with a user-managed scratchpad: oneDNN
/// 2.6's default (library) scratchpad is one buffer per thread shared by every primitive and only
/// safe when a primitive runs on the thread that created it (oneDNN's docs, dnnl::scratchpad_mode);
/// user mode is thread-safe as long as two executions never share a scratchpad buffer. So the
/// buffers a run needs (the scratchpad, as large as the largest site's; the max-pooling
/// workspaces; the reordered or unflipped weights; the forward rerun's output) live in a
/// RunState, of which each thread running the program holds one for the run (DnnlScope): states
/// are made when more threads run at once than ever before and reused afterwards, never freed
/// before the DnnlSites.
///
/// Threads: oneDNN's CPU runtime here is OpenMP. A program run on one device runs each primitive
/// with an OpenMP team of `threads` (dnnl_default_threads(): the cores), which oneDNN splits its
/// work over (the GEMM runtime instead keeps OpenMP to one thread per call and splits over
/// oneTBB, gemm.h; a convolution split that way would lose oneDNN's own blocking and reduction
/// across threads). An SPMD program (LoadedExecutable::spmd) runs with threads = 1: its device
/// threads already run at once, one per device, and a team of 1 starts no OpenMP thread. The
/// team size is set on the calling thread for the call only (omp_set_num_threads, restored
/// after), and the primitives are created with the same team size, since oneDNN sizes a
/// primitive's per-thread buffers at creation. Waiting: the library does not change the
/// process's environment, so between calls the team's threads wait as libgomp's policy says:
/// with OMP_WAIT_POLICY unset they spin for GOMP_SPINCOUNT iterations (300,000 by default; 1,000
/// when more threads than CPUs wait) and then sleep in the kernel, so none spins indefinitely
/// (measured on the 2-core machine: 6-9 ms of CPU in the 200 ms after a convolution with the
/// default policy, under 0.5 ms with OMP_WAIT_POLICY=passive, which bench/run_all.sh sets).
class DnnlSites {
 public:
  /// Creates every site's primitive (and the forward primitive a pool_backward_max site without
  /// a usable forward workspace reruns). `threads` >= 1. Throws ValueError naming the site when
  /// a spec is not supported (dnnl_supported's reason) or a forward_site link is not a
  /// pool_forward_max site of the same sizes.
  DnnlSites(std::vector<DnnlSiteSpec> specs, int threads);
  ~DnnlSites();
  DnnlSites(const DnnlSites&) = delete;
  DnnlSites& operator=(const DnnlSites&) = delete;

  size_t size() const;
  int threads() const;
  const DnnlSiteSpec& spec(size_t site) const;
  /// The implementation oneDNN picked for the site (as dnnl_impl_name).
  const std::string& impl_name(size_t site) const;
  /// pool_backward_max: whether the site reads its forward_site's workspace when that site ran
  /// once (false when unlinked, or when the two primitives' workspaces differ: then it always
  /// reruns the forward).
  bool reads_forward_workspace(size_t site) const;
  /// The largest scratchpad of the sites, bytes (each RunState holds one).
  int64_t scratchpad_bytes() const;
  /// RunStates made so far (the most threads that ran the program at once).
  size_t run_states() const;

 private:
  friend class DnnlScope;
  std::unique_ptr<dnnl_detail::SitesImpl> impl_;
};

/// Installs `sites` (LoadedExecutable::dnnl; nullptr: nothing is installed) for mj_rt_dnnl on
/// the calling thread while the object lives, with a RunState of its own for the run (max-pooling
/// workspaces start unwritten); the previous installation is restored after (a host callback may
/// run another jitted program). The executors create one around each run of a program with
/// oneDNN sites (execute.cc, execute_spmd.cc). mj_rt_dnnl must be called on the thread that
/// installed the scope (the program's entry, not a mj_rt_parallel_for kernel). Throws what
/// making a RunState throws (allocation; oneDNN errors).
class DnnlScope {
 public:
  explicit DnnlScope(const DnnlSites* sites);
  ~DnnlScope();
  DnnlScope(const DnnlScope&) = delete;
  DnnlScope& operator=(const DnnlScope&) = delete;

 private:
  const DnnlSites* sites_ = nullptr;
  std::unique_ptr<dnnl_detail::RunState> state_;
  const dnnl_detail::SitesImpl* prev_sites_ = nullptr;
  dnnl_detail::RunState* prev_state_ = nullptr;
};

}  // namespace minijax

extern "C" {
/// Runs oneDNN site `site` of the running program's table (DnnlScope) on `buffers`, in the
/// order dnnl_site.h gives per kind, with the site's OpenMP team (DnnlSites). Errors (no table
/// installed, a site out of range, a oneDNN failure) are recorded as the thread's runtime error
/// (take_runtime_error, abi.h), never thrown through compiled frames.
void mj_rt_dnnl(int32_t site, void** buffers);
/// Whether the `n` elements at `src` (dtype f32 or bf16, a minijax DType) hold a NaN or -inf: then
/// oneDNN's max pooling (which skips NaNs and starts each window at the lowest finite value)
/// differs from reduce_window_max (NaN propagates, -inf stays -inf), and the compiled program runs
/// its loop nest instead. Scans in blocks on the oneTBB pool; 1 for any other dtype.
int32_t mj_rt_max_pool_needs_loop(const void* src, int32_t dtype, int64_t n);
/// Whether pool_forward_max site `site` of the running program ran exactly once in this run (so a
/// pool_backward_max linked to it reads its workspace, and its operand held no NaN or -inf: the
/// compiled program ran the loop nest instead otherwise). 0 with no table installed.
int32_t mj_rt_dnnl_forward_ran_once(int32_t site);
}
