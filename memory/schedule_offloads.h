// minijax compiler pass schedule_offloads: copies between memory kinds made asynchronous.
// Owns schedule_offloads (after fuse, before analyze_liveness in jit/pipeline.cc) and its estimates.
#pragma once
#include "core/jaxpr.h"

namespace minijax {

/// Takes a jaxpr after fusion; returns one in which every `device_put` of a variable between two
/// memory kinds is split into `h = copy_start[memory_kind] x` and `b = copy_done h x` (b the
/// device_put's output; x an operand of the done, so liveness keeps the source until the copy
/// completes), in every body too. Placement, by the estimated time of the equations between
/// (offload_estimate_seconds):
/// - an offload (to a host kind): the start right after x's producer; the done after the first
///   equations whose estimated time covers the copy's, or before b's first reader if that comes
///   sooner, so the device buffer is released as early as the copy allows;
/// - a reload (to device): the done right before b's first reader; the start as late as lets the
///   equations before that reader cover the copy, but after x is defined.
/// Device-to-device and literal device_puts are kept. The copy's time is bytes /
/// config().host_link_bytes_per_s, or bytes / 10 GB/s when no link is emulated. Values are
/// unchanged. Source: XLA's copy-start/copy-done and its memory-space assignment
/// (xla/service/memory_space_assignment), simplified to one copy at a time per value.
Jaxpr schedule_offloads(const Jaxpr& j);

/// The estimated seconds of one equation on one device: dot_general at 2·M·N·K flops at 20
/// GFLOP/s, everything else its operand and result bytes at 10 GB/s, a scan its body times its
/// length. A rough, constant-rate model: it only orders copies against compute.
double offload_estimate_seconds(const Eqn& e);

}  // namespace minijax
