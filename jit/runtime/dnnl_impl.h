// minijax oneDNN runtime internals shared by dnnl_ops.cc (building the primitives) and
// dnnl_run.cc (running them): a built site, a run's buffers, the OpenMP team guard.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "jit/runtime/dnnl_ops.h"

// The two calls of the OpenMP API used here, declared as jit/runtime/gemm.cc declares them (libgomp
// defines them; omp.h is GCC's and clang's sanitizer builds have none).
extern "C" {
int omp_get_max_threads(void);
void omp_set_num_threads(int);
}

namespace minijax::dnnl_detail {

/// Sets the calling thread's OpenMP team size (its nthreads ICV, which only this thread's parallel
/// regions read) to `threads` for the guard's life, restoring it after, also when unwinding.
class TeamGuard {
 public:
  explicit TeamGuard(int threads) : prev_(omp_get_max_threads()), set_(threads != prev_) {
    if (set_) omp_set_num_threads(threads);
  }
  ~TeamGuard() {
    if (set_) omp_set_num_threads(prev_);
  }
  TeamGuard(const TeamGuard&) = delete;
  TeamGuard& operator=(const TeamGuard&) = delete;

 private:
  int prev_;
  bool set_;
};

/// The CPU engine every site uses (made once, never destroyed: device threads may use it at exit).
const dnnl::engine& cpu_engine();

/// One site with its primitives, built once.
struct Site {
  DnnlSiteSpec spec;
  std::string impl;
  /// The user's tensors as passed, in the kind's buffer order (dnnl_site.h), each as oneDNN reads
  /// it: the src (or diff_src) is a view that starts `src_offset` elements into its buffer when
  /// negative padding crops it.
  std::vector<dnnl::memory::desc> user_mds;
  int64_t src_offset = 0;
  /// Elements the src (diff_src) buffer spans; zeroed before a cropped diff_src is written (the
  /// cropped-away inputs get no gradient).
  int64_t src_extent = 0;
  bool cropped = false;
  dnnl::primitive prim;
  /// weights_any with a format other than the given one: the reorder (given -> primitive's for
  /// forward and backward-data, primitive's -> given for backward-weights) and that format.
  bool reorders_weights = false;
  dnnl::primitive weights_reorder;
  dnnl::memory::desc prim_weights_md;
  /// weights_flipped: the weights' logical dims [O, I/G, k...] and their strides, for the copy
  /// that reverses them back (into a RunState buffer of the given layout).
  bool flips_weights = false;
  std::vector<int64_t> flip_dims, flip_strides;
  /// pool_forward_max: a backward site reads its workspace (created for training: it writes one).
  bool writes_workspace = false;
  /// Max pooling (forward with writes_workspace, backward): the workspace's format.
  dnnl::memory::desc workspace_md;
  /// pool_backward_max: the forward site whose workspace it reads, or -1; the forward it reruns
  /// otherwise and that forward's dst format.
  int32_t workspace_site = -1;
  dnnl::primitive rerun;
  dnnl::memory::desc rerun_dst_md;
  size_t scratchpad_bytes = 0;
};

/// Builds a site (validated first): throws std::invalid_argument with the reason for what the
/// spec gets wrong or oneDNN does not support, dnnl::error from oneDNN itself. `writes_workspace`:
/// a pool_forward_max site whose workspace a backward site reads. Without `make_primitives`,
/// only the descriptors (what dnnl_supported and dnnl_impl_name need; no kernel is generated).
Site build_site(const DnnlSiteSpec& spec, bool writes_workspace, bool make_primitives);

/// The position of the weights (or diff_weights) in a convolution kind's buffer order.
inline size_t weights_index(DnnlOp k) { return k == DnnlOp::conv_backward_weights ? 2 : 1; }

/// The buffers of one site in one RunState.
struct SiteMemories {
  std::vector<dnnl::memory> user;  // over the call's buffers (handles set at each call)
  dnnl::memory weights;            // reorders_weights: the primitive's weights
  dnnl::memory unflipped;          // flips_weights: the weights reversed back, in the given layout
  dnnl::memory workspace;  // max pooling: written by the forward (or the rerun), read by the backward
  dnnl::memory rerun_dst;  // pool_backward_max: the rerun forward's output
  int64_t forward_runs = 0;  // pool_forward_max: runs in the current scope
};

/// What one thread's run of a program uses: a stream, a scratchpad, each site's buffers.
struct RunState {
  dnnl::stream stream;
  dnnl::memory scratchpad;
  std::vector<SiteMemories> sites;
};

struct SitesImpl {
  int threads = 1;
  std::vector<Site> sites;
  size_t scratchpad_bytes = 0;
  mutable std::mutex mu;
  std::vector<std::unique_ptr<RunState>> idle;  // under mu
  size_t made = 0;  // under mu
};

}  // namespace minijax::dnnl_detail
