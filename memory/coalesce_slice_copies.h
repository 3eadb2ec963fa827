// minijax host offload, coalescing: a scan whose per-iteration host copies are tiny becomes a scan
// over chunks of k iterations, so each copy moves k slices. An offload stage; core/ only.
#pragma once
#include <vector>

#include "core/jaxpr.h"

namespace minijax {

/// Takes a scan equation after split_copies split its body's device_puts (copy_start /
/// copy_done pairs) and returns the equations that replace it. When the slices the body reloads
/// from or offloads to stacked host buffers (memory/offload_loops.h, SliceCopies) are smaller than
/// `coalesce_bytes`, the scan of length T becomes an outer scan of length T / k whose body runs
/// the original body k times (an inner scan) between one copy of k slices to the device (its host
/// xs chunk) and one copy of k slices to the host (its ys chunk, stacked on the device by the
/// inner scan); xs are reshaped [T, ...] -> [T/k, k, ...] and ys back (views of row-major bytes).
/// The copies carry the param `slices=k`. k is the smallest divisor of T with k × slice bytes >=
/// coalesce_bytes (T itself when the whole stack is smaller); when that divisor is more than four
/// times the needed k, the largest divisor below it instead (a length without a divisor nearby,
/// a prime, stays per-iteration). The scan's `unroll` param goes to the inner scan; the outer
/// scan's is 1. Otherwise the scan is returned unchanged. Values are unchanged:
/// the iterations run in the same order (reverse scans reverse both loops). Source: strip mining
/// (Allen & Kennedy, "Optimizing Compilers for Modern Architectures", 2001, §5.6), applied to
/// XLA's sub-chunk host copies that fail in the reference (docs/offload.md).
std::vector<Eqn> coalesce_slice_copies(const Eqn& scan, int64_t coalesce_bytes);

/// The offload stage coalesce_slice_copies (after split_copies): every scan of `j`, bodies first,
/// through coalesce_slice_copies(scan, coalesce_bytes) above.
Jaxpr coalesce_slice_copies(const Jaxpr& j, int64_t coalesce_bytes);

/// The k coalesce_slice_copies uses for a scan of `length` iterations moving `slice_bytes` per
/// copy (1: no coalescing).
int64_t coalesce_factor(int64_t length, int64_t slice_bytes, int64_t coalesce_bytes);

}  // namespace minijax
