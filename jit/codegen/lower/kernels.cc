// minijax fusion kernels: the loop nests of "loop" and "reduction" fusions (vector innermost loop
// with a scalar tail; reductions with fixed-order partial results), built from the rule tables.
#include <algorithm>
#include <bit>
#include <set>

#include "core/errors.h"
#include "core/views/array_ops.h"
#include "core/views/control_flow.h"
#include "jit/codegen/lower/lowering.h"

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

// An output whose stored elements a loop kernel scans for NaN or -inf as it writes them: `vec`
// and `scalar` accumulate, per vector lane and in the scalar tail, 1 for each such element.
struct Watch {
  size_t out = 0;
  Value flag;          // the i32 the kernel raises (mj_rt_raise_flag) when it stored one
  Value vec, scalar;   // stack slots: <lanes x i32>, i32
};

struct KernelCtx {
  kir::Builder& b;
  FusionEmitter& fe;
  const Jaxpr& body;
  std::vector<Value> out_ptrs;
  int lanes;
  std::vector<Watch> watches = {};
};

int kernel_lanes(const Jaxpr& body) {
  int lanes = 64;
  auto see = [&](const ShapedArray& a) { lanes = std::min(lanes, FusionEmitter::native_lanes(a.dtype)); };
  for (auto& v : body.invars) see(v.aval());
  for (auto& e : body.eqns)
    for (auto& o : e.outputs) see(o.aval());
  return lanes;
}

