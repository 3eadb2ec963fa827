// minijax fusion emitter: operand values of fusion bodies (loads by lane pattern, memoized rule
// evaluation), dtype representations, constants and bf16 rounding. Kernels: jit/codegen/lower/kernels.cc.
#include <cmath>
#include <cstring>
#include <unordered_set>

#include "core/errors.h"
#include "jit/codegen/emit_llvm.h"
#include "jit/codegen/lower/lowering.h"

namespace minijax::lower {

using kir::Op;
using kir::Pred;
using kir::Type;
using kir::Value;

std::map<std::string, ElementalRule>& elemental_rules() {
  static std::map<std::string, ElementalRule> rules;
  return rules;
}

RegisterElemental::RegisterElemental(const std::string& prim, ElementalRule rule) {
  elemental_rules()[prim] = std::move(rule);
}

FusionEmitter::FusionEmitter(kir::Builder& builder, const Jaxpr& j, std::vector<Value> param_ptrs)
    : b(builder), body(j), params_(std::move(param_ptrs)) {
  for (size_t i = 0; i < body.invars.size(); ++i) param_index_[body.invars[i].id()] = i;
  for (auto& e : body.eqns)
    for (auto& o : e.outputs) producer_[o.id()] = &e;
}

Type FusionEmitter::compute_type(DType d, int lanes) {
  switch (d) {
    case DType::bool_: return kir::kI1.with_lanes(lanes);
    case DType::i32: case DType::u32: return kir::kI32.with_lanes(lanes);
    case DType::bf16: case DType::f32: return kir::kF32.with_lanes(lanes);
    case DType::f64: return kir::kF64.with_lanes(lanes);
    default: throw TypeError(std::string("compiled code has no representation for dtype ") + dtype_name(d));
  }
}

Type FusionEmitter::storage_type(DType d, int lanes) {
  switch (d) {
    case DType::bool_: return kir::kI8.with_lanes(lanes);
    case DType::bf16: return kir::kI16.with_lanes(lanes);
    default: return compute_type(d, lanes);
  }
}

int FusionEmitter::native_lanes(DType d) {
  int bytes = int(itemsize(d));
  if (d == DType::bf16 || d == DType::bool_) bytes = 4;  // computed as f32 / compared as i32
  return std::max(1, host_target().vector_bytes / std::max(1, bytes));
}

ElemIndex FusionEmitter::index(std::vector<DimIdx> dims, int lanes) {
  ElemIndex ix;
  ix.dims = std::move(dims);
  ix.lanes = lanes;
  ix.id = next_index_id_++;
  return ix;
}

Value FusionEmitter::dim_vector(const DimIdx& d, int lanes) {
  if (d.vec.valid()) return d.vec;
  if (lanes == 1) return d.base;
  Value base = b.splat(d.base, lanes);
  if (d.coef == 0) return base;
  Value lane = b.lane_iota(lanes);
  if (d.coef != 1) lane = b.mul(lane, b.splat(b.i64(d.coef), lanes));
  return b.add(base, lane);
}

DimIdx FusionEmitter::offset(const DimIdx& d, Value c) {
  if (d.vec.valid()) return DimIdx{{}, 0, b.add(d.vec, b.splat(c, b.type(d.vec).lanes))};
  return DimIdx{b.add(d.base, c), d.coef, {}};
}

DimIdx FusionEmitter::scale(const DimIdx& d, int64_t k) {
  if (d.vec.valid()) return DimIdx{{}, 0, b.mul(d.vec, b.splat(b.i64(k), b.type(d.vec).lanes))};
  return DimIdx{b.mul(d.base, b.i64(k)), d.coef * k, {}};
}

DimIdx FusionEmitter::linear_offset(const ElemIndex& at, const Shape& shape) {
  if (at.dims.size() != shape.size())
    throw ValueError("fusion emitter: an index of rank " + std::to_string(at.dims.size()) +
                     " used for an array of shape " + shape_str(shape));
  auto st = strides_of(shape);
  bool affine = true;
  for (auto& d : at.dims) affine &= d.is_affine();
  if (affine) {
    Value base = b.i64(0);
    int64_t coef = 0;
    bool first = true;
    for (size_t k = 0; k < shape.size(); ++k) {
      if (shape[k] == 1) continue;  // index 0 whatever the pattern says
      Value term = st[k] == 1 ? at.dims[k].base : b.mul(at.dims[k].base, b.i64(st[k]));
      base = first ? term : b.add(base, term);
      first = false;
      coef += at.dims[k].coef * st[k];
    }
    return DimIdx{base, coef, {}};
  }
  Value v = b.splat(b.i64(0), at.lanes);
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 1) continue;
    Value dv = dim_vector(at.dims[k], at.lanes);
    v = b.add(v, st[k] == 1 ? dv : b.mul(dv, b.splat(b.i64(st[k]), at.lanes)));
  }
  return DimIdx{{}, 0, v};
}

