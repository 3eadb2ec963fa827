// minijax loop nests of the windowed reductions: the window nest shared by reduce_window*,
// select_and_gather_add and select_and_scatter_add (output points, taps in window order).
#include <algorithm>

#include "jit/codegen/lower/window_loops_util.h"

namespace minijax::lower::window {

using kir::Op;
using kir::Value;

int64_t WindowNest::outer() const {
  int64_t n = 1;
  for (size_t d = 0; d < parallel_dims; ++d) n *= dims[d].Y;
  return n;
}

int64_t WindowNest::work_per_outer() const {
  int64_t n = 1;
  for (size_t d = 0; d < dims.size(); ++d) n *= (d < parallel_dims ? 1 : dims[d].Y) * dims[d].K;
  return n;
}

namespace {

struct Nest {
  kir::Builder& b;
  const WindowNest& w;
  const WindowOps& ops;
  std::vector<int64_t> xst, yst;  // row-major strides of the operand and the output
};

// The taps of dims [d, rank) at operand offset `off`, each combined into `slots`. `valid`: the
// taps of the outer dims read an element (every_tap nests; invalid Value: always).
void taps(Nest& n, const std::vector<Value>& ys, size_t d, Value off, Value valid, int lanes,
          const std::vector<Value>& slots, const std::vector<EVal>& like) {
  kir::Builder& b = n.b;
  const size_t r = n.w.dims.size();
  if (d == r) {
    const int64_t coef = lanes > 1 ? n.w.dims[r - 1].s : 0;
    if (valid.valid()) off = b.select(valid, off, b.i64(0));  // padding and holes: no read
    store_acc(b, slots, n.ops.step(load_acc(b, slots, like), DimIdx{off, coef, {}}, lanes, valid));
    return;
  }
  const WinDim& w = n.w.dims[d];
  const int64_t st = n.xst[d];
  Value base = b.sub(w.s == 1 ? ys[d] : b.mul(ys[d], b.i64(w.s)), b.i64(w.lo));
  auto at = [&](Value x) { return b.add(off, st == 1 ? x : b.mul(x, b.i64(st))); };
  auto position = [&](Value k) { return b.add(base, w.wd == 1 ? k : b.mul(k, b.i64(w.wd))); };
  // The vectorized dim (inside its interior) and full dims: every tap reads an element.
  if ((d + 1 == r && lanes > 1) || w.full()) {
    if (w.K == 1) return taps(n, ys, d + 1, at(base), valid, lanes, slots, like);
    b.for_(b.i64(0), b.i64(w.K), b.i64(1), [&](Value k) { taps(n, ys, d + 1, at(position(k)), valid, lanes, slots, like); });
    return;
  }
  if (n.w.every_tap) {  // each tap, with whether it reads an element
    b.for_(b.i64(0), b.i64(w.K), b.i64(1), [&](Value k) {
      Value q = position(k);
      Value ok = b.binop(Op::And, b.icmp(kir::Pred::sge, q, b.i64(0)), b.icmp(kir::Pred::slt, q, b.i64(w.dilated())));
      if (w.bd != 1) ok = b.binop(Op::And, ok, b.icmp(kir::Pred::eq, b.binop(Op::SRem, q, b.i64(w.bd)), b.i64(0)));
      Value x = w.bd == 1 ? q : b.binop(Op::SDiv, q, b.i64(w.bd));
      taps(n, ys, d + 1, at(x), valid.valid() ? b.binop(Op::And, valid, ok) : ok, lanes, slots, like);
    });
    return;
  }
  auto [k0, k1] = tap_range(b, w, base);
  b.for_(k0, k1, b.i64(1), [&](Value k) {
    Value q = position(k);
    if (w.bd == 1) return taps(n, ys, d + 1, at(q), valid, lanes, slots, like);
    b.if_(b.icmp(kir::Pred::eq, b.binop(Op::SRem, q, b.i64(w.bd)), b.i64(0)),
          [&] { taps(n, ys, d + 1, at(b.binop(Op::SDiv, q, b.i64(w.bd))), valid, lanes, slots, like); });
  });
}

// One output point (ys: every output index; the last is the first of `lanes` positions).
void point(Nest& n, const std::vector<Value>& ys, int lanes) {
  kir::Builder& b = n.b;
  std::vector<EVal> init = n.ops.init(lanes);
  std::vector<Value> slots = acc_slots(b, init);
  taps(n, ys, 0, b.i64(0), Value{}, lanes, slots, init);
  Value out = b.i64(0);
  for (size_t d = 0; d < ys.size(); ++d)
    if (n.w.dims[d].Y != 1) out = b.add(out, n.yst[d] == 1 ? ys[d] : b.mul(ys[d], b.i64(n.yst[d])));
  n.ops.done(load_acc(b, slots, init), DimIdx{out, lanes > 1 ? 1 : 0, {}}, lanes);
}

// The innermost output dim: scalar points where some tap is out of bounds, vectors inside.
void last_dim(Nest& n, std::vector<Value>& ys) {
  kir::Builder& b = n.b;
  const WinDim& w = n.w.dims.back();
  auto at = [&](Value y, int lanes) {
    ys.push_back(y);
    point(n, ys, lanes);
    ys.pop_back();
  };
  auto [first, last] = n.w.lanes > 1 ? w.interior() : std::pair<int64_t, int64_t>{0, 0};
  if (last - first < n.w.lanes) first = last = 0;
  if (first > 0) b.for_(b.i64(0), b.i64(first), b.i64(1), [&](Value y) { at(y, 1); });
  vector_steps(b, first, last, n.w.lanes, n.w.overlap, at);
  if (last < w.Y) b.for_(b.i64(last), b.i64(w.Y), b.i64(1), [&](Value y) { at(y, 1); });
}

}  // namespace

void emit_window_points(kir::Builder& b, const WindowNest& w, const WindowOps& ops, Value begin, Value end) {
  Shape xs, ys;
  for (auto& d : w.dims) {
    xs.push_back(d.X);
    ys.push_back(d.Y);
  }
  Nest n{b, w, ops, strides_of(xs), strides_of(ys)};
  const size_t r = w.dims.size(), p = w.parallel_dims;
  const std::vector<int64_t> outer_extents(ys.begin(), ys.begin() + std::ptrdiff_t(p));
  b.for_(begin, end, b.i64(1), [&](Value o) {
    std::vector<Value> idx = decode_index(b, o, outer_extents);
    std::function<void(size_t)> loops = [&](size_t d) {
      if (d + 1 == r) return last_dim(n, idx);
      b.for_(b.i64(0), b.i64(ys[d]), b.i64(1), [&](Value i) {
        idx.push_back(i);
        loops(d + 1);
        idx.pop_back();
      });
    };
    loops(p);
  });
}

}  // namespace minijax::lower::window
