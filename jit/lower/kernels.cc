// minijax fusion kernels: the loop nests of "loop" and "reduction" fusions (vector innermost loop
// with a scalar tail; reductions with fixed-order partial results), built from the rule tables.
#include <algorithm>
#include <set>

#include "core/errors.h"
#include "jit/lower/lowering.h"

namespace minijax::lower {

using kir::Type;
using kir::Value;

std::map<std::string, ReductionRule>& reduction_rules() {
  static std::map<std::string, ReductionRule> rules;
  return rules;
}

RegisterReduction::RegisterReduction(const std::string& prim, ReductionRule rule) {
  reduction_rules()[prim] = std::move(rule);
}

std::string KernelInfo::describe() const {
  return kind + " " + shape_str(space) + " x" + std::to_string(lanes) + " lanes";
}

namespace {

// Elements of a partial sum before it is merged into the running total (error ~ (block/lanes +
// n/block) * eps instead of n * eps for a sequential sum).
constexpr int64_t kBlock = 2048;

struct KernelCtx {
  kir::Builder& b;
  FusionEmitter& fe;
  const Jaxpr& body;
  std::vector<Value> out_ptrs;
  int lanes;
};

int kernel_lanes(const Jaxpr& body) {
  int lanes = 64;
  auto see = [&](const ShapedArray& a) { lanes = std::min(lanes, FusionEmitter::native_lanes(a.dtype)); };
  for (auto& v : body.invars) see(v.aval());
  for (auto& e : body.eqns)
    for (auto& o : e.outputs) see(o.aval());
  return lanes;
}

// for j in [lo, hi): point(j, lanes) -- vector steps while a whole vector fits, then scalars.
void vector_loop(kir::Builder& b, Value lo, Value hi, int64_t static_extent, int lanes,
                 const std::function<void(Value, int)>& point) {
  if (lanes > 1 && (static_extent < 0 || static_extent >= lanes)) {
    Value n = b.sub(hi, lo);
    Value vend = b.add(lo, b.mul(b.binop(kir::Op::SDiv, n, b.i64(lanes)), b.i64(lanes)));
    b.for_(lo, vend, b.i64(lanes), [&](Value j) { point(j, lanes); });
    b.for_(vend, hi, b.i64(1), [&](Value j) { point(j, 1); });
  } else {
    b.for_(lo, hi, b.i64(1), [&](Value j) { point(j, 1); });
  }
}

// Nested scalar loops over dims [first, last) of `shape` (dim `first` over [lo, hi) when given).
void nest(kir::Builder& b, const Shape& shape, size_t first, size_t last, std::vector<Value>& ivs,
          const std::function<void()>& inner, Value lo = {}, Value hi = {}) {
  if (first == last) return inner();
  Value l = lo.valid() ? lo : b.i64(0), h = hi.valid() ? hi : b.i64(shape[first]);
  b.for_(l, h, b.i64(1), [&](Value i) {
    ivs.push_back(i);
    nest(b, shape, first + 1, last, ivs, inner);
    ivs.pop_back();
  });
}

// Every result at the point is computed before any is stored: a result may be written in place
// of an operand that another result still reads at this point (memory/buffer_rules.cc).
void store_outputs(KernelCtx& k, const ElemIndex& at, const Shape& space, bool flat) {
  std::vector<EVal> vals;
  for (auto& out : k.body.outvars) vals.push_back(k.fe.widen(k.fe.value1(out, at), at.lanes));
  for (size_t o = 0; o < k.body.outvars.size(); ++o) {
    const ShapedArray& av = atom_aval(k.body.outvars[o]);
    const EVal& v = vals[o];
    DimIdx off = av.ndim() == 0 ? FusionEmitter::affine(k.b.i64(0))
                 : flat        ? at.dims.at(0)
                               : k.fe.linear_offset(at, space);
    k.fe.store(k.out_ptrs[o], off, v);
  }
}

// ---- loop fusions -------------------------------------------------------------------------------

bool elementwise_only(const Jaxpr& body, const Shape& space) {
  for (auto& e : body.eqns)
    if (e.primitive->op_class != OpClass::elementwise) return false;
  auto fits = [&](const ShapedArray& a) { return a.ndim() == 0 || a.shape == space; };
  for (auto& v : body.invars)
    if (!fits(v.aval())) return false;
  for (auto& e : body.eqns)
    for (auto& o : e.outputs)
      if (!fits(o.aval())) return false;
  return true;
}

void emit_loop(KernelCtx& k, KernelInfo& info, Value begin, Value end) {
  kir::Builder& b = k.b;
  Shape space = atom_aval(k.body.outvars.at(0)).shape;
  for (auto& o : k.body.outvars)
    if (atom_aval(o).shape != space)
      throw ValueError("loop fusion with outputs of different shapes " + shape_str(space) + " and " +
                       shape_str(atom_aval(o).shape));
  const bool flat = space.size() > 1 && elementwise_only(k.body, space);
  if (flat) space = Shape{shape_size(space)};
  k.fe.set_flat(flat);
  info.space = space;
  info.lanes = k.lanes;
  const size_t r = space.size();
  if (r == 0) {
    info.outer_extent = 1;
    store_outputs(k, k.fe.scalar_index(1), space, false);
    return;
  }
  info.outer_extent = space[0];
  info.work_per_outer = shape_size(space) / std::max<int64_t>(1, space[0]);
  auto point = [&](std::vector<Value>& ivs, Value j, int lanes) {
    k.fe.clear_memo();
    std::vector<DimIdx> dims;
    for (Value iv : ivs) dims.push_back(FusionEmitter::affine(iv));
    dims.push_back(DimIdx{j, 1, {}});
    store_outputs(k, k.fe.index(std::move(dims), lanes), space, flat);
  };
  std::vector<Value> ivs;
  if (r == 1) {
    vector_loop(b, begin, end, -1, k.lanes, [&](Value j, int lanes) { point(ivs, j, lanes); });
    return;
  }
  nest(b, space, 0, r - 1, ivs, [&] {
    vector_loop(b, b.i64(0), b.i64(space[r - 1]), space[r - 1], k.lanes,
                [&](Value j, int lanes) { point(ivs, j, lanes); });
  }, begin, end);
}

// ---- reduction fusions --------------------------------------------------------------------------

struct RedLayout {
  Shape in_shape, out_shape;
  std::vector<int64_t> axes;   // sorted reduced axes of the input
  std::vector<int64_t> kept;   // kept axes of the input, in order
};

struct Red {
  const Eqn* eqn;
  const ReductionRule* rule;
  int arg_pos = 0;  // position of the rule's position axis among L.axes (arg-reductions)
};

using Acc = std::vector<EVal>;

struct Slots {
  std::vector<Value> ptr;
  std::vector<DType> dtype;
  int lanes = 1;
};

Slots alloc_slots(kir::Builder& b, const Acc& init) {
  Slots s;
  for (auto& v : init) {
    Value p = b.stack_slot(b.type(v.v));
    b.store(p, b.i64(0), v.v);
    s.ptr.push_back(p);
    s.dtype.push_back(v.dtype);
    s.lanes = v.lanes;
  }
  return s;
}

Acc load_slots(kir::Builder& b, const Slots& s) {
  Acc r;
  for (size_t i = 0; i < s.ptr.size(); ++i) {
    Type t = b.function().insts[size_t(s.ptr[i].id)].elem;
    r.push_back(EVal{b.load(t, s.ptr[i], b.i64(0)), s.dtype[i], t.lanes});
  }
  return r;
}

void store_slots(kir::Builder& b, const Slots& s, const Acc& v) {
  for (size_t i = 0; i < s.ptr.size(); ++i) b.store(s.ptr[i], b.i64(0), v[i].v);
}

ElemIndex input_index(FusionEmitter& fe, const RedLayout& L, const std::vector<DimIdx>& out,
                      const std::vector<DimIdx>& red, int lanes) {
  std::vector<DimIdx> dims(L.in_shape.size());
  for (size_t i = 0; i < L.kept.size(); ++i) dims[size_t(L.kept[i])] = out[i];
  for (size_t i = 0; i < L.axes.size(); ++i) dims[size_t(L.axes[i])] = red[i];
  return fe.index(std::move(dims), lanes);
}

// Lanes of a vector accumulator merged pairwise in a fixed tree (lane 2i before lane 2i+1).
Acc merge_lanes(KernelCtx& k, const Red& rd, const Acc& v) {
  int lanes = v.at(0).lanes;
  std::vector<Acc> parts(static_cast<size_t>(lanes));
  for (int l = 0; l < lanes; ++l)
    for (auto& c : v) parts[size_t(l)].push_back(EVal{k.b.extract(c.v, l), c.dtype, 1});
  while (parts.size() > 1) {
    std::vector<Acc> next;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) next.push_back(rd.rule->merge(k.fe, *rd.eqn, parts[i], parts[i + 1]));
    if (parts.size() % 2) next.push_back(parts.back());
    parts.swap(next);
  }
  return parts[0];
}

// Combines, for every reduction, the input element(s) at (out, red) into its slots.
void combine_at(KernelCtx& k, const RedLayout& L, std::vector<Red>& reds, std::vector<Slots>& slots,
                const std::vector<DimIdx>& out, const std::vector<DimIdx>& red, int lanes) {
  k.fe.clear_memo();
  ElemIndex at = input_index(k.fe, L, out, red, lanes);
  for (size_t r = 0; r < reds.size(); ++r) {
    EVal x = k.fe.widen(k.fe.value1(reds[r].eqn->inputs[0], at), lanes);
    Acc acc = load_slots(k.b, slots[r]);
    for (auto& a : acc) a = k.fe.widen(a, lanes);
    store_slots(k.b, slots[r], reds[r].rule->combine(k.fe, *reds[r].eqn, acc, x, red[size_t(reds[r].arg_pos)]));
  }
}

// One output point: every reduction accumulated over all reduced dims, then the epilogue and the
// stores. `out` holds the kept dims' indices; `out_lanes` > 1 when the innermost kept input dim is
// vectorized (the innermost input dim is kept), else the innermost reduced loop is.
void reduce_point(KernelCtx& k, const RedLayout& L, std::vector<Red>& reds, const std::vector<DimIdx>& out,
                  int out_lanes) {
  kir::Builder& b = k.b;
  const size_t nr = L.axes.size();
  const bool inner_reduced = !L.axes.empty() && L.axes.back() == int64_t(L.in_shape.size()) - 1;
  const int part_lanes = inner_reduced ? k.lanes : out_lanes;
  std::vector<Slots> total, part, tail;
  for (auto& rd : reds) {
    DType d = atom_aval(rd.eqn->inputs[0]).dtype;
    total.push_back(alloc_slots(b, rd.rule->init(k.fe, *rd.eqn, d, out_lanes)));
  }
  std::vector<DimIdx> red_idx;
  std::function<void(size_t)> loops = [&](size_t level) {
    if (level + 1 < nr) {
      b.for_(b.i64(0), b.i64(L.in_shape[size_t(L.axes[level])]), b.i64(1), [&](Value i) {
        red_idx.push_back(FusionEmitter::affine(i));
        loops(level + 1);
        red_idx.pop_back();
      });
      return;
    }
    // The innermost reduced loop, in blocks whose partial results are merged into the total.
    const int64_t extent = nr ? L.in_shape[size_t(L.axes[nr - 1])] : 1;
    bool blocked = extent > kBlock;
    for (auto& rd : reds) blocked &= rd.rule->blocked;
    const int64_t block = blocked ? kBlock : std::max<int64_t>(extent, 1);
    b.for_(b.i64(0), b.i64(extent), b.i64(block), [&](Value lo) {
      Value hi = b.intrinsic("smin", kir::kI64, {b.add(lo, b.i64(block)), b.i64(extent)});
      part.clear();
      tail.clear();
      for (auto& rd : reds) {
        DType d = atom_aval(rd.eqn->inputs[0]).dtype;
        part.push_back(alloc_slots(b, rd.rule->init(k.fe, *rd.eqn, d, part_lanes)));
        if (inner_reduced && part_lanes > 1) tail.push_back(alloc_slots(b, rd.rule->init(k.fe, *rd.eqn, d, 1)));
      }
      auto point = [&](Value j, int lanes) {
        std::vector<DimIdx> red = red_idx;
        red.push_back(DimIdx{j, lanes > 1 ? 1 : 0, {}});
        combine_at(k, L, reds, lanes == part_lanes ? part : tail, out, red, lanes);
      };
      if (nr == 0) {
        point(b.i64(0), part_lanes);
      } else if (inner_reduced && part_lanes > 1) {
        vector_loop(b, lo, hi, block < extent ? block : extent, part_lanes, point);
      } else {
        b.for_(lo, hi, b.i64(1), [&](Value j) {
          std::vector<DimIdx> red = red_idx;
          red.push_back(FusionEmitter::affine(j));
          combine_at(k, L, reds, part, out, red, out_lanes);
        });
      }
      for (size_t r = 0; r < reds.size(); ++r) {
        Acc p = load_slots(b, part[r]);
        if (inner_reduced && part_lanes > 1) p = reds[r].rule->merge(k.fe, *reds[r].eqn, merge_lanes(k, reds[r], p),
                                                                      load_slots(b, tail[r]));
        store_slots(b, total[r], reds[r].rule->merge(k.fe, *reds[r].eqn, load_slots(b, total[r]), p));
      }
    });
  };
  loops(0);
  k.fe.clear_memo();
  ElemIndex at_out = k.fe.index(out, out_lanes);
  for (size_t r = 0; r < reds.size(); ++r)
    k.fe.bind(reds[r].eqn->outputs[0], at_out, {reds[r].rule->finish(k.fe, *reds[r].eqn, load_slots(b, total[r]))});
  store_outputs(k, at_out, L.out_shape, false);
}

void emit_reduction(KernelCtx& k, KernelInfo& info, Value begin, Value end) {
  kir::Builder& b = k.b;
  std::vector<Red> reds;
  RedLayout L;
  for (auto& e : k.body.eqns) {
    if (e.primitive->op_class != OpClass::reduction) continue;
    auto rule = reduction_rules().find(e.primitive->name);
    if (rule == reduction_rules().end()) throw ValueError("no reduction lowering for primitive " + e.primitive->name);
    std::vector<int64_t> axes = e.params.get_ints("axes");
    std::sort(axes.begin(), axes.end());
    const Shape& in = atom_aval(e.inputs.at(0)).shape;
    if (reds.empty()) {
      L.in_shape = in;
      L.axes = axes;
      for (int64_t d = 0; d < int64_t(in.size()); ++d)
        if (!std::binary_search(axes.begin(), axes.end(), d)) {
          L.kept.push_back(d);
          L.out_shape.push_back(in[size_t(d)]);
        }
    } else if (in != L.in_shape || axes != L.axes) {
      throw ValueError("reduction fusion mixes reductions of " + shape_str(L.in_shape) + " and " + shape_str(in));
    }
    Red rd{&e, &rule->second, 0};
    int64_t pos_axis = axes.empty() ? 0 : e.params.get_ints("axes").at(0);
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i] == pos_axis) rd.arg_pos = int(i);
    reds.push_back(rd);
  }
  if (reds.empty()) throw ValueError("reduction fusion without a reduction");
  const bool inner_kept = !L.in_shape.empty() && (L.axes.empty() || L.axes.back() != int64_t(L.in_shape.size()) - 1);
  const size_t ro = L.out_shape.size();
  info.space = L.in_shape;
  info.lanes = k.lanes;
  info.outer_extent = ro ? L.out_shape[0] : 1;
  info.work_per_outer = shape_size(L.in_shape) / std::max<int64_t>(1, info.outer_extent);
  std::vector<Value> ivs;
  auto scalar_dims = [&] {
    std::vector<DimIdx> d;
    for (Value v : ivs) d.push_back(FusionEmitter::affine(v));
    return d;
  };
  if (ro == 0) return reduce_point(k, L, reds, {}, 1);
  if (!inner_kept) {
    nest(b, L.out_shape, 0, ro, ivs, [&] { reduce_point(k, L, reds, scalar_dims(), 1); }, begin, end);
    return;
  }
  auto point = [&](Value j, int lanes) {
    std::vector<DimIdx> d = scalar_dims();
    d.push_back(DimIdx{j, lanes > 1 ? 1 : 0, {}});
    reduce_point(k, L, reds, d, lanes);
  };
  if (ro == 1) return vector_loop(b, begin, end, -1, k.lanes, point);
  nest(b, L.out_shape, 0, ro - 1, ivs, [&] {
    vector_loop(b, b.i64(0), b.i64(L.out_shape[ro - 1]), L.out_shape[ro - 1], k.lanes, point);
  }, begin, end);
}

}  // namespace

