// minijax loaded executable: everything the runtime needs to run one compiled program (its entry
// point and object code, buffers, donation, constants and site tables), and nothing of its IR.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/aval.h"
#include "core/debug_callback.h"
#include "core/output_plan.h"
#include "core/profiler_hooks.h"
#include "jit/runtime/collective_site.h"
#include "jit/runtime/dnnl_site.h"

namespace minijax {

class DnnlSites;

/// A compiled program as the executors (jit/runtime/execute.h, execute_spmd.h) run it. Built by
/// the pipeline's last stage (load, jit/pipeline.cc) from the compile report (jit/executable.h);
/// the runtime reads nothing else, so it never sees the program's IR.
struct LoadedExecutable {
  std::string name;
  /// The entry function: args (one address per program input: the caller's, then the hoisted
  /// constants), outs (one per output) and arenas (one per MemoryKind).
  using Entry = void (*)(void** args, void** outs, void** arenas);
  Entry entry = nullptr;
  /// Keeps the object code of `entry` loaded (the ORC wrapper's LoadedObject, type-erased).
  std::shared_ptr<const void> code;
  /// The caller's inputs and the outputs (local shards for an SPMD program).
  std::vector<ShapedArray> in_avals, out_avals;
  /// Bytes of the arena of each MemoryKind (device, pinned_host, unpinned_host) one call allocates.
  std::array<int64_t, 3> arena_bytes{};
  /// Per output: where its buffer comes from (core/output_plan.h).
  std::vector<OutputPlan> outputs;
  /// Per program input (caller's inputs, then the hoisted constants, never donated): donated.
  std::vector<bool> donated;
  /// Array constants of inlined call bodies: the entry's trailing inputs after the caller's; the
  /// executors pass them, read-only, on every call.
  std::vector<Array> hoisted_consts;
  /// An SPMD program (run on every device of a mesh by execute_spmd).
  bool spmd = false;
  /// spmd: the collective-site table (mj_rt_collective / mj_rt_axis_index name an index here).
  std::vector<CollectiveSiteSpec> collective_sites;
  /// The kernel call sites of the entry function (mj_rt_kernel_begin/end name their index here):
  /// each kernel's name and its profiler event args, in emission order.
  std::vector<profiler::detail::KernelSite> kernel_sites;
  /// The debug_callback sites of the entry function (mj_rt_host_callback names their index
  /// here): each host function and its operands' avals, in emission order.
  std::vector<HostCallbackSite> host_callbacks;
  /// The oneDNN convolution and pooling sites of the entry function (mj_rt_dnnl names their index
  /// here), in emission order (jit/runtime/dnnl_site.h), and their primitives, built once by load
  /// from them (jit/runtime/dnnl_ops.h; null when there are none).
  std::vector<DnnlSiteSpec> dnnl_sites;
  std::shared_ptr<const DnnlSites> dnnl;
  /// memory_analysis's predicted peak of device memory per call, bytes (capacity errors name it).
  int64_t predicted_device_peak_bytes = 0;
};

}  // namespace minijax
