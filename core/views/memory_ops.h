// minijax typed views of the memory, copy and host-side primitives' params: device_put, the
// asynchronous copies, allocate_buffer, optimization_barrier, sharding_constraint, debug_callback.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/aval.h"
#include "core/debug_callback.h"
#include "core/jaxpr.h"
#include "core/params.h"
#include "sharding/sharding_param.h"

namespace minijax {

/// device_put[memory_kind=K](x): a copy of x in memory kind K.
struct DevicePutParams {
  MemoryKind memory_kind = MemoryKind::device;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  /// ValueError "device_put: missing parameter 'memory_kind'" (or of a wrong type, unexpected).
  static DevicePutParams from(const Params& p);
  Params to_params() const;
  static const Primitive& primitive();
};
DevicePutParams device_put_params(const Eqn& e);

/// The starts of an asynchronous copy (made by the offload stages, memory/), each finished by copy_done:
/// copy_start[memory_kind, slices?](x), copy_slice_start[memory_kind, axis, slices?,
/// pipelined?](x, i), copy_update_start[axis, slices?, pipelined?](r, u, i).
struct CopyParams {
  enum class Kind { start, slice_start, update_start };
  Kind kind = Kind::start;
  /// The destination's kind (copy_start, copy_slice_start). copy_update_start has no such param:
  /// its destination is its operand r.
  MemoryKind memory_kind = MemoryKind::device;
  int64_t axis = 0;                ///< the sliced axis (copy_slice_start, copy_update_start)
  std::optional<int64_t> slices;   ///< loop iterations' slices one copy moves (absent: 1)
  std::optional<bool> pipelined;   ///< a prefetch/writeback pipelined across iterations
  /// The params of a copy_start to `to`, of a copy_slice_start to `to` along `axis`, of a
  /// copy_update_start along `axis`.
  static CopyParams start(MemoryKind to, std::optional<int64_t> slices = std::nullopt);
  static CopyParams slice_start(MemoryKind to, int64_t axis, std::optional<int64_t> slices = std::nullopt);
  static CopyParams update_start(int64_t axis, std::optional<int64_t> slices = std::nullopt);
  int64_t slice_count() const { return slices.value_or(1); }
  bool is_pipelined() const { return pipelined.value_or(false); }
  /// Whether `e` is one of the three starts; or the start of kind `k`.
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static bool is(const Eqn& e, Kind k);
  static std::optional<Kind> kind_of(const Eqn& e);
  static std::optional<Kind> kind_of(const Primitive& p);
  /// ValueError "copy_slice_start: missing parameter 'axis'" (or of a wrong type, unexpected).
  static CopyParams from(Kind k, const Params& p);
  Params to_params() const;
  const Primitive& primitive() const;
  static const char* name(Kind k);
};
CopyParams copy_params(const Eqn& e);

/// copy_done(h, *sources): no params.
struct CopyDoneParams {
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static CopyDoneParams from(const Params& p);
  Params to_params() const { return {}; }
  static const Primitive& primitive();
};

/// allocate_buffer[shape, dtype, memory_kind](): an uninitialized buffer.
struct AllocateBufferParams {
  Shape shape;
  DType dtype = DType::f32;
  MemoryKind memory_kind = MemoryKind::device;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static AllocateBufferParams from(const Params& p);
  Params to_params() const;
  static const Primitive& primitive();
};
AllocateBufferParams allocate_buffer_params(const Eqn& e);

/// optimization_barrier(*xs): no params.
struct OptimizationBarrierParams {
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static OptimizationBarrierParams from(const Params& p);
  Params to_params() const { return {}; }
  static const Primitive& primitive();
};

/// sharding_constraint[sharding=S](x). S is the sharding object (sharding/sharding.h reads it
/// with sharding_of_param); a jaxpr parsed from text holds its printed form instead (`text`).
struct ShardingConstraintParams {
  ParamObjectPtr sharding;          ///< null when the param is text
  std::optional<std::string> text;  ///< the param as text (a parsed jaxpr)
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static ShardingConstraintParams from(const Params& p);
  Params to_params() const;
  static const Primitive& primitive();
};
ShardingConstraintParams sharding_constraint_params(const Eqn& e);

/// debug_callback[callback, ordered](*xs). `callback` is the host function; a jaxpr parsed from
/// text holds only its name (`callback_text`).
struct DebugCallbackParams {
  ParamObjectPtr callback;                   ///< the host function's object, or null (None, text)
  std::optional<std::string> callback_text;  ///< the param as text (a parsed jaxpr)
  bool ordered = false;
  /// The host function, or null when the params hold none (a parsed jaxpr).
  const DebugCallbackObject* host_function() const;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static DebugCallbackParams from(const Params& p);
  Params to_params() const;
  static const Primitive& primitive();
};
DebugCallbackParams debug_callback_params(const Eqn& e);

}  // namespace minijax
