// minijax host offload, pipelining: a scan's per-iteration copies to and from stacked host buffers
// overlap the next iteration (prefetch, deferred completion). An offload stage; core/ only.
#pragma once
#include <vector>

#include "core/jaxpr.h"

namespace minijax {

/// Takes a scan equation after split_copies split its body's device_puts (and after
/// coalesce_slice_copies) and returns the equations that replace it, computing the same values.
/// With `row` the stacked row of the current iteration (carried: length − 1 − i when reversed):
/// - each *reloaded* stacked host xs R (memory/offload_loops.h, SliceCopies) becomes a loop
///   constant; the loop carries the device slice of the current iteration, and its body starts
///   `copy_slice_start[memory_kind=device](R, next row)` for the next iteration while the current
///   one computes, finished by a copy_done that is the carried value of the next iteration. The
///   first slice is loaded before the loop; the prefetch past the last iteration reads an index
///   outside R and copies nothing.
/// - each *offloaded* ys becomes a loop-carried stacked host buffer (allocate_buffer before the
///   loop, no bytes written); the device slice r an iteration computes is carried into the next,
///   whose body starts `copy_update_start(R, carried r, previous row)` first and finishes it
///   with a copy_done while it computes (the carried buffer is the copy's source, so it stays
///   untouched until the done); the first iteration's previous row is outside R (nothing
///   copied), and the last slice is copied after the loop.
/// Scans without such slices are returned unchanged. Placement inside the body is left to
/// place_copies. Source: software pipelining of loop-carried transfers (XLA memory-space
/// assignment's cross-iteration prefetch, xla/service/memory_space_assignment; double
/// buffering), with the host buffer written as XLA's host offloader writes it (a dynamic update
/// slice into a loop-carried host allocation, xla/service/host_offloader.cc).
std::vector<Eqn> pipeline_slice_copies(const Eqn& scan);

/// The offload stage pipeline_slice_copies (after coalesce_slice_copies): every scan of `j`,
/// bodies first, through pipeline_slice_copies(scan) above.
Jaxpr pipeline_slice_copies(const Jaxpr& j);

}  // namespace minijax