// for j in [lo, hi): point(j, lanes) -- vector steps while a whole vector fits, then scalars. [lo, hi)
// is a dimension of `extent` elements, whole or one block of mj_rt_parallel_for, whose bounds are
// multiples of its grain and so of `lanes` (program.cc rounds the grain of a vectorized outer loop):
// when extent is a multiple of lanes, so is every block, and the scalar tail is not emitted.
void vector_loop(kir::Builder& b, Value lo, Value hi, int64_t extent, int lanes,
                 const std::function<void(Value, int)>& point) {
  if (lanes > 1 && extent >= lanes) {
    if (extent % lanes == 0) return b.for_(lo, hi, b.i64(lanes), [&](Value j) { point(j, lanes); });
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
  for (const Watch& w : k.watches) {  // f32 only: NaN is |bits| > inf's bits, -inf is its own
    kir::Builder& b = k.b;
    const int lanes = at.lanes;
    const Type i32 = kir::kI32.with_lanes(lanes);
    auto splat = [&](uint32_t c) { return lanes > 1 ? b.splat(b.i32(int32_t(c)), lanes) : b.i32(int32_t(c)); };
    const Value bits = b.cast(kir::Op::Bitcast, i32, vals[w.out].v);
    const Value nan = b.icmp(kir::Pred::ugt, b.binop(kir::Op::And, bits, splat(0x7fffffffu)), splat(0x7f800000u));
    const Value neg_inf = b.icmp(kir::Pred::eq, bits, splat(0xff800000u));
    const Value bad = b.cast(kir::Op::ZExt, i32, b.binop(kir::Op::Or, nan, neg_inf));
    const Value slot = lanes > 1 ? w.vec : w.scalar;
    b.store(slot, b.i64(0), b.binop(kir::Op::Or, b.load(i32, slot, b.i64(0)), bad));
  }
}

// Zeroes each watch's accumulators (before the kernel's loops).
void start_watches(KernelCtx& k) {
  kir::Builder& b = k.b;
  for (Watch& w : k.watches) {
    w.vec = b.stack_slot(kir::kI32.with_lanes(std::max(k.lanes, 2)));
    w.scalar = b.stack_slot(kir::kI32);
    b.store(w.vec, b.i64(0), b.splat(b.i32(0), std::max(k.lanes, 2)));
    b.store(w.scalar, b.i64(0), b.i32(0));
  }
}

// After the loops: raises a watch's flag when any lane or the tail saw NaN or -inf.
void finish_watches(KernelCtx& k) {
  kir::Builder& b = k.b;
  for (const Watch& w : k.watches) {
    const int lanes = std::max(k.lanes, 2);
    const Value v = b.load(kir::kI32.with_lanes(lanes), w.vec, b.i64(0));
    Value any = b.load(kir::kI32, w.scalar, b.i64(0));
    for (int l = 0; l < lanes; ++l) any = b.binop(kir::Op::Or, any, b.extract(v, l));
    b.if_(b.icmp(kir::Pred::ne, any, b.i32(0)),
          [&] { b.call("mj_rt_raise_flag", kir::kVoid, {w.flag}); });
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
  start_watches(k);
  if (r == 0) {
    info.outer_extent = 1;
    store_outputs(k, k.fe.scalar_index(1), space, false);
    finish_watches(k);
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
  info.outer_vectorized = r == 1 && k.lanes > 1;
  if (r == 1) {
    vector_loop(b, begin, end, space[0], k.lanes, [&](Value j, int lanes) { point(ivs, j, lanes); });
  } else {
    nest(b, space, 0, r - 1, ivs, [&] {
      vector_loop(b, b.i64(0), b.i64(space[r - 1]), space[r - 1], k.lanes,
                  [&](Value j, int lanes) { point(ivs, j, lanes); });
    }, begin, end);
  }
  finish_watches(k);
}

// ---- reduction fusions --------------------------------------------------------------------------

// The order of pairwise rules (sums, products), shared bit for bit with eager's reduce_sum, which
// states it in full (core/primitives/reductions.cc sum_reduce; docs/compiler.md, "Numerics"): the
// innermost reduced dim in blocks of 128, element i of a block into accumulator i % 16 (vector
// lanes when it is the innermost input dim: block_lanes; an array of 16 vectors of outputs when
// the kept innermost dim is vectorized: block_strided), the 16 joined by a fixed tree; the results
// of blocks, then of rows (the other reduced dims), joined by pairwise trees (PairTree). The order
// depends on the reduced extents only: not on the layout (vmap, transposes), the host's vector
// width or the thread count.
constexpr int64_t kSumBlock = 128;
constexpr int kSumLanes = 16;

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

// Accumulator values in stack slots: element `at` (0 when invalid) of each ptr.
struct Slots {
  std::vector<Value> ptr;
  std::vector<DType> dtype;
  int lanes = 1;
  Value at;
};

Acc init_acc(KernelCtx& k, const Red& rd, int lanes) {
  return rd.rule->init(k.fe, *rd.eqn, atom_aval(rd.eqn->inputs[0]).dtype, lanes);
}

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
    r.push_back(EVal{b.load(t, s.ptr[i], s.at.valid() ? s.at : b.i64(0)), s.dtype[i], t.lanes});
  }
  return r;
}

void store_slots(kir::Builder& b, const Slots& s, const Acc& v) {
  for (size_t i = 0; i < s.ptr.size(); ++i) b.store(s.ptr[i], s.at.valid() ? s.at : b.i64(0), v[i].v);
}

// A pairwise tree over `count` results pushed in order 0, 1, ..., formed as a binary counter:
// stack level l holds the join of 2^l consecutive results; pushing result i first joins it with
// the levels of i's trailing one bits (earlier results on the left), and the tree's result joins
// the levels of count's set bits from the lowest up. This is eager's P exactly (P(0..k) =
// P(0..p) + P(p..k), p the largest power of two below k).
struct PairTree {
  int64_t count = 0;
  int levels = 1;
  Slots stack;  // `levels` entries per accumulator value
};

// An array of `count` accumulators shaped like `like` (uninitialized).
Slots array_slots(kir::Builder& b, const Acc& like, int64_t count) {
  Slots s;
  for (auto& v : like) {
    s.ptr.push_back(b.stack_slot(b.type(v.v), count));
    s.dtype.push_back(v.dtype);
    s.lanes = v.lanes;
  }
  return s;
}

PairTree pair_tree(kir::Builder& b, const Acc& like, int64_t count) {
  PairTree t;
  t.count = count;
  t.levels = std::max(1, int(std::bit_width(uint64_t(count))));
  t.stack = array_slots(b, like, t.levels);
  return t;
}

Slots at_entry(kir::Builder& b, const Slots& s, Value i);
Slots tree_level(kir::Builder& b, const PairTree& t, Value level) { return at_entry(b, t.stack, level); }

// Entry i of an array of accumulators (Slots of several entries, `lanes` elements each).
Slots at_entry(kir::Builder& b, const Slots& s, Value i) {
  Slots e = s;
  e.at = b.mul(i, b.i64(s.lanes));
  return e;
}
std::vector<Acc> entries(kir::Builder& b, const Slots& s, int64_t from, int64_t count) {
  std::vector<Acc> r;
  for (int64_t i = from; i < from + count; ++i) r.push_back(load_slots(b, at_entry(b, s, b.i64(i))));
  return r;
}

void tree_push(KernelCtx& k, const Red& rd, const PairTree& t, Value index, Acc part) {
  kir::Builder& b = k.b;
  for (auto& v : part) v = k.fe.widen(v, t.stack.lanes);
  Slots run = alloc_slots(b, part);
  Value level = b.stack_slot(kir::kI64), bits = b.stack_slot(kir::kI64);
  b.store(level, b.i64(0), b.i64(0));
  b.store(bits, b.i64(0), index);
  auto get = [&](Value slot) { return b.load(kir::kI64, slot, b.i64(0)); };
  b.while_([&] { return b.icmp(kir::Pred::ne, b.binop(kir::Op::And, get(bits), b.i64(1)), b.i64(0)); },
           [&] {
             Value l = get(level);
             store_slots(b, run, rd.rule->merge(k.fe, *rd.eqn, load_slots(b, tree_level(b, t, l)), load_slots(b, run)));
             b.store(level, b.i64(0), b.add(l, b.i64(1)));
             b.store(bits, b.i64(0), b.binop(kir::Op::LShr, get(bits), b.i64(1)));
           });
  store_slots(b, tree_level(b, t, get(level)), load_slots(b, run));
}

Acc tree_result(KernelCtx& k, const Red& rd, const PairTree& t) {
  Acc r;
  for (int l = 0; l < t.levels; ++l) {
    if (((t.count >> l) & 1) == 0) continue;
    Acc e = load_slots(k.b, tree_level(k.b, t, k.b.i64(l)));
    r = r.empty() ? e : rd.rule->merge(k.fe, *rd.eqn, e, r);
  }
  return r;
}

ElemIndex input_index(FusionEmitter& fe, const RedLayout& L, const std::vector<DimIdx>& out,
                      const std::vector<DimIdx>& red, int lanes) {
  std::vector<DimIdx> dims(L.in_shape.size());
  for (size_t i = 0; i < L.kept.size(); ++i) dims[size_t(L.kept[i])] = out[i];
  for (size_t i = 0; i < L.axes.size(); ++i) dims[size_t(L.axes[i])] = red[i];
  return fe.index(std::move(dims), lanes);
}

// Accumulators joined pairwise in a fixed tree: adjacent pairs (2i before 2i + 1) level by level.
Acc join_tree(KernelCtx& k, const Red& rd, std::vector<Acc> parts) {
  while (parts.size() > 1) {
    std::vector<Acc> next;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) next.push_back(rd.rule->merge(k.fe, *rd.eqn, parts[i], parts[i + 1]));
    if (parts.size() % 2) next.push_back(parts.back());
    parts.swap(next);
  }
  return parts[0];
}

