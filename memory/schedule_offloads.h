// minijax compiler pass schedule_offloads: copies between memory kinds made asynchronous, loops'
// slice copies coalesced and pipelined. Owns schedule_offloads (after fuse, before liveness).
#pragma once
#include "core/jaxpr.h"

namespace minijax {

/// Takes a jaxpr after fusion and returns one computing the same values in which copies between
/// memory kinds run asynchronously, on the device's copy engine, overlapped with compute. Three
/// steps, each over the program and every body:
/// 1. every `device_put` of a variable between two memory kinds becomes `h = copy_start[K] x`
///    and `b = copy_done h x` (x an operand of the done, so liveness keeps the source until the
///    copy completes; the handle h orders the pair, as a token would). Device-to-device and
///    literal device_puts are kept.
/// 2. loops (scan, bodies first): the slices a body moves to or from stacked host buffers one
///    per iteration are coalesced when smaller than config().offload_coalesce_bytes
///    (memory/coalesce_slice_copies.h: k slices per copy, `slices=k` on the copy), then
///    pipelined (memory/pipeline_slice_copies.h): a reloaded stack becomes a loop constant read
///    by copy_slice_start at a carried row index, the next iteration's slice prefetched while the
///    current one computes and the first loaded before the loop; an offloaded stack a loop-carried
///    host buffer written by copy_update_start, each copy completing in the next iteration.
/// 3. placement, by the estimated time of the equations between (offload_estimate_seconds) and
///    the copy's time (bytes / config().host_link_bytes_per_s, or 10 GB/s when no link is
///    emulated): an offload's start right after its operands exist and its done once the
///    computing equations after the start cover the copy (no later than its value's first
///    reader), so its device source is freed as early as the copy allows; a reload's done right
///    before its value's first reader and its start as late as still hides the copy, never
///    earlier than a slot where the reloads in flight would exceed
///    config().offload_prefetch_bytes of device memory (bounded lookahead). A done whose copy
///    started outside its scope (the previous iteration, or inside a loop) counts from the start
///    of the scope.
/// Source: XLA's copy-start/copy-done, its memory-space assignment
/// (xla/service/memory_space_assignment: prefetch windows, cross-iteration prefetch) and its
/// host offloader (xla/service/host_offloader.cc), with the sub-chunk copies that fail there
/// (docs/offload.md) made first-class.
Jaxpr schedule_offloads(const Jaxpr& j);

/// The estimated seconds of one equation on one device: dot_general at 2·M·N·K flops at 100
/// GFLOP/s, views, allocations and copies 0, everything else its operand and result bytes at
/// 10 GB/s, a scan its body times its length. A rough, constant-rate model: it only orders
/// copies against compute.
double offload_estimate_seconds(const Eqn& e);

}  // namespace minijax
