// minijax offload stage split_copies: every device_put of a variable between memory kinds becomes
// an asynchronous copy, copy_start then copy_done. The first offload stage (jit/pipeline.cc).
#pragma once
#include "core/jaxpr.h"

namespace minijax {

/// Takes a jaxpr after fusion and returns it, bodies too, with every `device_put` of a variable
/// between two memory kinds replaced by `h = copy_start[K] x` and `b = copy_done h x` (x an
/// operand of the done, so liveness keeps the source until the copy completes; the handle h
/// orders the pair, as a token would). Device-to-device and literal device_puts are kept. The
/// copies stay where the device_put was: place_copies (memory/place_copies.h) moves them.
/// Source: XLA's copy-start/copy-done (xla/service/copy_insertion, host_offloader.cc).
Jaxpr split_copies(const Jaxpr& j);

}  // namespace minijax