KernelInfo emit_fusion_kernel(kir::Module& m, const Eqn& fusion, const std::string& name) {
  const Jaxpr& body = *fusion.params.get_jaxpr("jaxpr")->jaxpr;
  KernelInfo info;
  info.name = name;
  info.kind = fusion.params.get_string("kind");
  kir::Function f;
  f.name = name;
  f.params = {kir::kPtr, kir::kI64, kir::kI64};
  f.param_names = {"bufs", "begin", "end"};
  f.linkage = kir::Linkage::internal;
  kir::Builder b(f);
  Value bufs = b.arg(0), begin = b.arg(1), end = b.arg(2);
  std::vector<Value> in_ptrs, out_ptrs;
  size_t slot = 0;
  for (size_t i = 0; i < body.invars.size(); ++i) in_ptrs.push_back(b.load(kir::kPtr, bufs, b.i64(int64_t(slot++))));
  for (size_t i = 0; i < body.outvars.size(); ++i) out_ptrs.push_back(b.load(kir::kPtr, bufs, b.i64(int64_t(slot++))));
  FusionEmitter fe(b, body, in_ptrs);
  fe.hoist_scalars();
  KernelCtx k{b, fe, body, out_ptrs, kernel_lanes(body)};
  if (info.kind == "reduction") emit_reduction(k, info, begin, end);
  else emit_loop(k, info, begin, end);
  b.ret();
  f.comment = "fusion " + fusion.params.get_string("name") + ": " + info.describe();
  m.functions.push_back(std::move(f));
  return info;
}

}  // namespace minijax::lower
