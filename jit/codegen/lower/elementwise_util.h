// minijax elemental lowering helpers shared by the rule files of jit/codegen/lower/ (constants as
// vectors, integer and float predicates). Private to jit/codegen/lower.
#pragma once
#include <cstdint>

#include "jit/codegen/lower/lowering.h"

namespace minijax::lower {

/// An i32 constant splatted to `lanes` lanes.
inline kir::Value splat_i32(FusionEmitter& fe, int32_t v, int lanes) { return fe.b.splat(fe.b.i32(v), lanes); }
/// A constant of v's type (f32/f64: value c; ints: c truncated) splatted to v's lanes.
inline kir::Value like(FusionEmitter& fe, const EVal& v, double c) { return fe.constant(v.dtype, c, v.lanes).v; }

}  // namespace minijax::lower
