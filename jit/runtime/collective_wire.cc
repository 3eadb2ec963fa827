// minijax collective wire layout: payload sizes, the local partial reductions, packing one
// process pair's message and writing the local results from what the other processes sent.
#include "jit/runtime/collective_wire.h"

#include <algorithm>
#include <cstring>

#include "core/errors.h"

namespace minijax::detail {
namespace {

int64_t operand_bytes(const CollectiveOp& op) { return shape_size(op.shape) * int64_t(itemsize(op.dtype)); }

int64_t table_bytes(size_t n) { return int64_t(4 * n * sizeof(int32_t)); }

// Records one message from local rank s to local rank r (nothing for a self-copy or no bytes).
void moved(std::vector<CollectiveCounters>& c, size_t s, size_t r, int64_t bytes) {
  if (s == r || bytes == 0) return;
  c[s].bytes_sent += bytes;
  c[s].messages += 1;
  c[r].bytes_received += bytes;
}

// The shape of one of the n blocks an operand splits into along `dim`.
Shape block_of(const Shape& shape, int64_t dim, size_t n) {
  Shape b = shape;
  b[size_t(dim)] /= int64_t(n);
  return b;
}

Shape at_dim(size_t rank, int64_t dim, int64_t v) {
  Shape lo(rank, 0);
  lo[size_t(dim)] = v;
  return lo;
}

std::vector<char> writes_mask(const WireCollective& w) {
  std::vector<char> m(w.group.size(), 0);
  for (size_t r : w.split.ranks[w.split.me]) m[r] = 1;
  return m;
}

size_t pairs_between(const CollectiveOp& op, const ProcessSplit& s, size_t from, size_t to) {
  size_t k = 0;
  const auto& st = op.source_target_pairs;
  auto in = [&](size_t i, int64_t r) {
    return std::find(s.ranks[i].begin(), s.ranks[i].end(), size_t(r)) != s.ranks[i].end();
  };
  for (size_t i = 0; i + 1 < st.size(); i += 2)
    if (in(from, st[i]) && in(to, st[i + 1])) ++k;
  return k;
}

}  // namespace

int64_t wire_payload_bytes(const CollectiveOp& op, const ProcessSplit& s, size_t from, size_t to) {
  size_t n = 0;
  for (auto& r : s.ranks) n += r.size();
  const int64_t S = operand_bytes(op), nf = int64_t(s.ranks[from].size()), nt = int64_t(s.ranks[to].size());
  switch (op.kind) {
    case CollectiveKind::all_gather: return S * nf;
    case CollectiveKind::all_reduce: return S;
    case CollectiveKind::reduce_scatter: return S / int64_t(n) * nt;
    case CollectiveKind::all_to_all: return S / int64_t(n) * nf * nt;
    case CollectiveKind::collective_permute: return S * int64_t(pairs_between(op, s, from, to));
    case CollectiveKind::ragged_all_to_all: return (S + table_bytes(n)) * nf;
  }
  return 0;
}

void reduce_locally(WireCollective& w) {
  const CollectiveOp& op = *w.op;
  const auto& mine = w.split.ranks[w.split.me];
  w.counted.assign(w.group.size(), CollectiveCounters{});
  if (op.kind != CollectiveKind::all_reduce && op.kind != CollectiveKind::reduce_scatter) return;
  const int64_t S = operand_bytes(op);
  w.partial.assign(size_t(S), 0);
  std::vector<const void*> srcs;
  for (size_t r : mine) {
    srcs.push_back(w.members[r].bufs.send[0].data);
    moved(w.counted, r, mine[0], S);
  }
  if (op.kind == CollectiveKind::all_reduce) {
    reduce_box(op.dtype, op.reduction, w.partial.data(), op.shape, Shape(op.shape.size(), 0), srcs, op.shape,
               Shape(op.shape.size(), 0), op.shape);
    return;
  }
  const size_t n = w.group.size(), nd = op.shape.size();
  const Shape piece = block_of(op.shape, op.scatter_dimension, n);
  const int64_t P = S / int64_t(n);
  for (size_t t = 0; t < n; ++t)
    reduce_box(op.dtype, "sum", w.partial.data() + int64_t(t) * P, piece, Shape(nd, 0), srcs, op.shape,
               at_dim(nd, op.scatter_dimension, int64_t(t) * piece[size_t(op.scatter_dimension)]), piece);
}

void pack_payload(WireCollective& w, size_t to, char* out) {
  const CollectiveOp& op = *w.op;
  const ProcessSplit& s = w.split;
  const auto& mine = s.ranks[s.me];
  const auto& theirs = s.ranks[to];
  const size_t n = w.group.size(), nd = op.shape.size(), item = itemsize(op.dtype);
  const int64_t S = operand_bytes(op);
  auto sent = [&](size_t r, int64_t b) {
    if (b == 0) return;
    w.counted[r].bytes_sent += b;
    w.counted[r].messages += 1;
  };
  switch (op.kind) {
    case CollectiveKind::all_gather:
      for (size_t r : mine) {
        if (S) std::memcpy(out, w.members[r].bufs.send[0].data, size_t(S));
        out += S;
        sent(r, S);
      }
      return;
    case CollectiveKind::all_reduce:
      if (S) std::memcpy(out, w.partial.data(), size_t(S));
      sent(mine[0], S);
      return;
    case CollectiveKind::reduce_scatter: {
      const int64_t P = S / int64_t(n);
      for (size_t t : theirs) {
        if (P) std::memcpy(out, w.partial.data() + int64_t(t) * P, size_t(P));
        out += P;
      }
      sent(mine[0], P * int64_t(theirs.size()));
      return;
    }
    case CollectiveKind::all_to_all: {
      const Shape blk = block_of(op.shape, op.split_dimension, n);
      const int64_t B = shape_size(blk) * int64_t(item);
      for (size_t r : mine) {
        for (size_t t : theirs) {
          copy_box(out, blk, Shape(nd, 0), w.members[r].bufs.send[0].data, op.shape,
                   at_dim(nd, op.split_dimension, int64_t(t) * blk[size_t(op.split_dimension)]), blk, item);
          out += B;
        }
        sent(r, B * int64_t(theirs.size()));
      }
      return;
    }
    case CollectiveKind::collective_permute: {
      const auto& st = op.source_target_pairs;
      for (size_t i = 0; i + 1 < st.size(); i += 2) {
        const size_t src = size_t(st[i]), dst = size_t(st[i + 1]);
        if (std::find(mine.begin(), mine.end(), src) == mine.end() ||
            std::find(theirs.begin(), theirs.end(), dst) == theirs.end())
          continue;
        if (S) std::memcpy(out, w.members[src].bufs.send[0].data, size_t(S));
        out += S;
        sent(src, S);
      }
      return;
    }
    case CollectiveKind::ragged_all_to_all:
      for (size_t r : mine) {
        const CollectiveOp& o = *w.members[r].op;
        if (S) std::memcpy(out, w.members[r].bufs.send[0].data, size_t(S));
        out += S;
        for (auto* t : {&o.input_offsets, &o.send_sizes, &o.output_offsets, &o.recv_sizes}) {
          std::memcpy(out, t->data(), n * sizeof(int32_t));
          out += n * sizeof(int32_t);
        }
        sent(r, S + table_bytes(n));
      }
      return;
  }
}

namespace {

// The reductions: every local result from the processes' partials, combined in procs order.
void finish_reduction(WireCollective& w, const std::vector<const char*>& incoming) {
  const CollectiveOp& op = *w.op;
  const ProcessSplit& s = w.split;
  const auto& mine = s.ranks[s.me];
  const size_t n = w.group.size(), nd = op.shape.size(), leader = mine[0];
  const int64_t S = operand_bytes(op);
  std::vector<const void*> parts(s.procs.size());
  if (op.kind == CollectiveKind::all_reduce) {
    for (size_t i = 0; i < parts.size(); ++i) {
      parts[i] = i == s.me ? static_cast<const void*>(w.partial.data()) : incoming[i];
      if (i != s.me) w.counted[leader].bytes_received += S;
    }
    void* out = w.members[leader].bufs.recv;
    reduce_box(op.dtype, op.reduction, out, op.shape, Shape(nd, 0), parts, op.shape, Shape(nd, 0), op.shape);
    for (size_t r : mine)
      if (r != leader) {
        if (S) std::memcpy(w.members[r].bufs.recv, out, size_t(S));
        moved(w.counted, leader, r, S);
      }
    return;
  }
  const int64_t P = S / int64_t(n);
  const Shape piece = block_of(op.shape, op.scatter_dimension, n);
  for (size_t k = 0; k < mine.size(); ++k) {
    const size_t t = mine[k];
    for (size_t i = 0; i < parts.size(); ++i) {
      parts[i] = i == s.me ? static_cast<const void*>(w.partial.data() + int64_t(t) * P)
                           : static_cast<const void*>(incoming[i] + int64_t(k) * P);
      if (i != s.me) w.counted[leader].bytes_received += P;
    }
    reduce_box(op.dtype, "sum", w.members[t].bufs.recv, piece, Shape(nd, 0), parts, piece, Shape(nd, 0),
               piece);
    moved(w.counted, leader, t, P);
  }
}

// all_to_all: local pairs straight between the local buffers, remote blocks from the payloads.
void finish_all_to_all(WireCollective& w, const std::vector<const char*>& incoming) {
  const CollectiveOp& op = *w.op;
  const ProcessSplit& s = w.split;
  const auto& mine = s.ranks[s.me];
  const size_t n = w.group.size(), nd = op.shape.size(), item = itemsize(op.dtype);
  const size_t sd = size_t(op.split_dimension), cd = size_t(op.concat_dimension);
  const Shape blk = block_of(op.shape, op.split_dimension, n), out = op.result_shape(int64_t(n));
  const int64_t B = shape_size(blk) * int64_t(item);
  for (size_t r : mine)
    for (size_t src : mine)
      moved(w.counted, src, r,
            copy_box(w.members[r].bufs.recv, out, at_dim(nd, int64_t(cd), int64_t(src) * blk[cd]),
                     w.members[src].bufs.send[0].data, op.shape,
                     at_dim(nd, int64_t(sd), int64_t(r) * blk[sd]), blk, item));
  for (size_t i = 0; i < s.procs.size(); ++i) {
    if (i == s.me) continue;
    const char* in = incoming[i];
    for (size_t src : s.ranks[i])
      for (size_t k = 0; k < mine.size(); ++k, in += B)
        w.counted[mine[k]].bytes_received += copy_box(w.members[mine[k]].bufs.recv, out,
                                                      at_dim(nd, int64_t(cd), int64_t(src) * blk[cd]), in,
                                                      blk, Shape(nd, 0), blk, item);
  }
}

}  // namespace

void finish_collective(WireCollective& w, const std::vector<const char*>& incoming) {
  const CollectiveOp& op = *w.op;
  const ProcessSplit& s = w.split;
  const size_t n = w.group.size();
  const int64_t S = operand_bytes(op);
  if (op.kind == CollectiveKind::all_reduce || op.kind == CollectiveKind::reduce_scatter)
    return finish_reduction(w, incoming);
  if (op.kind == CollectiveKind::all_to_all) return finish_all_to_all(w, incoming);
  // The others: the remote members' operands, as far as the local results read them, then
  // perform_collective for the local receivers.
  std::vector<CollectiveMember> all = w.members;
  std::vector<CollectiveOp> remote_ops(n);
  for (size_t i = 0; i < s.procs.size(); ++i) {
    if (i == s.me) continue;
    const char* in = incoming[i];
    const auto& theirs = s.ranks[i];
    std::vector<char> has(n, 0);
    if (op.kind == CollectiveKind::collective_permute) {
      const auto& st = op.source_target_pairs;
      const auto& mine = s.ranks[s.me];
      for (size_t k = 0; k + 1 < st.size(); k += 2)
        if (std::find(theirs.begin(), theirs.end(), size_t(st[k])) != theirs.end() &&
            std::find(mine.begin(), mine.end(), size_t(st[k + 1])) != mine.end()) {
          all[size_t(st[k])].bufs.send = {{in, S}};
          in += S;
        }
    }
    for (size_t r : theirs) {
      all[r].device = w.group[r];
      all[r].op = w.op;
      if (op.kind == CollectiveKind::all_gather) {
        all[r].bufs.send = {{in, S}};
        in += S;
      } else if (op.kind == CollectiveKind::ragged_all_to_all) {
        CollectiveOp& o = remote_ops[r];
        o = op;
        all[r].bufs.send = {{in, S}, {nullptr, 0}};
        in += S;
        for (auto* t : {&o.input_offsets, &o.send_sizes, &o.output_offsets, &o.recv_sizes}) {
          t->assign(n, 0);
          std::memcpy(t->data(), in, n * sizeof(int32_t));
          in += n * sizeof(int32_t);
        }
        all[r].op = &o;
      } else if (all[r].bufs.send.empty()) {
        all[r].bufs.send = {{nullptr, S}};
      }
    }
  }
  if (op.kind == CollectiveKind::ragged_all_to_all) {
    std::vector<const CollectiveOp*> ops;
    for (auto& m : all) ops.push_back(m.op);
    check_ragged_sizes(ops, w.group);
  }
  const std::vector<char> mask = writes_mask(w);
  std::vector<CollectiveCounters> c;
  perform_collective(all, c, &mask);
  for (size_t r = 0; r < n; ++r)
    if (mask[r]) {
      w.counted[r].bytes_sent += c[r].bytes_sent;
      w.counted[r].messages += c[r].messages;
      w.counted[r].bytes_received += c[r].bytes_received;
    }
}

}  // namespace minijax::detail
