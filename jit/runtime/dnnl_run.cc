// minijax oneDNN sites, run: the per-thread scope (DnnlScope) with its RunState from the program's
// pool, and mj_rt_dnnl, which runs one site's primitives on the buffers compiled code passes.
#include <oneapi/dnnl/dnnl_debug.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"
#include "core/profiler_hooks.h"
#include "jit/runtime/abi.h"
#include "jit/runtime/dnnl_impl.h"
#include "jit/runtime/dnnl_ops.h"
#include "jit/runtime/parallel_for.h"

namespace minijax {

namespace dnnl_detail {

namespace {

thread_local const SitesImpl* t_sites = nullptr;
thread_local RunState* t_state = nullptr;

std::unique_ptr<RunState> make_run_state(const SitesImpl& impl) {
  const dnnl::engine& eng = cpu_engine();
  auto st = std::make_unique<RunState>();
  st->stream = dnnl::stream(eng);
  const int64_t bytes = int64_t(std::max<size_t>(impl.scratchpad_bytes, 1));
  st->scratchpad = dnnl::memory({{bytes}, dnnl::memory::data_type::u8, dnnl::memory::format_tag::a}, eng);
  st->sites.resize(impl.sites.size());
  for (size_t i = 0; i < impl.sites.size(); ++i) {
    const Site& s = impl.sites[i];
    SiteMemories& m = st->sites[i];
    for (const dnnl::memory::desc& md : s.user_mds)  // no buffer yet: each call sets the caller's
      m.user.emplace_back(md, eng, static_cast<void*>(DNNL_MEMORY_NONE));
    if (s.reorders_weights) m.weights = dnnl::memory(s.prim_weights_md, eng);
    if (s.flips_weights) m.unflipped = dnnl::memory(s.user_mds[weights_index(s.spec.kind)], eng);
    if (s.writes_workspace || s.spec.kind == DnnlOp::pool_backward_max)
      m.workspace = dnnl::memory(s.workspace_md, eng);
    if (s.spec.kind == DnnlOp::pool_backward_max) m.rerun_dst = dnnl::memory(s.rerun_dst_md, eng);
  }
  return st;
}

// The position of the src (or diff_src) in the kind's buffer order, and its dtype.
size_t src_index(DnnlOp k) {
  switch (k) {
    case DnnlOp::conv_backward_data: return 2;
    case DnnlOp::pool_backward_max:
    case DnnlOp::pool_backward_avg_include_padding:
    case DnnlOp::pool_backward_avg_exclude_padding:
    case DnnlOp::pool_backward_sum: return 1;
    default: return 0;
  }
}

// Whether the kind writes its src's gradient (diff_src).
bool writes_diff_src(DnnlOp k) { return k == DnnlOp::conv_backward_data || k >= DnnlOp::pool_backward_max; }

using Args = std::unordered_map<int, dnnl::memory>;

// Copies the weights at `src` (logical dims `dims` = [O, I/G, k...] with element `strides`) to
// the same layout at `dst`, reversed along the spatial dims (2 and after).
void unflip(const char* src, char* dst, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
            size_t item) {
  const size_t nd = dims.size();
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<int64_t> idx(nd, 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t to = 0, from = 0;
    for (size_t d = 0; d < nd; ++d) {
      to += idx[d] * strides[d];
      from += (d >= 2 ? dims[d] - 1 - idx[d] : idx[d]) * strides[d];
    }
    std::memcpy(dst + to * int64_t(item), src + from * int64_t(item), item);
    for (size_t d = nd; d-- > 0;) {  // the next index, row-major
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
}

// The weights the primitive reads or writes: the given buffer, or the RunState's copy reversed
// back (weights_flipped) and/or in the primitive's format (weights_any; filled here from the given
// one for forward and backward-data, copied into it after backward-weights).
const dnnl::memory& weights(const Site& s, RunState& st, SiteMemories& m) {
  const dnnl::memory* given = &m.user[weights_index(s.spec.kind)];
  if (s.flips_weights) {
    unflip(static_cast<const char*>(given->get_data_handle()),
           static_cast<char*>(m.unflipped.get_data_handle()), s.flip_dims, s.flip_strides,
           itemsize(s.spec.dtype));
    given = &m.unflipped;
  }
  if (!s.reorders_weights) return *given;
  if (s.spec.kind != DnnlOp::conv_backward_weights)
    s.weights_reorder.execute(st.stream, {{DNNL_ARG_FROM, *given},
                                          {DNNL_ARG_TO, m.weights},
                                          {DNNL_ARG_SCRATCHPAD, st.scratchpad}});
  return m.weights;
}

void run_conv(const Site& s, RunState& st, SiteMemories& m) {
  const Args common = {{DNNL_ARG_SCRATCHPAD, st.scratchpad}};
  Args a = common;
  switch (s.spec.kind) {
    case DnnlOp::conv_forward:
      a.insert({{DNNL_ARG_SRC, m.user[0]}, {DNNL_ARG_WEIGHTS, weights(s, st, m)}, {DNNL_ARG_DST, m.user[2]}});
      break;
    case DnnlOp::conv_backward_data:
      a.insert({{DNNL_ARG_DIFF_DST, m.user[0]},
                {DNNL_ARG_WEIGHTS, weights(s, st, m)},
                {DNNL_ARG_DIFF_SRC, m.user[2]}});
      break;
    default:
      a.insert({{DNNL_ARG_SRC, m.user[0]},
                {DNNL_ARG_DIFF_DST, m.user[1]},
                {DNNL_ARG_DIFF_WEIGHTS, weights(s, st, m)}});
      break;
  }
  s.prim.execute(st.stream, a);
  if (s.reorders_weights && s.spec.kind == DnnlOp::conv_backward_weights)
    s.weights_reorder.execute(st.stream, {{DNNL_ARG_FROM, m.weights},
                                          {DNNL_ARG_TO, m.user[2]},
                                          {DNNL_ARG_SCRATCHPAD, st.scratchpad}});
}

// pool_backward_sum (f32 only, check_spec): oneDNN's average backward divided each gradient by the
// window's element count; the window sums' gradient is that times the count (the whole diff_src).
void scale_by_window(const DnnlSiteSpec& spec, float* diff_src) {
  int64_t count = 1, n = spec.batch * spec.in_channels;
  for (int64_t k : spec.kernel) count *= k;
  for (int64_t v : spec.in_size) n *= v;
  constexpr int64_t kBlock = int64_t(1) << 14;
  const float c = float(count);
  minijax::parallel_for_blocks((n + kBlock - 1) / kBlock, 1, [&](int64_t first, int64_t last) {
    for (int64_t i = first * kBlock, hi = std::min(n, last * kBlock); i < hi; ++i) diff_src[i] *= c;
  });
}

void run_pool(const Site& s, RunState& st, SiteMemories& m) {
  Args a = {{DNNL_ARG_SCRATCHPAD, st.scratchpad}};
  switch (s.spec.kind) {
    case DnnlOp::pool_forward_max:
    case DnnlOp::pool_forward_avg_include_padding:
    case DnnlOp::pool_forward_avg_exclude_padding:
    case DnnlOp::pool_forward_sum:
      a.insert({{DNNL_ARG_SRC, m.user[0]}, {DNNL_ARG_DST, m.user[1]}});
      if (s.writes_workspace) {
        a.insert({DNNL_ARG_WORKSPACE, m.workspace});
        ++m.forward_runs;
      }
      break;
    case DnnlOp::pool_backward_max: {
      // The forward's argmax, when its site ran once in this run (so on this site's src value);
      // otherwise the forward is rerun on the src into this site's own workspace.
      const dnnl::memory* ws = &m.workspace;
      if (s.workspace_site >= 0 && st.sites[size_t(s.workspace_site)].forward_runs == 1) {
        ws = &st.sites[size_t(s.workspace_site)].workspace;
      } else {
        s.rerun.execute(st.stream, {{DNNL_ARG_SRC, m.user[2]},
                                    {DNNL_ARG_DST, m.rerun_dst},
                                    {DNNL_ARG_WORKSPACE, m.workspace},
                                    {DNNL_ARG_SCRATCHPAD, st.scratchpad}});
      }
      a.insert({{DNNL_ARG_DIFF_DST, m.user[0]}, {DNNL_ARG_DIFF_SRC, m.user[1]}, {DNNL_ARG_WORKSPACE, *ws}});
      break;
    }
    default: a.insert({{DNNL_ARG_DIFF_DST, m.user[0]}, {DNNL_ARG_DIFF_SRC, m.user[1]}}); break;
  }
  s.prim.execute(st.stream, a);
}

void run_site(const SitesImpl& impl, RunState& st, size_t site, void** buffers) {
  const Site& s = impl.sites[site];
  SiteMemories& m = st.sites[site];
  for (size_t k = 0; k < m.user.size(); ++k) m.user[k].set_data_handle(buffers[k]);
  // The src (diff_src) as a view past the columns negative padding crops; a diff_src's cropped
  // elements get no gradient, so the whole buffer is zeroed first.
  const size_t src = src_index(s.spec.kind);
  const DType src_dtype = s.spec.kind == DnnlOp::conv_backward_data ? s.spec.out_dtype : s.spec.dtype;
  const size_t item = itemsize(src_dtype);
  if (s.cropped) {
    if (writes_diff_src(s.spec.kind)) std::memset(buffers[src], 0, size_t(s.src_extent) * item);
    m.user[src].set_data_handle(static_cast<char*>(buffers[src]) + s.src_offset * int64_t(item));
    if (s.spec.kind == DnnlOp::pool_backward_max)  // and the forward's src of the rerun
      m.user[2].set_data_handle(static_cast<char*>(buffers[2]) + s.src_offset * int64_t(item));
  }
  if (s.spec.kind <= DnnlOp::conv_backward_weights) run_conv(s, st, m);
  else run_pool(s, st, m);
  st.stream.wait();
  if (s.spec.kind == DnnlOp::pool_backward_sum) scale_by_window(s.spec, static_cast<float*>(buffers[src]));
}

}  // namespace

}  // namespace dnnl_detail

using namespace dnnl_detail;

DnnlScope::DnnlScope(const DnnlSites* sites) : sites_(sites) {
  if (!sites) return;
  SitesImpl& impl = *sites->impl_;
  {
    std::lock_guard<std::mutex> g(impl.mu);
    if (!impl.idle.empty()) {
      state_ = std::move(impl.idle.back());
      impl.idle.pop_back();
    }
  }
  if (!state_) {
    state_ = make_run_state(impl);
    std::lock_guard<std::mutex> g(impl.mu);
    ++impl.made;
  }
  for (SiteMemories& m : state_->sites) m.forward_runs = 0;
  prev_sites_ = t_sites;
  prev_state_ = t_state;
  t_sites = &impl;
  t_state = state_.get();
}

DnnlScope::~DnnlScope() {
  if (!sites_) return;
  t_sites = prev_sites_;
  t_state = prev_state_;
  SitesImpl& impl = *sites_->impl_;
  try {
    std::lock_guard<std::mutex> g(impl.mu);
    impl.idle.push_back(std::move(state_));
  } catch (...) {  // no room to keep it: the state is freed, a later run makes another
  }
}

}  // namespace minijax

using namespace minijax;

extern "C" void mj_rt_dnnl(int32_t site, void** buffers) {
  const SitesImpl* impl = t_sites;
  RunState* st = t_state;
  if (!impl || !st || site < 0 || size_t(site) >= impl->sites.size()) {
    detail::record_runtime_error("mj_rt_dnnl: no oneDNN site " + std::to_string(site) +
                                 " is installed for this program on this thread");
    return;
  }
  const Site& s = impl->sites[size_t(site)];
  profiler::detail::Scope trace("dnnl", dnnl_op_name(s.spec.kind));
  if (trace.active())
    trace.set_args(profiler::detail::Args().add("site", int64_t(site)).add("impl", s.impl).take());
  std::string why;
  try {
    TeamGuard team(impl->threads);
    run_site(*impl, *st, size_t(site), buffers);
    return;
  } catch (const dnnl::error& e) {
    why = std::string("oneDNN: ") + e.what() + " (" + dnnl_status2str(e.status) + ")";
  } catch (const std::exception& e) {
    why = e.what();
  }
  detail::record_runtime_error("mj_rt_dnnl: site " + std::to_string(site) + " (" + dnnl_op_name(s.spec.kind) +
                               ", " + s.impl + "): " + why);
}

namespace {

// Whether n elements of T (raw IEEE bits) hold a NaN or -inf: per block of the oneTBB pool, an OR
// of integer compares over the bits (the compiler vectorizes it; no branch per element).
template <class T, T kAbs, T kInf, T kNegInf>
bool any_nan_or_neg_inf(const T* x, int64_t n) {
  constexpr int64_t kBlock = int64_t(1) << 15;
  std::atomic<bool> found{false};
  minijax::parallel_for_blocks((n + kBlock - 1) / kBlock, 1, [&](int64_t first, int64_t last) {
    for (int64_t blk = first; blk < last && !found.load(std::memory_order_relaxed); ++blk) {
      const int64_t lo = blk * kBlock, hi = std::min(n, lo + kBlock);
      T flag = 0;
      for (int64_t i = lo; i < hi; ++i) flag |= T((x[i] & kAbs) > kInf) | T(x[i] == kNegInf);
      if (flag) found.store(true, std::memory_order_relaxed);
    }
  });
  return found.load();
}

}  // namespace

extern "C" int32_t mj_rt_max_pool_needs_loop(const void* src, int32_t dtype, int64_t n) {
  if (DType(dtype) == DType::f32)
    return any_nan_or_neg_inf<uint32_t, 0x7fffffffu, 0x7f800000u, 0xff800000u>(static_cast<const uint32_t*>(src), n);
  if (DType(dtype) == DType::bf16)
    return any_nan_or_neg_inf<uint16_t, 0x7fff, 0x7f80, 0xff80>(static_cast<const uint16_t*>(src), n);
  return 1;  // no other dtype reaches oneDNN's pooling
}

extern "C" int32_t mj_rt_dnnl_forward_ran_once(int32_t site) {
  const RunState* st = t_state;
  if (!st || site < 0 || size_t(site) >= st->sites.size()) return 0;
  return st->sites[size_t(site)].forward_runs == 1;
}