EVal FusionEmitter::widen(EVal v, int lanes) {
  if (v.lanes == lanes) return v;
  if (v.lanes != 1)
    throw ValueError("fusion emitter: cannot widen a " + std::to_string(v.lanes) + "-lane value to " +
                     std::to_string(lanes) + " lanes");
  return EVal{b.splat(v.v, lanes), v.dtype, lanes};
}

void FusionEmitter::match_lanes(EVal& a, EVal& c) {
  int n = std::max(a.lanes, c.lanes);
  a = widen(a, n);
  c = widen(c, n);
}

EVal FusionEmitter::constant(DType d, double v, int lanes) {
  Value s;
  switch (d) {
    case DType::bool_: s = b.i1(v != 0); break;
    case DType::i32: s = b.i32(int32_t(int64_t(v))); break;
    case DType::u32: s = b.i32(int32_t(uint32_t(int64_t(v)))); break;
    case DType::bf16: s = b.f32(float(bfloat16(float(v)))); break;
    case DType::f32: s = b.f32(float(v)); break;
    case DType::f64: s = b.f64(v); break;
    default: throw TypeError(std::string("no constant of dtype ") + dtype_name(d));
  }
  return widen(EVal{s, d, 1}, lanes);
}

EVal FusionEmitter::constant_int(DType d, int64_t v, int lanes) {
  if (is_floating(d)) return constant(d, double(v), lanes);
  Value s = d == DType::bool_ ? b.i1(v != 0) : b.i32(int32_t(uint32_t(uint64_t(v))));
  return widen(EVal{s, d, 1}, lanes);
}

EVal FusionEmitter::literal(const Literal& l, int lanes) {
  const Array& a = l.value;
  DType d = a.dtype();
  EVal r;
  dispatch_dtype(d, [&]<class T>() {
    T x = *a.data<T>();
    if constexpr (std::is_same_v<T, float>) r = EVal{b.f32(x), d, 1};
    else if constexpr (std::is_same_v<T, double>) r = EVal{b.f64(x), d, 1};
    else if constexpr (std::is_same_v<T, bfloat16>) r = EVal{b.f32(float(x)), d, 1};
    else if constexpr (std::is_same_v<T, bool>) r = EVal{b.i1(x), d, 1};
    else r = EVal{b.i32(int32_t(x)), d, 1};
  });
  return widen(r, lanes);
}

EVal FusionEmitter::round_storage(EVal v) {
  if (v.dtype != DType::bf16) return v;
  // Eager's bfloat16(float): NaN -> (bits >> 16) | 0x40; else round to nearest even on bit 16.
  Type it = kir::kI32.with_lanes(v.lanes);
  auto c = [&](int64_t k) { return b.splat(b.i32(int32_t(k)), v.lanes); };
  Value u = b.cast(Op::Bitcast, it, v.v);
  Value mag = b.binop(Op::And, u, c(0x7fffffff));
  Value is_nan = b.icmp(Pred::ugt, mag, c(0x7f800000));
  Value lsb = b.binop(Op::And, b.binop(Op::LShr, u, c(16)), c(1));
  Value rounded = b.add(u, b.add(c(0x7fff), lsb));
  Value nan_bits = b.binop(Op::Or, u, c(0x400000));
  Value bits = b.select(is_nan, nan_bits, rounded);
  bits = b.binop(Op::And, bits, c(int32_t(0xffff0000u)));
  return EVal{b.cast(Op::Bitcast, compute_type(DType::f32, v.lanes), bits), v.dtype, v.lanes};
}

