// Test helpers shared by the memory tests: a program as the compiler's passes hand it to the
// memory passes (traced, dead code removed, inlined, simplified, fused: jit/pipeline.cc's order),
// and a call's peak memory as the allocator measured it.
#pragma once
#include <minijax/minijax.h>

#include "core/dce.h"
#include "jit/passes/fuse.h"
#include "jit/passes/inline_calls.h"
#include "jit/pipeline.h"
#include "jit/passes/simplify.h"

namespace memtest {

/// f traced on args, then dce → inline_calls → simplify → fuse.
template <class F, class... A>
mj::Jaxpr fused(F f, const A&... args) {
  mj::ClosedJaxpr cj = mj::make_jaxpr(f)(args...);
  mj::Jaxpr j = mj::convert_constvars_jaxpr(*cj.jaxpr);
  j = mj::dce_jaxpr(j, std::vector<bool>(j.outvars.size(), true), true).first;
  return mj::fuse(mj::simplify(mj::inline_calls(j)));
}

/// The offload stages of jit/pipeline.cc on a fused program (split_copies, coalesce_slice_copies,
/// pipeline_slice_copies, place_copies), tuned as the API tunes them: from config().
inline mj::Jaxpr schedule_offloads(mj::Jaxpr j) {
  mj::CompileOptions opts;
  opts.offload.coalesce_bytes = mj::config().offload_coalesce_bytes;
  opts.offload.prefetch_bytes = mj::config().offload_prefetch_bytes;
  opts.offload.host_link_bytes_per_s = mj::config().host_link_bytes_per_s;
  for (const char* stage : {"split_copies", "coalesce_slice_copies", "pipeline_slice_copies", "place_copies"})
    j = mj::run_stage(stage, j, opts);
  return j;
}

/// Peak bytes of a call, device memory (device 0) and host memory (pinned_host + unpinned_host).
struct Peaks {
  int64_t device = 0, host = 0;
};

/// What the runtime's allocator counted while `call` ran on device 0: the peak of bytes in use
/// minus what was in use before, plus the call's inputs (allocated before it: `device_inputs`,
/// `host_inputs` bytes), so that it compares with memory_analysis()'s peaks.
template <class F>
Peaks measure(F&& call, int64_t device_inputs, int64_t host_inputs) {
  auto host_in_use = [] {
    return mj::memory_stats(0, "pinned_host").bytes_in_use + mj::memory_stats(0, "unpinned_host").bytes_in_use;
  };
  auto host_peak = [] {
    return mj::memory_stats(0, "pinned_host").peak_bytes_in_use + mj::memory_stats(0, "unpinned_host").peak_bytes_in_use;
  };
  mj::reset_peak_memory_stats(0);
  const int64_t d0 = mj::memory_stats(0, "device").bytes_in_use, h0 = host_in_use();
  call();
  Peaks p;
  p.device = mj::memory_stats(0, "device").peak_bytes_in_use - d0 + device_inputs;
  p.host = host_peak() - h0 + host_inputs;
  return p;
}

/// memory_analysis()'s peaks as Peaks.
inline Peaks predicted(const mj::CompiledMemoryStats& m) { return Peaks{m.peak_memory_in_bytes, m.host_peak_memory_in_bytes}; }

}  // namespace memtest
