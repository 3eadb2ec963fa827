// minijax ragged reshard lowering: per-device pack/unpack and offset tables from the plan's
// messages, built as constants of one closed_call body shared by every device.
#include "sharding/lower_reshard_ragged.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/collectives.h"
#include "core/errors.h"
#include "core/lax.h"
#include "core/pjit.h"
#include "core/staging.h"
#include "core/trace.h"
#include "sharding/plan_reshard.h"

namespace minijax {
namespace {

// Row-major flat offset of global index `idx` inside box `holder`.
int64_t flat_in(const Box& holder, const std::vector<int64_t>& idx) {
  int64_t off = 0;
  for (size_t i = 0; i < idx.size(); ++i) off = off * (holder.hi[i] - holder.lo[i]) + (idx[i] - holder.lo[i]);
  return off;
}

// Calls f(idx) for every index of `box`, row-major.
template <class F>
void for_each_index(const Box& box, F&& f) {
  if (box.volume() == 0) return;
  std::vector<int64_t> idx = box.lo;
  while (true) {
    f(idx);
    int64_t d = int64_t(idx.size()) - 1;
    while (d >= 0) {
      if (++idx[size_t(d)] < box.hi[size_t(d)]) break;
      idx[size_t(d)] = box.lo[size_t(d)];
      --d;
    }
    if (d < 0) return;
  }
}

Array table(const std::vector<std::vector<int64_t>>& rows, int64_t width) {
  Array t = Array::allocate(ShapedArray{{int64_t(rows.size()), width}, DType::i32});
  int32_t* p = t.mutable_data<int32_t>();
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t c = 0; c < width; ++c)
      p[int64_t(r) * width + c] = c < int64_t(rows[r].size()) ? int32_t(rows[r][size_t(c)]) : 0;
  return t;
}

}  // namespace

