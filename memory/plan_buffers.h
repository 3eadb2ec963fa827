// minijax buffer planning: where every value of a fused program lives while it runs: a program
// input or output buffer, an offset in a per-memory-kind temporary arena, or a view of another.
//
// Takes the program after fusion (memory/analyze_liveness.h gives the intervals) and the donated
// inputs. Guarantees: values with overlapping live intervals never share bytes unless one is a
// view of the other or was computed in place of it (memory/buffer_rules.h: a dying operand of the
// same size and kind; never a non-donated input); program outputs are written straight into
// their output buffers, or into a donated input's buffer when one of the same size is dead
// before the output is produced (JAX's donate_argnums, XLA's input/output aliasing); scan
// carries live in the scan's result buffers for the whole loop, xs are read and ys written in
// place one slice per iteration, and a body's result is placed where it must end up whenever
// that is safe (else the executor copies it at the end of the iteration). Temporaries are placed
// by XLA's greedy "decreasing size, best fit" heap simulation (xla/service/heap_simulator.cc),
// each nested body in a region of its enclosing equation's lifetime. Compile time; only core/.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/jaxpr.h"
#include "core/output_plan.h"

namespace minijax {

/// Where one value's bytes are.
enum class Place : uint8_t {
  param,       ///< program input `index`
  output,      ///< program output buffer `index`
  temp,        ///< arena of memory kind `index` (a MemoryKind), at `offset` bytes
  view,        ///< the bytes of variable `base` (of an enclosing scope or this one), + `offset`
  loop_slice,  ///< slice i of the stacked variable `base`: base + i * stride bytes, where i is
               ///< the iteration of scan `loop` (length-1-i when `reversed`)
  literal,     ///< a body input bound to a literal operand of its equation (no buffer)
  undefined,   ///< an allocate_buffer whose only readers are loops taking it as a carry's
               ///< initial value: no bytes of its own, nothing copied from it
};

struct Location {
  Place place = Place::temp;
  int index = 0;
  int64_t offset = 0;
  Var base;
  int64_t stride = 0;
  int64_t length = 0;
  bool reversed = false;
  const Eqn* loop = nullptr;
  Literal literal;
};

/// A copy the executor makes at the end of a body (loop iteration or cond branch): body outvar
/// `outvar` into its destination, through the staging area at `staging_offset` of the body's
/// region when its source is a loop-carried buffer that another copy overwrites.
struct EndCopy {
  size_t outvar = 0;
  bool staged = false;
  int64_t staging_offset = 0;  ///< absolute offset in the arena of the value's memory kind
};

/// An equation's workspace (BufferRule::scratch): `slots` pieces of `slot_bytes` (a multiple of
/// 64) from `offset` in the device arena, reserved while the equation runs.
struct Scratch {
  int64_t offset = 0;
  int64_t slot_bytes = 0;
  int64_t slots = 0;
};

/// The plan of one scope (the program, or one body of a control-flow equation).
struct ScopePlan {
  std::vector<EndCopy> end_copies;  ///< bodies only
};

/// The buffer plan of a program (see the file comment).
struct BufferPlan {
  std::unordered_map<Var, Location, VarHash> where;  ///< every buffer-backed value, bodies too
  std::array<int64_t, 3> arena_bytes{};              ///< per MemoryKind: device, pinned, unpinned
  std::vector<OutputPlan> outputs;                   ///< per program outvar
  std::vector<bool> donated;                         ///< per program input, as given
  std::vector<bool> donation_used;                   ///< per input: its buffer holds an output
  /// Per body jaxpr (keyed by its address): the end-of-body copies.
  std::unordered_map<const Jaxpr*, ScopePlan> scopes;
  /// The workspace of each equation that needs one, keyed by the id of its first output.
  std::unordered_map<uint64_t, Scratch> scratch;
  /// Bytes of all temporaries before placement (sum of sizes), per kind: what no reuse costs.
  std::array<int64_t, 3> unplanned_bytes{};

  /// The location of v. ValueError when v has none (a value inside a fusion body).
  const Location& at(const Var& v) const;
  /// The workspace of equation e, or nullptr when it has none.
  const Scratch* scratch_of(const Eqn& e) const;
  /// One line per buffer class of the top-level program, for Compiled::as_text.
  std::string str(const Jaxpr& program) const;
};

/// Plans the buffers of `program` (after fuse) with inputs `donated` (one flag per invar, or
/// empty for none). Throws ValueError when `donated` has another size.
BufferPlan plan_buffers(const Jaxpr& program, const std::vector<bool>& donated);

/// Bytes a buffer of aval a occupies in an arena (its size rounded up to 64, the alignment).
int64_t arena_size(const ShapedArray& a);

}  // namespace minijax