// Lanes of a vector accumulator merged in join_tree's tree, lane by lane.
Acc merge_lanes(KernelCtx& k, const Red& rd, const Acc& v) {
  int lanes = v.at(0).lanes;
  std::vector<Acc> parts(static_cast<size_t>(lanes));
  for (int l = 0; l < lanes; ++l)
    for (auto& c : v) parts[size_t(l)].push_back(EVal{k.b.extract(c.v, l), c.dtype, 1});
  return join_tree(k, rd, std::move(parts));
}

// The same tree for a power-of-two lane count, a level at a time: even lanes + odd lanes.
Acc lane_tree(KernelCtx& k, const Red& rd, Acc v) {
  kir::Builder& b = k.b;
  for (int lanes = v.at(0).lanes; lanes > 2; lanes /= 2) {
    std::vector<int> even, odd;
    for (int i = 0; i < lanes / 2; ++i) {
      even.push_back(2 * i);
      odd.push_back(2 * i + 1);
    }
    Acc e, o;
    for (auto& c : v) {
      e.push_back(EVal{b.shuffle(c.v, c.v, even), c.dtype, lanes / 2});
      o.push_back(EVal{b.shuffle(c.v, c.v, odd), c.dtype, lanes / 2});
    }
    v = rd.rule->merge(k.fe, *rd.eqn, e, o);
  }
  return merge_lanes(k, rd, v);
}

