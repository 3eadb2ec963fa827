// minijax host offload in loops: what a scan moves between memory kinds one slice per iteration,
// and the equation builders the loop rewrites of the offload stages share. Compile time; core/ only.
#pragma once
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "core/jaxpr.h"
#include "core/views/memory_ops.h"

namespace minijax::offload {

/// The parts of a scan equation (core/control_flow/scan.cc's layout).
struct ScanParts {
  const Jaxpr* body = nullptr;
  size_t nc = 0, ncar = 0;
  int64_t length = 0;
  bool reverse = false;
  size_t num_xs() const { return body->invars.size() - nc - ncar; }
  size_t num_ys() const { return body->outvars.size() - ncar; }
};
ScanParts scan_parts(const Eqn& scan);

/// The slices a scan body moves between memory kinds, found after split_copies split every
/// device_put into copy_start / copy_done:
/// - a *reload*: an xs of a host kind whose body value is read only by copy_start to `device`
///   (directly or through optimization_barrier), each finished by a copy_done;
/// - an *offload*: a ys whose body value is `copy_done(copy_start[host kind](r), r)` of a device
///   value r, read by nothing else in the body.
struct SliceCopies {
  std::vector<size_t> reload_xs;   ///< xs positions (0-based among the xs)
  std::vector<size_t> offload_ys;  ///< ys positions (0-based among the ys)
  /// Per offload: the device value r the body copies out.
  std::vector<Var> offload_src;
  /// Per reload / offload: the `slices` param of the copy (how many original iterations' slices
  /// one copy moves; 1 unless the scan was coalesced).
  std::vector<int64_t> reload_slices, offload_slices;
  bool empty() const { return reload_xs.empty() && offload_ys.empty(); }
  /// The smallest bytes one of these copies moves per iteration (0 when there are none).
  int64_t min_slice_bytes(const Eqn& scan) const;
};
SliceCopies find_slice_copies(const Eqn& scan);

/// The body of `scan` with the copies of `found` removed: each reloaded xs invar is replaced by a
/// fresh invar of the device kind (its copy_start/copy_done pairs dropped, optimization_barriers
/// on it retyped), and each offloaded ys outvar by its device source. Invars and outvars keep
/// their positions. Values are unchanged.
Jaxpr strip_slice_copies(const Jaxpr& body, const ScanParts& s, const SliceCopies& found);

/// A scan equation like `like` (reverse, unroll, _split_transpose) over `body`, with `linear`
/// all zero.
Eqn make_scan(const Eqn& like, const Jaxpr& body, std::vector<Atom> inputs, std::vector<Var> outputs,
              size_t nc, size_t ncar, int64_t length);

/// `out = in + delta` on an i32 scalar, as a loop fusion (the only form a compiled body runs).
Eqn add_to_index(const Var& in, const Var& out, int64_t delta);
/// An i32 scalar literal.
Literal index_literal(int64_t v);
/// `out = reshape(in)` to out's shape (a view of row-major bytes).
Eqn reshape_to(const Atom& in, const Var& out);
/// `out = allocate_buffer[out's aval]`.
Eqn allocate_buffer(const Var& out);
/// `h = <start>[copy's params](operands)` and `b = copy_done(h, sources...)`.
Eqn copy_eqn(const CopyParams& copy, std::vector<Atom> operands, const Var& out);
Eqn copy_done(const Var& h, const std::vector<Atom>& sources, const Var& out);

/// The equation with f applied to each of its bodies (the offload stages recurse with it, bodies
/// first or last as each needs).
Eqn with_bodies(const Eqn& e, const std::function<Jaxpr(const Jaxpr&)>& f);

/// Whether `e` starts an asynchronous copy (copy_start, copy_slice_start, copy_update_start).
bool is_copy_start(const Eqn& e);
/// The memory kind a started copy writes (for copy_update_start: its buffer's kind).
MemoryKind copy_destination_kind(const Eqn& start);

}  // namespace minijax::offload
