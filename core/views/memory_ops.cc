// minijax typed views of the memory, copy and host-side primitives' params: reading, writing and
// the registry's params check. The primitives' names appear here and at their registrations only.
#include "core/views/memory_ops.h"
#include "core/param_reads.h"

#include "core/primitive.h"
#include "core/views/param_keys.h"
#include "core/views/view.h"

namespace minijax {

namespace {

using CopyKind = CopyParams::Kind;

const Primitive* copy_primitive(CopyKind k) {
  static const Primitive* ps[3] = {&get_or_create_primitive(CopyParams::name(CopyKind::start)),
                                   &get_or_create_primitive(CopyParams::name(CopyKind::slice_start)),
                                   &get_or_create_primitive(CopyParams::name(CopyKind::update_start))};
  return ps[size_t(k)];
}

template <class T>
std::optional<T> optional_param(const Params& p, const char* key, T (*get)(const Params&, const std::string&)) {
  if (!p.has(key)) return std::nullopt;
  return get(p, key);
}

CopyParams read_copy(CopyKind k, const Params& p) {
  CopyParams c;
  c.kind = k;
  if (k == CopyKind::start) views::check_known_keys(p, {"memory_kind", "slices"});
  else if (k == CopyKind::slice_start) views::check_known_keys(p, {"memory_kind", "axis", "slices", "pipelined"});
  else views::check_known_keys(p, {"axis", "slices", "pipelined"});
  if (k != CopyKind::update_start) c.memory_kind = param_memory_kind(p, "memory_kind");
  if (k != CopyKind::start) c.axis = param_int(p, "axis");
  c.slices = optional_param<int64_t>(p, "slices", &param_int);
  if (k != CopyKind::start) c.pipelined = optional_param<bool>(p, "pipelined", &param_bool);
  return c;
}

// An object param that a parsed jaxpr holds as text: (object, text).
std::pair<ParamObjectPtr, std::optional<std::string>> object_or_text(const Params& p, const char* key) {
  const Param& v = param_at(p, key);
  if (auto* o = std::get_if<ParamObjectPtr>(&v)) return {*o, std::nullopt};
  if (auto* s = std::get_if<std::string>(&v)) return {nullptr, *s};
  throw ValueError(std::string("parameter '") + key + "' is not of type object");
}

Param object_or_text_param(const ParamObjectPtr& o, const std::optional<std::string>& text) {
  if (text) return *text;
  return o;
}

void no_params(const Params& p) { views::check_known_keys(p, {}); }

const Registrar reg([] {
  get_or_create_primitive("device_put").check_params = [](const Params& p) { return DevicePutParams::from(p).to_params(); };
  for (CopyKind k : {CopyKind::start, CopyKind::slice_start, CopyKind::update_start})
    get_or_create_primitive(CopyParams::name(k)).check_params = [k](const Params& p) {
      return CopyParams::from(k, p).to_params();
    };
  get_or_create_primitive("copy_done").check_params = [](const Params& p) { return CopyDoneParams::from(p).to_params(); };
  get_or_create_primitive("allocate_buffer").check_params = [](const Params& p) {
    return AllocateBufferParams::from(p).to_params();
  };
  get_or_create_primitive("optimization_barrier").check_params = [](const Params& p) {
    return OptimizationBarrierParams::from(p).to_params();
  };
  get_or_create_primitive("sharding_constraint").check_params = [](const Params& p) {
    return ShardingConstraintParams::from(p).to_params();
  };
  get_or_create_primitive("debug_callback").check_params = [](const Params& p) {
    return DebugCallbackParams::from(p).to_params();
  };
});

}  // namespace

// ---- device_put ---------------------------------------------------------------------------------

const Primitive& DevicePutParams::primitive() {
  static const Primitive* p = &get_or_create_primitive("device_put");
  return *p;
}
bool DevicePutParams::is(const Primitive& p) { return &p == &primitive(); }
bool DevicePutParams::is(const Eqn& e) { return e.primitive && is(*e.primitive); }
DevicePutParams DevicePutParams::from(const Params& p) {
  return views::read_view("device_put", [&] {
    views::check_known_keys(p, {"memory_kind"});
    return DevicePutParams{param_memory_kind(p, "memory_kind")};
  });
}
Params DevicePutParams::to_params() const { return Params{{"memory_kind", memory_kind}}; }
DevicePutParams device_put_params(const Eqn& e) {
  if (!DevicePutParams::is(e)) views::wrong_primitive("device_put", e);
  return DevicePutParams::from(e.params);
}

// ---- the copies ---------------------------------------------------------------------------------

const char* CopyParams::name(Kind k) {
  switch (k) {
    case Kind::start: return "copy_start";
    case Kind::slice_start: return "copy_slice_start";
    case Kind::update_start: return "copy_update_start";
  }
  return "?";
}
CopyParams CopyParams::start(MemoryKind to, std::optional<int64_t> slices) {
  CopyParams c;
  c.kind = Kind::start;
  c.memory_kind = to;
  c.slices = slices;
  return c;
}
CopyParams CopyParams::slice_start(MemoryKind to, int64_t axis, std::optional<int64_t> slices) {
  CopyParams c = start(to, slices);
  c.kind = Kind::slice_start;
  c.axis = axis;
  return c;
}
CopyParams CopyParams::update_start(int64_t axis, std::optional<int64_t> slices) {
  CopyParams c;
  c.kind = Kind::update_start;
  c.axis = axis;
  c.slices = slices;
  return c;
}
std::optional<CopyParams::Kind> CopyParams::kind_of(const Primitive& p) {
  for (Kind k : {Kind::start, Kind::slice_start, Kind::update_start})
    if (&p == copy_primitive(k)) return k;
  return std::nullopt;
}
std::optional<CopyParams::Kind> CopyParams::kind_of(const Eqn& e) {
  return e.primitive ? kind_of(*e.primitive) : std::nullopt;
}
bool CopyParams::is(const Primitive& p) { return kind_of(p).has_value(); }
bool CopyParams::is(const Eqn& e) { return kind_of(e).has_value(); }
bool CopyParams::is(const Eqn& e, Kind k) { return views::is_primitive(e, copy_primitive(k)); }
CopyParams CopyParams::from(Kind k, const Params& p) {
  return views::read_view(name(k), [&] { return read_copy(k, p); });
}
Params CopyParams::to_params() const {
  Params p;
  if (kind != Kind::update_start) p.set("memory_kind", memory_kind);
  if (kind != Kind::start) p.set("axis", axis);
  if (slices) p.set("slices", *slices);
  if (pipelined && kind != Kind::start) p.set("pipelined", *pipelined);
  return p;
}
const Primitive& CopyParams::primitive() const { return *copy_primitive(kind); }
CopyParams copy_params(const Eqn& e) {
  auto k = CopyParams::kind_of(e);
  if (!k) views::wrong_primitive("copy start", e);
  return CopyParams::from(*k, e.params);
}

const Primitive& CopyDoneParams::primitive() {
  static const Primitive* p = &get_or_create_primitive("copy_done");
  return *p;
}
bool CopyDoneParams::is(const Primitive& p) { return &p == &primitive(); }
bool CopyDoneParams::is(const Eqn& e) { return e.primitive && is(*e.primitive); }
CopyDoneParams CopyDoneParams::from(const Params& p) {
  return views::read_view("copy_done", [&] {
    no_params(p);
    return CopyDoneParams{};
  });
}

// ---- allocate_buffer, optimization_barrier ------------------------------------------------------

const Primitive& AllocateBufferParams::primitive() {
  static const Primitive* p = &get_or_create_primitive("allocate_buffer");
  return *p;
}
bool AllocateBufferParams::is(const Primitive& p) { return &p == &primitive(); }
bool AllocateBufferParams::is(const Eqn& e) { return e.primitive && is(*e.primitive); }
AllocateBufferParams AllocateBufferParams::from(const Params& p) {
  return views::read_view("allocate_buffer", [&] {
    views::check_known_keys(p, {"shape", "dtype", "memory_kind"});
    return AllocateBufferParams{param_ints(p, "shape"), param_dtype(p, "dtype"), param_memory_kind(p, "memory_kind")};
  });
}
Params AllocateBufferParams::to_params() const {
  return Params{{"shape", shape}, {"dtype", dtype}, {"memory_kind", memory_kind}};
}
AllocateBufferParams allocate_buffer_params(const Eqn& e) {
  if (!AllocateBufferParams::is(e)) views::wrong_primitive("allocate_buffer", e);
  return AllocateBufferParams::from(e.params);
}

const Primitive& OptimizationBarrierParams::primitive() {
  static const Primitive* p = &get_or_create_primitive("optimization_barrier");
  return *p;
}
bool OptimizationBarrierParams::is(const Primitive& p) { return &p == &primitive(); }
bool OptimizationBarrierParams::is(const Eqn& e) { return e.primitive && is(*e.primitive); }
OptimizationBarrierParams OptimizationBarrierParams::from(const Params& p) {
  return views::read_view("optimization_barrier", [&] {
    no_params(p);
    return OptimizationBarrierParams{};
  });
}

// ---- sharding_constraint, debug_callback --------------------------------------------------------

const Primitive& ShardingConstraintParams::primitive() {
  static const Primitive* p = &get_or_create_primitive("sharding_constraint");
  return *p;
}
bool ShardingConstraintParams::is(const Primitive& p) { return &p == &primitive(); }
bool ShardingConstraintParams::is(const Eqn& e) { return e.primitive && is(*e.primitive); }
ShardingConstraintParams ShardingConstraintParams::from(const Params& p) {
  return views::read_view("sharding_constraint", [&] {
    views::check_known_keys(p, {"sharding"});
    auto [o, t] = object_or_text(p, "sharding");
    return ShardingConstraintParams{o, t};
  });
}
Params ShardingConstraintParams::to_params() const {
  return Params{{"sharding", object_or_text_param(sharding, text)}};
}
ShardingConstraintParams sharding_constraint_params(const Eqn& e) {
  if (!ShardingConstraintParams::is(e)) views::wrong_primitive("sharding_constraint", e);
  return ShardingConstraintParams::from(e.params);
}

const Primitive& DebugCallbackParams::primitive() {
  static const Primitive* p = &get_or_create_primitive("debug_callback");
  return *p;
}
bool DebugCallbackParams::is(const Primitive& p) { return &p == &primitive(); }
bool DebugCallbackParams::is(const Eqn& e) { return e.primitive && is(*e.primitive); }
DebugCallbackParams DebugCallbackParams::from(const Params& p) {
  return views::read_view("debug_callback", [&] {
    views::check_known_keys(p, {"callback", "ordered"});
    auto [o, t] = object_or_text(p, "callback");
    return DebugCallbackParams{o, t, param_bool(p, "ordered")};
  });
}
Params DebugCallbackParams::to_params() const {
  return Params{{"callback", object_or_text_param(callback, callback_text)}, {"ordered", ordered}};
}
const DebugCallbackObject* DebugCallbackParams::host_function() const {
  return dynamic_cast<const DebugCallbackObject*>(callback.get());
}
DebugCallbackParams debug_callback_params(const Eqn& e) {
  if (!DebugCallbackParams::is(e)) views::wrong_primitive("debug_callback", e);
  return DebugCallbackParams::from(e.params);
}

}  // namespace minijax