EVal FusionEmitter::load(DType d, Value ptr, const DimIdx& off, int lanes) {
  Type st = storage_type(d);
  Value raw;
  int out_lanes = lanes;
  if (off.is_affine() && (off.coef == 0 || lanes == 1)) {
    raw = b.load(st, ptr, off.base);
    out_lanes = 1;
  } else if (off.is_affine() && off.coef == 1) {
    raw = b.load(st.with_lanes(lanes), ptr, off.base);
  } else {
    raw = b.gather(st.with_lanes(lanes), ptr, dim_vector(off, lanes));
  }
  Type ct = compute_type(d, out_lanes);
  Value v = raw;
  if (d == DType::bool_) {
    v = b.icmp(Pred::ne, raw, b.splat(b.const_int(kir::kI8, 0), out_lanes));
  } else if (d == DType::bf16) {
    Value w = b.cast(Op::ZExt, kir::kI32.with_lanes(out_lanes), raw);
    w = b.binop(Op::Shl, w, b.splat(b.i32(16), out_lanes));
    v = b.cast(Op::Bitcast, ct, w);
  }
  return EVal{v, d, out_lanes};
}

void FusionEmitter::store(Value ptr, const DimIdx& off, EVal v) {
  DType d = v.dtype;
  Value raw = v.v;
  if (d == DType::bool_) {
    raw = b.cast(Op::ZExt, kir::kI8.with_lanes(v.lanes), raw);
  } else if (d == DType::bf16) {
    Value bits = b.cast(Op::Bitcast, kir::kI32.with_lanes(v.lanes), round_storage(v).v);
    bits = b.binop(Op::LShr, bits, b.splat(b.i32(16), v.lanes));
    raw = b.cast(Op::Trunc, kir::kI16.with_lanes(v.lanes), bits);
  }
  if (v.lanes == 1) {
    if (!off.is_affine()) throw ValueError("fusion emitter: scalar store at a vector offset");
    b.store(ptr, off.base, raw);
  } else if (off.is_affine() && off.coef == 1) {
    b.store(ptr, off.base, raw);
  } else {
    b.scatter(ptr, dim_vector(off, v.lanes), raw);
  }
}

void FusionEmitter::bind(const Var& v, const ElemIndex& at, std::vector<EVal> vals) {
  memo_[{v.id(), at.id}] = std::move(vals);
}

void FusionEmitter::clear_memo() {
  memo_.clear();
  scalar_for_.clear();
}

const ElemIndex& FusionEmitter::scalar_for(const ElemIndex& at) {
  if (at.dims.empty()) return at;
  auto it = scalar_for_.find(at.id);
  if (it == scalar_for_.end()) it = scalar_for_.emplace(at.id, scalar_index(at.lanes)).first;
  return it->second;
}

void FusionEmitter::evaluate_elementwise_operands(const Var& root, const ElemIndex& root_at) {
  // The equation (elementwise) whose value at `at` is still to compute, if `a` at `at` is one.
  auto pending = [&](const Atom& a, const ElemIndex& at) -> const Eqn* {
    auto* v = std::get_if<Var>(&a);
    if (!v || hoisted_.count(v->id()) || param_index_.count(v->id()) || memo_.count({v->id(), at.id}))
      return nullptr;
    auto p = producer_.find(v->id());
    if (p == producer_.end() || p->second->primitive->op_class != OpClass::elementwise) return nullptr;
    return p->second;
  };
  struct Item {
    Var var;        // the value to compute
    const Eqn* eqn;  // its equation
    ElemIndex at;
    size_t next;     // the next operand to look at
  };
  const Eqn* root_eqn = pending(root, root_at);
  if (!root_eqn) return;
  std::vector<Item> stack{{root, root_eqn, root_at, 0}};
  while (!stack.empty()) {
    Item& it = stack.back();
    if (it.next < it.eqn->inputs.size()) {
      const Atom& in = it.eqn->inputs[it.next++];
      // The index the elementwise rule reads this operand at (operands_at).
      ElemIndex at = atom_aval(in).ndim() == 0 ? scalar_for(it.at) : it.at;
      if (const Eqn* e = pending(in, at)) stack.push_back({std::get<Var>(in), e, std::move(at), 0});
      continue;
    }
    Item done = std::move(stack.back());
    stack.pop_back();
    // Its operands are memoized now: this evaluates its rule without recursing into them.
    if (!stack.empty()) value(done.var, done.at);
  }
}