// Combines, for every reduction, the input element(s) at (out, red) into its slots.
void combine_at(KernelCtx& k, const RedLayout& L, std::vector<Red>& reds, const std::vector<Slots>& slots,
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

// What reduce_point's loops share.
struct PointCtx {
  const RedLayout& L;
  std::vector<Red>& reds;
  const std::vector<DimIdx>& out;
  int out_lanes, part_lanes;
  bool inner_reduced;
  int64_t extent, block, nblocks, rows;
  std::vector<DimIdx> red_idx;  // indices of the outer reduced dims (the row)
};

std::vector<DimIdx> red_at(const PointCtx& P, Value j, int coef) {
  std::vector<DimIdx> red = P.red_idx;
  red.push_back(DimIdx{j, coef, {}});
  return red;
}

// One block [lo, hi) of the innermost reduced dim when it is the innermost input dim: each rule's
// result over it. Element j goes into lane (j - lo) % part_lanes of the lane accumulators (the
// tail after the last whole vector through a spilled lane array, for pairwise rules; other rules
// keep the tail in a scalar result merged after the lanes); the lanes are merged in join_tree's
// fixed tree.
std::vector<Acc> block_lanes(KernelCtx& k, PointCtx& P, Value lo, Value hi) {
  kir::Builder& b = k.b;
  std::vector<Slots> part;
  for (auto& rd : P.reds) part.push_back(alloc_slots(b, init_acc(k, rd, P.part_lanes)));
  const int64_t lanes = P.part_lanes, longest = std::min(P.block, P.extent);
  Value vend = lo;
  if (longest >= lanes) {
    vend = b.add(lo, b.mul(b.binop(kir::Op::SDiv, b.sub(hi, lo), b.i64(lanes)), b.i64(lanes)));
    b.for_(lo, vend, b.i64(lanes), [&](Value j) { combine_at(k, P.L, P.reds, part, P.out, red_at(P, j, 1), int(lanes)); });
  }
  std::vector<Slots> spill(P.reds.size()), tail(P.reds.size());
  const bool has_tail = P.extent % lanes != 0;
  if (has_tail) {
    for (size_t r = 0; r < P.reds.size(); ++r) {
      if (!P.reds[r].rule->pairwise) {
        tail[r] = alloc_slots(b, init_acc(k, P.reds[r], 1));
        continue;
      }
      for (size_t i = 0; i < part[r].ptr.size(); ++i) {
        Type vt = b.function().insts[size_t(part[r].ptr[i].id)].elem;
        Value arr = b.stack_slot(vt.with_lanes(1), lanes);
        b.store(arr, b.i64(0), b.load(vt, part[r].ptr[i], b.i64(0)));
        spill[r].ptr.push_back(arr);
        spill[r].dtype.push_back(part[r].dtype[i]);
      }
    }
    b.for_(vend, hi, b.i64(1), [&](Value j) {
      std::vector<Slots> dst = tail;
      for (size_t r = 0; r < P.reds.size(); ++r)
        if (P.reds[r].rule->pairwise) (dst[r] = spill[r]).at = b.sub(j, vend);
      combine_at(k, P.L, P.reds, dst, P.out, red_at(P, j, 0), 1);
    });
    for (size_t r = 0; r < P.reds.size(); ++r)
      for (size_t i = 0; i < spill[r].ptr.size(); ++i) {
        Type vt = b.function().insts[size_t(part[r].ptr[i].id)].elem;
        b.store(part[r].ptr[i], b.i64(0), b.load(vt, spill[r].ptr[i], b.i64(0)));
      }
  }
  std::vector<Acc> res;
  for (size_t r = 0; r < P.reds.size(); ++r) {
    const Red& rd = P.reds[r];
    if (rd.rule->pairwise) {
      res.push_back(std::has_single_bit(unsigned(lanes)) ? lane_tree(k, rd, load_slots(b, part[r]))
                                                         : merge_lanes(k, rd, load_slots(b, part[r])));
      continue;
    }
    Acc p = merge_lanes(k, rd, load_slots(b, part[r]));
    if (has_tail) p = rd.rule->merge(k.fe, *rd.eqn, p, load_slots(b, tail[r]));
    res.push_back(p);
  }
  return res;
}

// One block [lo, hi) when the innermost input dim is kept: `out_lanes` outputs at a time. Element
// j goes into accumulator (j - lo) % 16 of a 16-entry array (pairwise rules: the same
// accumulators as the lanes of block_lanes, joined by the same tree), or is combined in sequence
// into one result (other rules). A dim of at most kSumBlock elements (one block) is unrolled
// group by group: every accumulator index is a constant, so the array lives in registers.
std::vector<Acc> block_strided(KernelCtx& k, PointCtx& P, Value lo, Value hi) {
  kir::Builder& b = k.b;
  const int ol = P.out_lanes;
  std::vector<Slots> part(P.reds.size()), acc16(P.reds.size());
  for (size_t r = 0; r < P.reds.size(); ++r) {
    Acc init = init_acc(k, P.reds[r], ol);
    if (!P.reds[r].rule->pairwise) {
      part[r] = alloc_slots(b, init);
      continue;
    }
    for (auto& v : init) {
      Value arr = b.stack_slot(b.type(v.v), kSumLanes);
      for (int64_t t = 0; t < kSumLanes; ++t) b.store(arr, b.i64(t * ol), v.v);
      acc16[r].ptr.push_back(arr);
      acc16[r].dtype.push_back(v.dtype);
      acc16[r].lanes = ol;
    }
  }
  auto element = [&](Value j, Value at) {
    std::vector<Slots> dst = part;
    for (size_t r = 0; r < P.reds.size(); ++r)
      if (P.reds[r].rule->pairwise) (dst[r] = acc16[r]).at = at;
    combine_at(k, P.L, P.reds, dst, P.out, red_at(P, j, 0), ol);
  };
  if (P.nblocks == 1 && P.extent <= kSumBlock) {  // lo = 0, hi = extent (a max's block is the whole dim)
    // Two or more whole groups of kSumLanes run as a loop over groups whose body is unrolled: the
    // accumulator indices stay constants, and the IR is one group's, not the block's (a fully
    // unrolled 128-row Adam bias step was 127 KB of IR and doubled the MLP step's cold compile).
    const int64_t whole = P.extent / kSumLanes * kSumLanes;
    const int64_t looped = whole >= 2 * kSumLanes ? whole : 0;
    if (looped > 0)
      b.for_(lo, b.add(lo, b.i64(looped)), b.i64(kSumLanes), [&](Value g) {
        for (int64_t t = 0; t < kSumLanes; ++t) element(b.add(g, b.i64(t)), b.i64(t * ol));
      });
    for (int64_t t = looped; t < P.extent; ++t) element(b.add(lo, b.i64(t)), b.i64((t & (kSumLanes - 1)) * ol));
  } else {
    b.for_(lo, hi, b.i64(1), [&](Value j) {
      element(j, b.mul(b.binop(kir::Op::And, b.sub(j, lo), b.i64(kSumLanes - 1)), b.i64(ol)));
    });
  }
  std::vector<Acc> res;
  for (size_t r = 0; r < P.reds.size(); ++r) {
    if (!P.reds[r].rule->pairwise) {
      res.push_back(load_slots(b, part[r]));
      continue;
    }
    std::vector<Acc> parts;
    for (int t = 0; t < kSumLanes; ++t) {
      Slots s = acc16[r];
      s.at = b.i64(int64_t(t) * ol);
      parts.push_back(load_slots(b, s));
    }
    res.push_back(join_tree(k, P.reds[r], std::move(parts)));
  }
  return res;
}

// P over items (static): P(0..k) = P(0..p) + P(p..k), p the largest power of two below k.
Acc static_tree(KernelCtx& k, const Red& rd, const std::vector<Acc>& items, size_t lo, size_t n) {
  if (n == 1) return items[lo];
  const size_t p = std::bit_floor(n - 1);
  return rd.rule->merge(k.fe, *rd.eqn, static_tree(k, rd, items, lo, p), static_tree(k, rd, items, lo + p, n - p));
}

// One row: the innermost reduced dim in blocks. Pairwise rules join the blocks' results by P in
// groups of kGroup (an aligned group of 2^s blocks is a subtree of P): the results of a group's
// blocks go into an array, a whole group is joined by a balanced tree and pushed to a PairTree
// over groups, and the last nblocks % kGroup blocks are joined by P statically and merged
// under the groups' tree; the row's result goes to `row_tree` (or `total` when there is one row).
// Other rules merge each block's result into `total`.
constexpr int64_t kGroup = 8;

void reduce_row(KernelCtx& k, PointCtx& P, std::vector<Slots>& total, std::vector<PairTree>& row_tree,
                Value row_index) {
  kir::Builder& b = k.b;
  const size_t n = P.reds.size();
  const int64_t groups = P.nblocks / kGroup, rest = P.nblocks % kGroup;
  const bool in_regs = P.out_lanes == 1;
  std::vector<PairTree> group_tree(n);
  std::vector<Slots> row_res(n), arr(n);
  for (size_t r = 0; r < n; ++r) {
    if (!P.reds[r].rule->pairwise) continue;
    Acc init = init_acc(k, P.reds[r], P.out_lanes);
    row_res[r] = alloc_slots(b, init);
    if (groups > 1) group_tree[r] = pair_tree(b, init, groups);
    if (P.nblocks > 1) arr[r] = in_regs ? alloc_slots(b, init_acc(k, P.reds[r], kGroup)) : array_slots(b, init, kGroup);
  }
  // The group's block results: lanes of a vector (scalar results: no stores in the loop) or an array.
  auto put = [&](size_t r, Value slot, Acc p) {
    if (!in_regs) return store_slots(b, at_entry(b, arr[r], slot), p);
    Acc cur = load_slots(b, arr[r]);
    Value hit = b.icmp(kir::Pred::eq, b.lane_iota(kGroup), b.splat(slot, kGroup));
    for (size_t i = 0; i < p.size(); ++i) cur[i].v = b.select(hit, b.splat(p[i].v, kGroup), cur[i].v);
    store_slots(b, arr[r], cur);
  };
  auto get = [&](size_t r, int64_t count) {
    if (!in_regs) return entries(b, arr[r], 0, count);
    std::vector<Acc> items(static_cast<size_t>(count));
    for (auto& v : load_slots(b, arr[r]))
      for (int64_t i = 0; i < count; ++i) items[size_t(i)].push_back(EVal{b.extract(v.v, int(i)), v.dtype, 1});
    return items;
  };
  b.for_(b.i64(0), b.i64(P.extent), b.i64(P.block), [&](Value lo) {
    Value hi = P.nblocks > 1 ? b.intrinsic("smin", kir::kI64, {b.add(lo, b.i64(P.block)), b.i64(P.extent)})
                             : b.i64(P.extent);
    std::vector<Acc> parts = P.inner_reduced && P.part_lanes > 1 ? block_lanes(k, P, lo, hi) : block_strided(k, P, lo, hi);
    Value slot = b.binop(kir::Op::And, b.binop(kir::Op::SDiv, lo, b.i64(P.block)), b.i64(kGroup - 1));
    for (size_t r = 0; r < n; ++r) {
      const Red& rd = P.reds[r];
      if (!rd.rule->pairwise) {
        store_slots(b, total[r], rd.rule->merge(k.fe, *rd.eqn, load_slots(b, total[r]), parts[r]));
      } else if (P.nblocks <= 1) {  // one block (or none: the loop body is emitted but never runs)
        store_slots(b, row_res[r], parts[r]);
      } else {
        Acc p = parts[r];
        for (auto& v : p) v = k.fe.widen(v, P.out_lanes);
        put(r, slot, p);
      }
    }
    if (groups == 0) return;
    b.if_(b.icmp(kir::Pred::eq, slot, b.i64(kGroup - 1)), [&] {
      Value g = b.binop(kir::Op::SDiv, lo, b.i64(P.block * kGroup));
      for (size_t r = 0; r < n; ++r) {
        if (!P.reds[r].rule->pairwise) continue;
        Acc joined = in_regs ? lane_tree(k, P.reds[r], load_slots(b, arr[r])) : join_tree(k, P.reds[r], get(r, kGroup));
        if (groups > 1) tree_push(k, P.reds[r], group_tree[r], g, joined);
        else store_slots(b, row_res[r], joined);
      }
    });
  });
  for (size_t r = 0; r < n; ++r) {
    const Red& rd = P.reds[r];
    if (!rd.rule->pairwise) continue;
    if (P.nblocks > 1) {
      Acc acc;
      if (rest > 0) acc = static_tree(k, rd, get(r, rest), 0, size_t(rest));
      if (groups == 1) {
        Acc e = load_slots(b, row_res[r]);
        acc = acc.empty() ? e : rd.rule->merge(k.fe, *rd.eqn, e, acc);
      }
      for (int l = 0; groups > 1 && l < group_tree[r].levels; ++l) {
        if (((groups >> l) & 1) == 0) continue;
        Acc e = load_slots(b, tree_level(b, group_tree[r], b.i64(l)));
        acc = acc.empty() ? e : rd.rule->merge(k.fe, *rd.eqn, e, acc);
      }
      store_slots(b, row_res[r], acc);
    }
    Acc res = load_slots(b, row_res[r]);
    if (P.rows > 1) tree_push(k, rd, row_tree[r], b.load(kir::kI64, row_index, b.i64(0)), res);
    else store_slots(b, total[r], res);
  }
  if (row_index.valid()) b.store(row_index, b.i64(0), b.add(b.load(kir::kI64, row_index, b.i64(0)), b.i64(1)));
}

// One output point: every reduction accumulated over all reduced dims, then the epilogue and the
// stores. `out` holds the kept dims' indices; `out_lanes` > 1 when the innermost kept input dim is
// vectorized (the innermost input dim is kept), else the innermost reduced loop is. The outer
// reduced dims run as nested loops over rows (row-major), the innermost in blocks (reduce_row).
void reduce_point(KernelCtx& k, const RedLayout& L, std::vector<Red>& reds, const std::vector<DimIdx>& out,
                  int out_lanes) {
  kir::Builder& b = k.b;
  const size_t nr = L.axes.size();
  bool pairwise = false;
  for (auto& rd : reds) pairwise |= rd.rule->pairwise;
  PointCtx P{L, reds, out, out_lanes, out_lanes, false, 1, 1, 1, 1, {}};
  P.inner_reduced = nr && L.axes.back() == int64_t(L.in_shape.size()) - 1;
  P.part_lanes = !P.inner_reduced ? out_lanes : pairwise ? kSumLanes : k.lanes;
  P.extent = nr ? L.in_shape[size_t(L.axes[nr - 1])] : 1;
  P.block = pairwise ? kSumBlock : std::max<int64_t>(P.extent, 1);
  P.nblocks = (P.extent + P.block - 1) / P.block;
  for (size_t l = 0; l + 1 < nr; ++l) P.rows *= L.in_shape[size_t(L.axes[l])];
  std::vector<Slots> total;
  std::vector<PairTree> row_tree(reds.size());
  for (auto& rd : reds) {
    total.push_back(alloc_slots(b, init_acc(k, rd, out_lanes)));
    if (rd.rule->pairwise && P.rows > 1) row_tree[total.size() - 1] = pair_tree(b, init_acc(k, rd, out_lanes), P.rows);
  }
  Value row_index;
  if (pairwise && P.rows > 1) {
    row_index = b.stack_slot(kir::kI64);
    b.store(row_index, b.i64(0), b.i64(0));
  }
  if (nr == 0) {
    std::vector<Slots> part;
    for (auto& rd : reds) part.push_back(alloc_slots(b, init_acc(k, rd, out_lanes)));
    combine_at(k, L, reds, part, out, {FusionEmitter::affine(b.i64(0))}, out_lanes);
    for (size_t r = 0; r < reds.size(); ++r)
      store_slots(b, total[r], reds[r].rule->merge(k.fe, *reds[r].eqn, load_slots(b, total[r]), load_slots(b, part[r])));
  } else {
    std::function<void(size_t)> loops = [&](size_t level) {
      if (level + 1 == nr) return reduce_row(k, P, total, row_tree, row_index);
      b.for_(b.i64(0), b.i64(L.in_shape[size_t(L.axes[level])]), b.i64(1), [&](Value i) {
        P.red_idx.push_back(FusionEmitter::affine(i));
        loops(level + 1);
        P.red_idx.pop_back();
      });
    };
    loops(0);
    for (size_t r = 0; r < reds.size(); ++r)
      if (reds[r].rule->pairwise && P.rows > 1) store_slots(b, total[r], tree_result(k, reds[r], row_tree[r]));
  }
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
    const std::vector<int64_t> unsorted_axes = reduction_axes(e);
    std::vector<int64_t> axes = unsorted_axes;
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
    int64_t pos_axis = axes.empty() ? 0 : unsorted_axes.at(0);
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
  info.outer_vectorized = ro == 1 && k.lanes > 1;
  if (ro == 1) return vector_loop(b, begin, end, L.out_shape[0], k.lanes, point);
  nest(b, L.out_shape, 0, ro - 1, ivs, [&] {
    vector_loop(b, b.i64(0), b.i64(L.out_shape[ro - 1]), L.out_shape[ro - 1], k.lanes, point);
  }, begin, end);
}

}  // namespace

KernelInfo emit_fusion_kernel(kir::Module& m, const Eqn& fusion, const std::string& name,
                              const std::vector<size_t>& watch) {
  const CallParams fp = call_params(fusion);
  const Jaxpr& body = *fp.jaxpr->jaxpr;
  KernelInfo info;
  info.name = name;
  info.kind = fp.kind.value();
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
  for (size_t o : watch) {
    if (info.kind != "loop" || o >= body.outvars.size() || atom_aval(body.outvars[o]).dtype != DType::f32)
      throw ValueError("watch of output " + std::to_string(o) + " of fusion " + fp.name.value() +
                       ": only f32 results of loop fusions are watched");
    k.watches.push_back(Watch{o, b.load(kir::kPtr, bufs, b.i64(int64_t(slot++))), {}, {}});
  }
  if (!watch.empty()) m.declare(kir::Extern{"mj_rt_raise_flag", {kir::kPtr}, kir::kVoid});
  if (info.kind == "reduction") emit_reduction(k, info, begin, end);
  else emit_loop(k, info, begin, end);
  b.ret();
  f.comment = "fusion " + fp.name.value() + ": " + info.describe();
  m.functions.push_back(std::move(f));
  return info;
}

}  // namespace minijax::lower
