// minijax output plan: where each output of a compiled program comes from when the runtime hands
// it back (a fresh buffer, a donated or unchanged input, another output, a literal).
#pragma once
#include <cstdint>

#include "core/array.h"

namespace minijax {

/// What the runtime hands back for one program output (planned by plan_buffers,
/// memory/plan_buffers.h; read by the executors, jit/runtime/execute.cc and execute_spmd.cc).
struct OutputPlan {
  enum Kind : uint8_t {
    fresh,          ///< a new buffer the program writes (allocated before the call)
    donated_param,  ///< the buffer of donated input `index`, which the program overwrites
    param,          ///< input `index`'s buffer unchanged (the output is that input or a view)
    same_as,        ///< the same buffer as output `index`
    literal,        ///< a scalar constant: `value`
  };
  Kind kind = fresh;
  int index = 0;
  Array value;  ///< kind literal: the value (concrete, one element of the output's aval)
};

}  // namespace minijax
