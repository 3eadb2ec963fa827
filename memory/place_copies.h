// minijax offload stage place_copies: the start and the done of every copy between memory kinds
// placed among the equations that compute. The last offload stage (jit/pipeline.cc).
#pragma once
#include "core/jaxpr.h"
#include "memory/offload_options.h"

namespace minijax {

/// Takes a jaxpr after split_copies, coalesce_slice_copies and pipeline_slice_copies and returns
/// it, bodies first, with each copy's halves moved, by the estimated time of the equations
/// between (offload_estimate_seconds) and the copy's time (bytes / opts.host_link_bytes_per_s, or
/// 10 GB/s when it is 0): an offload's start right after its operands exist and its done once
/// the computing equations after the start cover the copy (no later than its value's first
/// reader), so its device source is freed as early as the copy allows; a reload's done right
/// before its value's first reader and its start as late as still hides the copy, never earlier
/// than a slot where the reloads in flight would exceed opts.prefetch_bytes of device memory
/// (bounded lookahead; 0: unbounded). A done whose copy started outside its scope (the previous
/// iteration, or inside a loop) counts from the start of the scope. The values computed are
/// unchanged. With config().verify_jaxprs, the result is verified (every value bound before its
/// use). Source: XLA's memory-space assignment (xla/service/memory_space_assignment: prefetch
/// windows, cross-iteration prefetch) and its host offloader (xla/service/host_offloader.cc).
Jaxpr place_copies(const Jaxpr& j, const OffloadOptions& opts);

/// The estimated seconds of one equation on one device: dot_general at 2·M·N·K flops at 100
/// GFLOP/s, views, allocations and copies 0, everything else its operand and result bytes at
/// 10 GB/s, a scan its body times its length. A rough, constant-rate model: it only orders
/// copies against compute.
double offload_estimate_seconds(const Eqn& e);

}  // namespace minijax