Array lower_reshard_ragged(const Array& x, const Sharding& from, const Sharding& to,
                           const Shape& global, const Mesh& mesh, std::source_location loc) {
  auto fail = [&](const std::string& why) {
    return ShardingError("ragged reshard " + from.str() + " -> " + to.str() + " of shape " +
                             shape_str(global) + " on " + mesh.str() + ": " + why,
                         loc);
  };
  if (!from.unreduced.empty() || !to.unreduced.empty()) throw fail("partial sums are reduced first");
  ReshardPlan plan = plan_reshard(from, to, ShapedArray{global, x.dtype()}, loc);
  const size_t n = mesh.num_devices();
  const auto& A = plan.src_boxes;
  const auto& B = plan.dst_boxes;
  for (size_t d = 0; d < n; ++d)
    if (A[d].volume() != A[0].volume() || B[d].volume() != B[0].volume())
      throw fail("uneven shards (the SPMD program has one local shape per value)");
  Shape to_local(global.size());
  for (size_t i = 0; i < global.size(); ++i) to_local[i] = B[0].hi[i] - B[0].lo[i];
  const AxisNames all(mesh.axis_names.begin(), mesh.axis_names.end());
  const ReshardStep& step = plan.steps.at(0);

  // A collective_permute: source and target shards of one shape, and every device receives its
  // whole target shard from one sender, or neither receives nor sends (it keeps its shard: a
  // (d, d) pair, which moves nothing).
  bool permute = step.kind == ReshardKind::collective_permute && x.shape() == to_local;
  for (size_t d = 0; d < n; ++d)
    permute = permute && (plan.messages_received[d] == 1 ||
                          (plan.messages_received[d] == 0 && plan.messages_sent[d] == 0));
  if (permute) {
    std::vector<int64_t> pairs;
    for (const auto& m : step.messages) pairs.insert(pairs.end(), {int64_t(m.sender), int64_t(m.receiver)});
    for (size_t d = 0; d < n; ++d)
      if (plan.messages_received[d] == 0) pairs.insert(pairs.end(), {int64_t(d), int64_t(d)});
    return lax::collective_permute(x, all, int64_t(n), pairs, loc);
  }

  // Transfers per device: the plan's messages plus each device's own A(d) ∩ B(d).
  struct T {
    size_t sender, receiver;
    Box box;
  };
  std::vector<T> ts;
  for (size_t d = 0; d < n; ++d) {
    Box own = intersect(A[d], B[d]);
    if (own.volume() > 0) ts.push_back({d, d, own});
  }
  for (const auto& m : step.messages) ts.push_back({m.sender, m.receiver, m.box});
  const int64_t e_in = A[0].volume(), e_out = B[0].volume();
  std::vector<std::vector<int64_t>> in_off(n, std::vector<int64_t>(n, 0)), send(in_off), out_off(in_off),
      recv(in_off), pack(n), unpack(n, std::vector<int64_t>(size_t(e_out), 0));
  // Send side: by receiver; receive side: by sender.
  std::sort(ts.begin(), ts.end(), [](const T& a, const T& b) {
    return a.sender != b.sender ? a.sender < b.sender : a.receiver < b.receiver;
  });
  for (const T& t : ts) {
    in_off[t.sender][t.receiver] = int64_t(pack[t.sender].size());
    send[t.sender][t.receiver] = t.box.volume();
    for_each_index(t.box, [&](const std::vector<int64_t>& idx) { pack[t.sender].push_back(flat_in(A[t.sender], idx)); });
  }
  std::vector<int64_t> filled(n, 0);
  std::sort(ts.begin(), ts.end(), [](const T& a, const T& b) {
    return a.receiver != b.receiver ? a.receiver < b.receiver : a.sender < b.sender;
  });
  for (const T& t : ts) {
    out_off[t.sender][t.receiver] = filled[t.receiver];
    recv[t.receiver][t.sender] = t.box.volume();
    for_each_index(t.box, [&](const std::vector<int64_t>& idx) {
      unpack[t.receiver][size_t(flat_in(B[t.receiver], idx))] = filled[t.receiver]++;
    });
  }
  for (size_t d = 0; d < n; ++d)
    if (filled[d] != e_out) throw fail("internal: device " + std::to_string(d) + " receives " +
                                       std::to_string(filled[d]) + " of " + std::to_string(e_out) + " elements");
  int64_t width = 1;
  for (auto& p : pack) width = std::max<int64_t>(width, int64_t(p.size()));
  const Array pack_t = table(pack, width), unpack_t = table(unpack, std::max<int64_t>(e_out, 1)),
              in_off_t = table(in_off, int64_t(n)), send_t = table(send, int64_t(n)),
              out_off_t = table(out_off, int64_t(n)), recv_t = table(recv, int64_t(n));

  const ShapedArray in_aval = x.aval();
  FlatFn body = [&](const std::vector<Array>& args) {
    const Array p = lax::axis_index(all, loc);
    const Array zero = lax::scalar(0, DType::i32);
    auto row = [&](const Array& t) {
      const int64_t w = t.shape()[1];
      return lax::reshape(lax::dynamic_slice(t, {p, zero}, {1, w}, loc), {w}, loc);
    };
    Array flat = lax::reshape(args[0], {e_in}, loc);
    Array packed = lax::gather(flat, row(pack_t), loc);
    Array out0 = lax::broadcast_in_dim(lax::scalar(0, x.dtype()), {e_out}, {}, loc);
    Array got = lax::ragged_all_to_all(packed, out0, row(in_off_t), row(send_t), row(out_off_t), row(recv_t), all,
                                       int64_t(n), loc);
    Array res = lax::gather(got, row(unpack_t), loc);
    return std::vector<Array>{lax::reshape(res, to_local, loc)};
  };
  ClosedJaxpr cj = trace_to_jaxpr(body, {in_aval}, loc);
  return bind_call(closed_call_p(), std::make_shared<const ClosedJaxpr>(std::move(cj)), "reshard_ragged", {x}, loc)
      .at(0);
}

}  // namespace minijax