void FusionEmitter::hoist_scalars() {
  std::unordered_set<uint64_t> after_reduction;  // values computed from a reduction result
  for (auto& e : body.eqns) {
    bool dep = e.primitive->op_class == OpClass::reduction;
    for (auto& in : e.inputs)
      if (auto* v = std::get_if<Var>(&in); v && after_reduction.count(v->id())) dep = true;
    if (dep) {
      for (auto& o : e.outputs) after_reduction.insert(o.id());
      continue;
    }
    bool scalar = !e.outputs.empty();
    for (auto& o : e.outputs) scalar &= o.aval().ndim() == 0;
    if (!scalar) continue;
    ElemIndex at = scalar_index(1);
    for (auto& o : e.outputs) {
      std::vector<EVal> v = value(o, at);
      hoisted_[o.id()] = v;
    }
  }
  for (size_t i = 0; i < body.invars.size(); ++i)
    if (body.invars[i].aval().ndim() == 0 && !hoisted_.count(body.invars[i].id()))
      hoisted_[body.invars[i].id()] = value(body.invars[i], scalar_index(1));
  clear_memo();
}

std::vector<EVal> FusionEmitter::value(const Atom& a, const ElemIndex& at) {
  if (auto* l = std::get_if<Literal>(&a)) return {literal(*l, 1)};
  const Var& v = std::get<Var>(a);
  if (auto h = hoisted_.find(v.id()); h != hoisted_.end()) return h->second;
  auto key = std::make_pair(v.id(), at.id);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  std::vector<EVal> vals;
  if (auto p = param_index_.find(v.id()); p != param_index_.end()) {
    const ShapedArray& av = v.aval();
    DimIdx off = av.ndim() == 0 ? affine(b.i64(0)) : flat_ ? at.dims.at(0) : linear_offset(at, av.shape);
    vals = {load(av.dtype, params_.at(p->second), off, at.lanes)};
    if (av.ndim() == 0) vals[0].lanes = 1;
  } else {
    auto e = producer_.find(v.id());
    if (e == producer_.end()) throw ValueError("fusion emitter: variable without a producer");
    const Eqn& eqn = *e->second;
    if (eqn.primitive->op_class == OpClass::elementwise) evaluate_elementwise_operands(v, at);
    auto rule = elemental_rules().find(eqn.primitive->name);
    if (rule == elemental_rules().end())
      throw ValueError("no elemental lowering for primitive " + eqn.primitive->name);
    std::vector<EVal> outs = rule->second(*this, eqn, at);
    if (outs.size() != eqn.outputs.size())
      throw ValueError("elemental lowering of " + eqn.primitive->name + " gave " + std::to_string(outs.size()) +
                       " values for " + std::to_string(eqn.outputs.size()) + " outputs");
    for (size_t k = 0; k < outs.size(); ++k) {
      outs[k] = round_storage(outs[k]);
      memo_[{eqn.outputs[k].id(), at.id}] = {outs[k]};
    }
    vals = memo_[key];
  }
  memo_[key] = vals;
  return vals;
}

std::vector<EVal> operands_at(FusionEmitter& fe, const Eqn& eqn, const ElemIndex& at) {
  std::vector<EVal> out;
  out.reserve(eqn.inputs.size());
  for (auto& in : eqn.inputs) {
    if (atom_aval(in).ndim() == 0 && !at.dims.empty()) out.push_back(fe.value1(in, fe.scalar_for(at)));
    else out.push_back(fe.value1(in, at));
  }
  return out;
}

}  // namespace minijax::lower
