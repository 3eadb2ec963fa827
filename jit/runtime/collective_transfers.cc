// minijax collective transfers: box copies and rank-order reductions straight between the
// participants' buffers, each sender -> receiver message counted as it is copied.
#include "jit/runtime/collective_transfers.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <type_traits>

#include "core/errors.h"
#include "core/primitives/elementwise_scalar.h"
#include "sharding/plan_reshard.h"

namespace minijax::detail {
namespace {

using Members = std::vector<CollectiveMember>;

std::string ids_str(const std::vector<int>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

std::string where(const CollectiveOp& op, const std::vector<int>& group) {
  return std::string(collective_kind_name(op.kind)) + " over devices " + ids_str(group);
}

// ---- boxes: row-major sub-blocks of dense arrays ---------------------------------------------

Shape strides_of(const Shape& s) {
  Shape st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// Calls f(dst_offset, src_offset, count) (in elements) for each contiguous run of the box `box`
// placed at `dlo` in an array of shape `dshape` and at `slo` in one of shape `sshape`.
template <class F>
void for_runs(const Shape& dshape, const Shape& dlo, const Shape& sshape, const Shape& slo, const Shape& box,
              F&& f) {
  const size_t nd = box.size();
  for (int64_t b : box)
    if (b == 0) return;
  if (nd == 0) {
    f(0, 0, 1);
    return;
  }
  size_t k = nd - 1;  // dims after k are whole in both arrays: a run spans dims k..nd-1
  while (k > 0 && box[k] == sshape[k] && box[k] == dshape[k]) --k;
  int64_t run = 1;
  for (size_t i = k; i < nd; ++i) run *= box[i];
  const Shape ds = strides_of(dshape), ss = strides_of(sshape);
  Shape idx(k, 0);
  for (;;) {
    int64_t doff = 0, soff = 0;
    for (size_t i = 0; i < nd; ++i) {
      const int64_t at = i < k ? idx[i] : 0;
      doff += (dlo[i] + at) * ds[i];
      soff += (slo[i] + at) * ss[i];
    }
    f(doff, soff, run);
    size_t i = k;
    while (i > 0 && ++idx[i - 1] == box[i - 1]) idx[--i] = 0;
    if (i == 0) return;
  }
}

}  // namespace

int64_t copy_box(void* dst, const Shape& dshape, const Shape& dlo, const void* src, const Shape& sshape,
                 const Shape& slo, const Shape& box, size_t item) {
  int64_t bytes = 0;
  for_runs(dshape, dlo, sshape, slo, box, [&](int64_t d, int64_t s, int64_t n) {
    std::memcpy(static_cast<char*>(dst) + d * int64_t(item),
                static_cast<const char*>(src) + s * int64_t(item), size_t(n) * item);
    bytes += n * int64_t(item);
  });
  return bytes;
}

namespace {
// out[i] = ((in0[i] op in1[i]) op in2[i]) ..., each step rounded to T as the eager add/max/min
// of run_spmd's rank-order chain (bf16 computes in float and stores rounded).
template <class T, class Op>
void reduce_run(T* out, const std::vector<const T*>& in, int64_t count, Op op) {
  using elementwise::load;
  using elementwise::store;
  for (int64_t i = 0; i < count; ++i) {
    T a = in[0][i];
    for (size_t s = 1; s < in.size(); ++s) a = store<T>(op(load(a), load(in[s][i])));
    out[i] = a;
  }
}

}  // namespace

void reduce_box(DType dtype, const std::string& reduction, void* dst, const Shape& dshape, const Shape& dlo,
                const std::vector<const void*>& srcs, const Shape& sshape, const Shape& slo,
                const Shape& box) {
  dispatch_dtype(dtype, [&]<class T>() {
    for_runs(dshape, dlo, sshape, slo, box, [&](int64_t d, int64_t s, int64_t n) {
      std::vector<const T*> in;
      for (const void* p : srcs) in.push_back(static_cast<const T*>(p) + s);
      T* out = static_cast<T*>(dst) + d;
      if constexpr (std::is_integral_v<T>) {  // bool, i32, u32: the bitwise reductions
        if (reduction == "and" || reduction == "or" || reduction == "xor") {
          const int k = reduction == "and" ? 0 : reduction == "or" ? 1 : 2;
          reduce_run(out, in, n, [k](auto a, auto b) {
            return k == 0 ? (a & b) : k == 1 ? (a | b) : (a ^ b);
          });
          return;
        }
      }
      if (reduction == "max")
        reduce_run(out, in, n, [](auto a, auto b) { return elementwise::nan_max(a, b); });
      else if (reduction == "min")
        reduce_run(out, in, n, [](auto a, auto b) { return elementwise::nan_min(a, b); });
      else if constexpr (!std::is_same_v<T, bool>)
        reduce_run(out, in, n, [](auto a, auto b) { return elementwise::wrap_add(a, b); });
      else if (in.size() == 1) std::memcpy(out, in[0], size_t(n) * sizeof(T));
      else throw TypeError("all_reduce: a sum of bool values");  // check_collective rejects it first
    });
  });
}

namespace {

// ---- counting ----------------------------------------------------------------------------------

// Records one message from rank s to rank r of `bytes` (nothing for a self-copy or no bytes).
void moved(std::vector<CollectiveCounters>& c, size_t s, size_t r, int64_t bytes) {
  if (s == r || bytes == 0) return;
  c[s].bytes_sent += bytes;
  c[s].messages += 1;
  c[r].bytes_received += bytes;
}

std::vector<const void*> sends(const Members& m, size_t k = 0) {
  std::vector<const void*> v;
  for (auto& x : m) v.push_back(x.bufs.send[k].data);
  return v;
}

// ---- the collectives -------------------------------------------------------------------------

// Whether rank r receives (no mask: every rank).
bool writes_to(const std::vector<char>* w, size_t r) { return !w || (*w)[r]; }

void all_gather(const Members& m, std::vector<CollectiveCounters>& c, const std::vector<char>* w) {
  const CollectiveOp& op = *m[0].op;
  const size_t n = m.size(), item = itemsize(op.dtype), d = size_t(op.gather_dimension);
  Shape part = op.shape;
  if (!op.tiled) part.insert(part.begin() + std::ptrdiff_t(d), 1);
  Shape out = part;
  out[d] *= int64_t(n);
  const Shape zero(part.size(), 0);
  for (size_t r = 0; r < n; ++r)
    for (size_t s = 0; s < n && writes_to(w, r); ++s) {
      Shape lo = zero;
      lo[d] = int64_t(s) * part[d];
      moved(c, s, r, copy_box(m[r].bufs.recv, out, lo, m[s].bufs.send[0].data, part, zero, part, item));
    }
}

// Two phases (the traffic model of all_reduce_pieces): rank r reduces piece r of every operand
// in rank order into its result, then every rank copies its reduced piece to the others.
void all_reduce(const Members& m, std::vector<CollectiveCounters>& c) {
  const CollectiveOp& op = *m[0].op;
  const size_t n = m.size(), item = itemsize(op.dtype);
  const Shape& S = op.shape;
  const int64_t d = all_reduce_split_dim(S, int64_t(n));
  const auto src = sends(m);
  if (d < 0) {  // rank 0: every device sends its value to the others and reduces locally
    for (size_t r = 0; r < n; ++r) {
      reduce_box(op.dtype, op.reduction, m[r].bufs.recv, S, {}, src, S, {}, {});
      for (size_t s = 0; s < n; ++s) moved(c, s, r, int64_t(item));
    }
    return;
  }
  const auto pieces = all_reduce_pieces(S, int64_t(n));
  const int64_t len = S[size_t(d)], chunk = (len + int64_t(n) - 1) / int64_t(n);
  std::vector<Shape> lo(n, Shape(S.size(), 0)), box(n, S);
  for (size_t r = 0; r < n; ++r) {
    lo[r][size_t(d)] = std::min(len, int64_t(r) * chunk);
    box[r][size_t(d)] = std::min(len, int64_t(r + 1) * chunk) - lo[r][size_t(d)];
    if (shape_size(box[r]) != pieces[r])
      throw ValueError("all_reduce: piece " + std::to_string(r) + " of " + shape_str(S) + " has " +
                       std::to_string(shape_size(box[r])) + " elements, the traffic model " +
                       std::to_string(pieces[r]));
  }
  for (size_t r = 0; r < n; ++r) {
    reduce_box(op.dtype, op.reduction, m[r].bufs.recv, S, lo[r], src, S, lo[r], box[r]);
    for (size_t s = 0; s < n; ++s) moved(c, s, r, shape_size(box[r]) * int64_t(item));
  }
  for (size_t r = 0; r < n; ++r)
    for (size_t k = 0; k < n; ++k)
      if (k != r) moved(c, r, k, copy_box(m[k].bufs.recv, S, lo[r], m[r].bufs.recv, S, lo[r], box[r], item));
}

void reduce_scatter(const Members& m, std::vector<CollectiveCounters>& c) {
  const CollectiveOp& op = *m[0].op;
  const size_t n = m.size(), item = itemsize(op.dtype), d = size_t(op.scatter_dimension);
  const Shape out = op.result_shape(int64_t(n)), zero(out.size(), 0);
  const auto src = sends(m);
  for (size_t r = 0; r < n; ++r) {
    Shape lo = zero;
    lo[d] = int64_t(r) * out[d];
    reduce_box(op.dtype, "sum", m[r].bufs.recv, out, zero, src, op.shape, lo, out);
    for (size_t s = 0; s < n; ++s) moved(c, s, r, shape_size(out) * int64_t(item));
  }
}

void all_to_all(const Members& m, std::vector<CollectiveCounters>& c, const std::vector<char>* w) {
  const CollectiveOp& op = *m[0].op;
  const size_t n = m.size(), item = itemsize(op.dtype);
  const size_t sd = size_t(op.split_dimension), cd = size_t(op.concat_dimension);
  Shape blk = op.shape;
  blk[sd] /= int64_t(n);
  const Shape out = op.result_shape(int64_t(n)), zero(out.size(), 0);
  for (size_t r = 0; r < n; ++r)
    for (size_t s = 0; s < n && writes_to(w, r); ++s) {
      Shape slo = zero, dlo = zero;
      slo[sd] = int64_t(r) * blk[sd];
      dlo[cd] = int64_t(s) * blk[cd];
      moved(c, s, r, copy_box(m[r].bufs.recv, out, dlo, m[s].bufs.send[0].data, op.shape, slo, blk, item));
    }
}

void collective_permute(const Members& m, std::vector<CollectiveCounters>& c, const std::vector<char>* w) {
  const CollectiveOp& op = *m[0].op;
  const auto& st = op.source_target_pairs;
  std::vector<bool> target(m.size(), false);
  for (size_t k = 0; k + 1 < st.size(); k += 2) target[size_t(st[k + 1])] = true;
  for (size_t r = 0; r < m.size(); ++r)
    if (!target[r] && writes_to(w, r) && m[r].bufs.recv_bytes > 0)
      std::memset(m[r].bufs.recv, 0, size_t(m[r].bufs.recv_bytes));
  for (size_t k = 0; k + 1 < st.size(); k += 2) {
    const size_t s = size_t(st[k]), r = size_t(st[k + 1]);
    if (!writes_to(w, r)) continue;
    const int64_t b = m[s].bufs.send[0].bytes;
    if (b > 0) std::memcpy(m[r].bufs.recv, m[s].bufs.send[0].data, size_t(b));
    moved(c, s, r, b);
  }
}

int64_t row_bytes(const CollectiveOp& op) {
  return int64_t(itemsize(op.dtype)) * shape_size(Shape(op.output_shape.begin() + 1, op.output_shape.end()));
}

// Receiver j keeps its `output` operand but for rows [output_offsets_i[j], +send_sizes_i[j])
// from each sender i, read from i's input at rows input_offsets_i[j].
void ragged_all_to_all(const Members& m, std::vector<CollectiveCounters>& c, const std::vector<char>* w) {
  const size_t n = m.size();
  const int64_t rb = row_bytes(*m[0].op);
  for (size_t j = 0; j < n; ++j) {
    if (!writes_to(w, j)) continue;
    const ConstBufferRef& base = m[j].bufs.send[1];
    if (base.data != m[j].bufs.recv && base.bytes > 0)
      std::memcpy(m[j].bufs.recv, base.data, size_t(base.bytes));
    for (size_t i = 0; i < n; ++i) {
      const CollectiveOp& oi = *m[i].op;
      const int64_t rows = oi.send_sizes[j], src = oi.input_offsets[j], dst = oi.output_offsets[j];
      if (rows > 0)
        std::memcpy(static_cast<char*>(m[j].bufs.recv) + dst * rb,
                    static_cast<const char*>(m[i].bufs.send[0].data) + src * rb, size_t(rows * rb));
      moved(c, i, j, rows * rb);
    }
  }
}

// ---- checks ------------------------------------------------------------------------------------

void check_agreement(const Members& m, const std::vector<int>& group) {
  std::string diff;
  for (size_t r = 1; r < m.size(); ++r)
    if (!m[r].op->same_collective(*m[0].op))
      diff += "; device " + std::to_string(m[r].device) + " has " + m[r].op->str();
  if (!diff.empty())
    throw ValueError("collective " + where(*m[0].op, group) + ": the participants disagree: device " +
                     std::to_string(m[0].device) + " has " + m[0].op->str() + diff);
}

void check_dim(const CollectiveOp& op, const std::vector<int>& group, const char* what, int64_t d,
               int64_t bound, int64_t divisor) {
  if (d < 0 || d >= bound)
    throw ValueError("collective " + where(op, group) + ": " + what + "=" + std::to_string(d) +
                     " is out of range for an operand of shape " + shape_str(op.shape));
  if (divisor > 1 && op.shape[size_t(d)] % divisor != 0)
    throw ValueError("collective " + where(op, group) + ": " + what + "=" + std::to_string(d) + " of shape " +
                     shape_str(op.shape) + " is not divisible by the group size " + std::to_string(divisor));
}

void check_params(const CollectiveOp& op, const std::vector<int>& group) {
  const int64_t n = int64_t(group.size()), nd = int64_t(op.shape.size());
  const std::string w = "collective " + where(op, group) + ": ";
  if (op.dtype == DType::float0 || op.dtype == DType::token)
    throw TypeError(w + "dtype " + dtype_name(op.dtype) + " holds no values to communicate");
  for (int64_t s : op.shape)
    if (s < 0) throw ValueError(w + "negative dim in shape " + shape_str(op.shape));
  switch (op.kind) {
    case CollectiveKind::all_gather:
      check_dim(op, group, "gather_dimension", op.gather_dimension, nd + (op.tiled ? 0 : 1), 1);
      break;
    case CollectiveKind::all_reduce:
      if (op.reduction != "sum" && op.reduction != "max" && op.reduction != "min" && op.reduction != "and" &&
          op.reduction != "or" && op.reduction != "xor")
        throw ValueError(w + "reduction must be sum, max, min, and, or or xor, got '" + op.reduction + "'");
      if ((op.reduction == "and" || op.reduction == "or" || op.reduction == "xor") &&
          (op.dtype != DType::bool_ && !is_integer(op.dtype)))
        throw TypeError(w + "reduction " + op.reduction + " of dtype " + dtype_name(op.dtype));
      if (op.reduction == "sum" && op.dtype == DType::bool_ && n > 1)
        throw TypeError(w + "a sum of bool values");
      break;
    case CollectiveKind::reduce_scatter:
      if (op.dtype == DType::bool_ && n > 1) throw TypeError(w + "a sum of bool values");
      check_dim(op, group, "scatter_dimension", op.scatter_dimension, nd, n);
      break;
    case CollectiveKind::all_to_all:
      check_dim(op, group, "split_dimension", op.split_dimension, nd, n);
      check_dim(op, group, "concat_dimension", op.concat_dimension, nd, 1);
      break;
    case CollectiveKind::collective_permute: {
      const auto& st = op.source_target_pairs;
      if (st.size() % 2)
        throw ValueError(w + "source_target_pairs has an odd count " + std::to_string(st.size()));
      std::set<int64_t> src, dst;
      for (size_t k = 0; k < st.size(); k += 2) {
        if (st[k] < 0 || st[k] >= n || st[k + 1] < 0 || st[k + 1] >= n)
          throw ValueError(w + "pair (" + std::to_string(st[k]) + ", " + std::to_string(st[k + 1]) +
                           ") names a rank outside [0, " + std::to_string(n) + ")");
        if (!src.insert(st[k]).second || !dst.insert(st[k + 1]).second)
          throw ValueError(w + "a rank is repeated as a source or a target in source_target_pairs");
      }
      break;
    }
    case CollectiveKind::ragged_all_to_all:
      if (nd < 1 || op.output_shape.size() != op.shape.size() ||
          !std::equal(op.shape.begin() + 1, op.shape.end(), op.output_shape.begin() + 1))
        throw ValueError(w + "input " + shape_str(op.shape) + " and output " + shape_str(op.output_shape) +
                         " must share every dim after dim 0 (rank >= 1)");
      break;
  }
}

void check_ragged_tables(const CollectiveMember& x, const std::vector<int>& group) {
  const CollectiveOp& op = *x.op;
  for (auto* t : {&op.input_offsets, &op.send_sizes, &op.output_offsets, &op.recv_sizes})
    if (t->size() != group.size())
      throw ValueError("collective " + where(op, group) + ": device " + std::to_string(x.device) +
                       "'s index tables must have one entry per rank (" + std::to_string(group.size()) +
                       "), got " + std::to_string(t->size()));
}

}  // namespace

// run_spmd's ragged checks, in its order (receiver j, then sender i) and with its messages.
void check_ragged_sizes(const std::vector<const CollectiveOp*>& ops, const std::vector<int>& group) {
  (void)group;
  const size_t n = ops.size();
  for (size_t j = 0; j < n; ++j)
    for (size_t i = 0; i < n; ++i) {
      const CollectiveOp& oi = *ops[i];
      const int64_t rows = oi.send_sizes[j], src = oi.input_offsets[j], dst = oi.output_offsets[j];
      const int64_t expect = ops[j]->recv_sizes[i];
      if (rows != expect)
        throw ValueError("ragged_all_to_all: rank " + std::to_string(i) + " sends " + std::to_string(rows) +
                         " rows to rank " + std::to_string(j) + ", whose recv_sizes expects " +
                         std::to_string(expect));
      if (rows < 0 || src < 0 || dst < 0 || src + rows > oi.shape[0] || dst + rows > oi.output_shape[0])
        throw ValueError("ragged_all_to_all: rank " + std::to_string(i) + " -> rank " + std::to_string(j) +
                         ": rows [" + std::to_string(src) + ", " + std::to_string(src + rows) +
                         ") of input " + shape_str(oi.shape) + " to rows [" + std::to_string(dst) + ", " +
                         std::to_string(dst + rows) + ") of output " + shape_str(oi.output_shape) +
                         " fall outside the buffers");
    }
}

namespace {

void check_ragged(const Members& m, const std::vector<int>& group) {
  for (auto& x : m) check_ragged_tables(x, group);
  std::vector<const CollectiveOp*> ops;
  for (auto& x : m) ops.push_back(x.op);
  check_ragged_sizes(ops, group);
}

bool overlap(const void* a, int64_t na, const void* b, int64_t nb) {
  if (na <= 0 || nb <= 0) return false;
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + uintptr_t(nb) && pb < pa + uintptr_t(na);
}

void check_buffers(const Members& m, const std::vector<int>& group) {
  const CollectiveOp& op = *m[0].op;
  const int64_t item = int64_t(itemsize(op.dtype));
  const bool ragged = op.kind == CollectiveKind::ragged_all_to_all;
  const std::vector<int64_t> want_send = ragged ? std::vector<int64_t>{shape_size(op.shape) * item,
                                                                       shape_size(op.output_shape) * item}
                                                : std::vector<int64_t>{shape_size(op.shape) * item};
  const int64_t want_recv = shape_size(op.result_shape(int64_t(group.size()))) * item;
  for (auto& x : m) {
    const std::string w = "collective " + where(op, group) + ": device " + std::to_string(x.device) + "'s ";
    if (x.bufs.send.size() != want_send.size())
      throw ValueError(w + "buffers hold " + std::to_string(x.bufs.send.size()) +
                       " send buffers, the collective takes " + std::to_string(want_send.size()));
    for (size_t k = 0; k < want_send.size(); ++k)
      if (x.bufs.send[k].bytes != want_send[k] || (want_send[k] > 0 && !x.bufs.send[k].data))
        throw ValueError(w + "send buffer " + std::to_string(k) + " has " +
                         std::to_string(x.bufs.send[k].bytes) + " bytes" +
                         (x.bufs.send[k].data ? "" : " at null") + ", the operand needs " +
                         std::to_string(want_send[k]));
    if (x.bufs.recv_bytes != want_recv || (want_recv > 0 && !x.bufs.recv))
      throw ValueError(w + "recv buffer has " + std::to_string(x.bufs.recv_bytes) + " bytes" +
                       (x.bufs.recv ? "" : " at null") + ", the result " +
                       shape_str(op.result_shape(int64_t(group.size()))) + " needs " +
                       std::to_string(want_recv));
  }
  for (size_t r = 0; r < m.size(); ++r) {
    const auto& b = m[r].bufs;
    for (size_t s = 0; s < m.size(); ++s) {
      for (size_t k = 0; k < m[s].bufs.send.size(); ++k) {
        const bool in_place = ragged && s == r && k == 1 && m[s].bufs.send[k].data == b.recv;
        if (!in_place && overlap(b.recv, b.recv_bytes, m[s].bufs.send[k].data, m[s].bufs.send[k].bytes))
          throw ValueError("collective " + where(op, group) + ": device " + std::to_string(m[r].device) +
                           "'s recv buffer overlaps send buffer " + std::to_string(k) + " of device " +
                           std::to_string(m[s].device));
      }
      if (s != r && overlap(b.recv, b.recv_bytes, m[s].bufs.recv, m[s].bufs.recv_bytes))
        throw ValueError("collective " + where(op, group) + ": the recv buffers of devices " +
                         std::to_string(m[r].device) + " and " + std::to_string(m[s].device) + " overlap");
    }
  }
}

}  // namespace

void check_collective(const Members& members, const std::vector<int>& group) {
  check_agreement(members, group);
  check_params(*members[0].op, group);
  check_buffers(members, group);
  if (members[0].op->kind == CollectiveKind::ragged_all_to_all) check_ragged(members, group);
}

void check_collective_part(const Members& part, const std::vector<int>& group) {
  check_agreement(part, group);
  check_params(*part[0].op, group);
  check_buffers(part, group);
  if (part[0].op->kind == CollectiveKind::ragged_all_to_all)
    for (auto& x : part) check_ragged_tables(x, group);
}

void perform_collective(const Members& members, std::vector<CollectiveCounters>& counted,
                        const std::vector<char>* writes) {
  counted.assign(members.size(), CollectiveCounters{});
  const CollectiveKind k = members[0].op->kind;
  if (writes && (k == CollectiveKind::all_reduce || k == CollectiveKind::reduce_scatter))
    throw ValueError(std::string("perform_collective: ") + collective_kind_name(k) +
                     " reads every rank's result; it takes no receiver mask");
  switch (k) {
    case CollectiveKind::all_gather: return all_gather(members, counted, writes);
    case CollectiveKind::all_reduce: return all_reduce(members, counted);
    case CollectiveKind::reduce_scatter: return reduce_scatter(members, counted);
    case CollectiveKind::all_to_all: return all_to_all(members, counted, writes);
    case CollectiveKind::collective_permute: return collective_permute(members, counted, writes);
    case CollectiveKind::ragged_all_to_all: return ragged_all_to_all(members, counted, writes);
  }
}

}  // namespace minijax::detail
