// minijax resharding planner: source replica groups, sender assignment, collective naming,
// plan text and the eager reference executor (per-device shards, never the global array).
#include "sharding/plan_reshard.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>
#include <tuple>
#include <type_traits>

#include "core/errors.h"
#include "sharding/plan_reshard_internal.h"

namespace minijax {

const char* reshard_kind_name(ReshardKind k) {
  switch (k) {
    case ReshardKind::local_slice: return "local_slice";
    case ReshardKind::all_gather: return "all_gather";
    case ReshardKind::all_to_all: return "all_to_all";
    case ReshardKind::collective_permute: return "collective_permute";
    case ReshardKind::ragged_all_to_all: return "ragged_all_to_all";
    case ReshardKind::reduce_scatter: return "reduce_scatter";
    case ReshardKind::all_reduce: return "all_reduce";
  }
  return "?";
}

namespace {

std::string describe(const Sharding& src, const Sharding& dst, const ShapedArray& aval) {
  std::string mesh = src.mesh ? src.mesh->str() : std::string("<no mesh>");
  std::string dmesh = dst.mesh ? dst.mesh->str() : std::string("<no mesh>");
  return "reshard of " + aval.str() + " from " + src.str() + " on " + mesh + " to " + dst.str() +
         " on " + dmesh;
}

bool is_prefix(const std::vector<AxisRef>& pre, const std::vector<AxisRef>& full) {
  return pre.size() <= full.size() && std::equal(pre.begin(), pre.end(), full.begin());
}

/// all_gather over S: every dst dim is its src dim minus a minor suffix; S = removed axes.
bool match_all_gather(const Sharding& src, const Sharding& dst, ReshardStep& step) {
  std::vector<AxisRef> removed;
  for (size_t i = 0; i < src.dims.size(); ++i) {
    const auto& a = src.dims[i].axes;
    const auto& b = dst.dims[i].axes;
    if (!is_prefix(b, a)) return false;
    removed.insert(removed.end(), a.begin() + b.size(), a.end());
  }
  if (removed.empty()) return false;
  step.axes = removed;
  return true;
}

/// all_to_all: per dim the axes after the common prefix are released (src) or acquired (dst),
/// no dim does both, and the released and acquired axes are the same non-empty set. With one
/// dim losing and one gaining, split_dim/concat_dim name them; else both are -1.
bool match_all_to_all(const Sharding& src, const Sharding& dst, ReshardStep& step) {
  const size_t rank = src.dims.size();
  std::vector<AxisRef> released, acquired;
  int64_t losing = -1, gaining = -1, n_losing = 0, n_gaining = 0;
  for (size_t d = 0; d < rank; ++d) {
    const auto& a = src.dims[d].axes;
    const auto& b = dst.dims[d].axes;
    size_t k = 0;
    while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
    if (k < a.size() && k < b.size()) return false;
    if (k < a.size()) losing = int64_t(d), ++n_losing;
    if (k < b.size()) gaining = int64_t(d), ++n_gaining;
    released.insert(released.end(), a.begin() + long(k), a.end());
    acquired.insert(acquired.end(), b.begin() + long(k), b.end());
  }
  if (released.empty() || released.size() != acquired.size()) return false;
  for (const auto& x : acquired)
    if (std::find(released.begin(), released.end(), x) == released.end()) return false;
  step.axes = acquired;
  step.split_dim = n_gaining == 1 ? gaining : -1;
  step.concat_dim = n_losing == 1 ? losing : -1;
  return true;
}

struct Item {
  size_t receiver;
  Box box;
  int64_t v;
};

enum class Rule { nearest_fit, most_room, fewest_sent };

/// Assigns each item a sender among `members`; false when a rule that must fit cannot.
bool assign(Rule rule, const std::vector<Item>& items, const std::vector<size_t>& members,
            const std::vector<int64_t>& capacity,
            const std::vector<std::vector<int64_t>>& coords, std::vector<size_t>& senders) {
  std::vector<int64_t> load(members.size(), 0);
  senders.assign(items.size(), 0);
  for (size_t k = 0; k < items.size(); ++k) {
    const Item& it = items[k];
    int64_t best = -1;
    std::tuple<int64_t, int64_t, int64_t, size_t> best_key{};
    for (size_t m = 0; m < members.size(); ++m) {
      const size_t s = members[m];
      const bool fits = load[m] + it.v <= capacity[s];
      if (rule != Rule::fewest_sent && !fits) continue;
      int64_t dist = 0;
      for (size_t a = 0; a < coords[s].size(); ++a) dist += coords[s][a] != coords[it.receiver][a];
      std::tuple<int64_t, int64_t, int64_t, size_t> key;
      if (rule == Rule::nearest_fit)
        key = {dist, load[m], 0, s};
      else if (rule == Rule::most_room)
        key = {load[m] - capacity[s], dist, 0, s};
      else
        key = {load[m], capacity[s] > 0 ? 0 : 1, dist, s};
      if (best < 0 || key < best_key) {
        best = int64_t(m);
        best_key = key;
      }
    }
    if (best < 0) return false;
    load[size_t(best)] += it.v;
    senders[k] = members[size_t(best)];
  }
  return true;
}

/// Calls f(idx) for the first index of every innermost row of `box` (non-empty boxes only).
template <class F>
void for_each_row(const Box& box, F&& f) {
  const size_t rank = box.lo.size();
  if (box.volume() == 0) return;
  std::vector<int64_t> idx = box.lo;
  if (rank == 0) {
    f(idx);
    return;
  }
  while (true) {
    f(idx);
    int64_t d = int64_t(rank) - 2;
    while (d >= 0) {
      if (++idx[size_t(d)] < box.hi[size_t(d)]) break;
      idx[size_t(d)] = box.lo[size_t(d)];
      --d;
    }
    if (d < 0) return;
  }
}

/// Byte offset of global index `idx` inside a dense row-major buffer holding box `holder`.
int64_t offset_in(const Box& holder, const std::vector<int64_t>& idx, int64_t item) {
  int64_t off = 0;
  for (size_t i = 0; i < idx.size(); ++i)
    off = off * (holder.hi[i] - holder.lo[i]) + (idx[i] - holder.lo[i]);
  return off * item;
}

/// Copies the elements of `box` from a buffer holding `from` to one holding `to` (core's
/// copy_region, the one box-copy loop of the code base).
void copy_box(const Box& box, const unsigned char* src, const Box& from, unsigned char* dst,
              const Box& to, int64_t item) {
  if (box.volume() == 0) return;
  copy_region(src, from.lo, from.hi, dst, to.lo, to.hi, box.lo, box.hi, size_t(item));
}


template <class T>
void add_rows(unsigned char* dst, const unsigned char* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    T a, b;
    std::memcpy(&a, dst + i * int64_t(sizeof(T)), sizeof(T));
    std::memcpy(&b, src + i * int64_t(sizeof(T)), sizeof(T));
    if constexpr (std::is_same_v<T, bfloat16>)
      a = bfloat16(float(a) + float(b));
    else
      a = T(a + b);
    std::memcpy(dst + i * int64_t(sizeof(T)), &a, sizeof(T));
  }
}

/// Adds the elements of `box` from a buffer holding `from` into one holding `to` (dtype `dt`).
void add_box(const Box& box, const unsigned char* src, const Box& from, unsigned char* dst,
             const Box& to, DType dt) {
  const int64_t item = int64_t(itemsize(dt));
  const int64_t row = box.lo.empty() ? 1 : box.hi.back() - box.lo.back();
  for_each_row(box, [&](const std::vector<int64_t>& idx) {
    unsigned char* o = dst + offset_in(to, idx, item);
    const unsigned char* i = src + offset_in(from, idx, item);
    switch (dt) {
      case DType::f32: add_rows<float>(o, i, row); break;
      case DType::f64: add_rows<double>(o, i, row); break;
      case DType::i32: add_rows<int32_t>(o, i, row); break;
      case DType::u32: add_rows<uint32_t>(o, i, row); break;
      case DType::bf16: add_rows<bfloat16>(o, i, row); break;
      default:
        throw ValueError(std::string("execute_reshard: partial sums of dtype ") + dtype_name(dt) +
                         " cannot be added");
    }
  });
}

}  // namespace

int64_t ReshardPlan::num_messages() const {
  int64_t n = 0;
  for (const auto& s : steps) n += int64_t(s.messages.size());
  return n;
}

int64_t ReshardPlan::total_received() const {
  int64_t n = 0;
  for (int64_t r : received) n += r;
  return n;
}

int64_t ReshardPlan::max_received() const {
  int64_t n = 0;
  for (int64_t r : received) n = std::max(n, r);
  return n;
}

std::vector<std::vector<std::vector<size_t>>> ReshardPlan::staging_batches(size_t step) const {
  std::vector<std::vector<std::vector<size_t>>> batches(src_boxes.size());
  std::vector<int64_t> fill(src_boxes.size(), 0);
  std::vector<int> phase(src_boxes.size(), -1);
  const auto& msgs = steps.at(step).messages;
  for (size_t k = 0; k < msgs.size(); ++k) {
    const size_t s = msgs[k].sender;
    auto& b = batches[s];
    if (b.empty() || fill[s] + msgs[k].elements > staging_capacity || phase[s] != msgs[k].phase) {
      b.emplace_back();
      fill[s] = 0;
      phase[s] = msgs[k].phase;
    }
    b.back().push_back(k);
    fill[s] += msgs[k].elements;
  }
  return batches;
}

void ReshardPlan::tally() {
  const size_t n = src_boxes.size();
  received.assign(n, 0);
  sent.assign(n, 0);
  messages_received.assign(n, 0);
  messages_sent.assign(n, 0);
  extra_memory.assign(n, 0);
  for (size_t si = 0; si < steps.size(); ++si) {
    for (const auto& m : steps[si].messages) {
      received[m.receiver] += m.elements;
      sent[m.sender] += m.elements;
      ++messages_received[m.receiver];
      ++messages_sent[m.sender];
    }
    const auto batches = staging_batches(si);
    for (size_t d = 0; d < n; ++d)
      for (const auto& b : batches[d]) {
        int64_t sum = 0;
        for (size_t k : b) sum += steps[si].messages[k].elements;
        extra_memory[d] = std::max(extra_memory[d], sum);
      }
  }
}

namespace {

std::string bytes_range(const std::vector<int64_t>& v, int64_t item) {
  int64_t lo = v.empty() ? 0 : *std::min_element(v.begin(), v.end());
  int64_t hi = v.empty() ? 0 : *std::max_element(v.begin(), v.end());
  return lo == hi ? std::to_string(hi * item) : std::to_string(lo * item) + ".." + std::to_string(hi * item);
}

std::string axes_str(const std::vector<AxisRef>& axes) {
  std::string s = "{";
  for (size_t a = 0; a < axes.size(); ++a) s += (a ? ", " : "") + axes[a].str();
  return s + "}";
}

}  // namespace

std::string ReshardPlan::as_text() const {
  const int64_t item = int64_t(itemsize(aval.dtype));
  const size_t n = src_boxes.size();
  std::ostringstream os;
  os << "reshard " << aval.str() << " on " << src.mesh->str() << ": " << src.str() << " -> "
     << dst.str() << "\n";
  for (size_t si = 0; si < steps.size(); ++si) {
    const ReshardStep& st = steps[si];
    std::vector<int64_t> rv(n, 0), sv(n, 0), ex(n, 0);
    for (const auto& m : st.messages) {
      rv[m.receiver] += m.elements;
      sv[m.sender] += m.elements;
    }
    const auto batches = staging_batches(si);
    for (size_t d = 0; d < n; ++d)
      for (const auto& b : batches[d]) {
        int64_t sum = 0;
        for (size_t k : b) sum += st.messages[k].elements;
        ex[d] = std::max(ex[d], sum);
      }
    os << "step " << si << ": " << reshard_kind_name(st.kind);
    if (!st.axes.empty()) os << " over " << axes_str(st.axes);
    if (st.kind == ReshardKind::all_to_all && st.split_dim >= 0 && st.concat_dim >= 0)
      os << " split_dim=" << st.split_dim << " concat_dim=" << st.concat_dim;
    if ((st.kind == ReshardKind::reduce_scatter || st.kind == ReshardKind::all_reduce) &&
        st.split_dim >= 0)
      os << (st.kind == ReshardKind::reduce_scatter ? " scatter_dim=" : " split_dim=")
         << st.split_dim;
    os << " to " << st.to.str() << ": recv " << bytes_range(rv, item) << " B/device, send "
       << bytes_range(sv, item) << " B/device, " << st.messages.size() << " messages, extra "
       << bytes_range(ex, item) << " B/device\n";
  }
  os << "max received per device: " << max_received() << " elements (" << max_received() * item
     << " B); total " << total_received() << " elements (" << total_received() * item
     << " B) in " << num_messages() << " messages\n";
  return os.str();
}

std::string ReshardPlan::as_detailed_text() const {
  const int64_t item = int64_t(itemsize(aval.dtype));
  const Mesh& mesh = *src.mesh;
  std::ostringstream os;
  os << as_text();
  for (size_t si = 0; si < steps.size(); ++si) {
    const ReshardStep& st = steps[si];
    std::vector<int64_t> rv(src_boxes.size(), 0), sv(rv), rm(rv), sm(rv);
    for (const auto& m : st.messages) {
      rv[m.receiver] += m.elements;
      sv[m.sender] += m.elements;
      ++rm[m.receiver];
      ++sm[m.sender];
    }
    os << "step " << si << " per device:\n";
    for (size_t d = 0; d < src_boxes.size(); ++d) {
      const int64_t local = intersect(st.from_boxes[d], st.to_boxes[d]).volume();
      os << "  device " << mesh.device_ids[d] << ": recv " << rv[d] << " (" << rv[d] * item
         << " B) in " << rm[d] << " msgs, send " << sv[d] << " (" << sv[d] * item << " B) in "
         << sm[d] << " msgs, local " << local << "\n";
    }
  }
  for (size_t d = 0; d < src_boxes.size(); ++d)
    os << "device " << mesh.device_ids[d] << ": extra " << extra_memory[d] << " ("
       << extra_memory[d] * item << " B)\n";
  return os.str();
}

int64_t all_reduce_split_dim(const Shape& shape, int64_t k) {
  if (shape.empty()) return -1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (k > 0 && shape[d] % k == 0) return int64_t(d);
  size_t best = 0;
  for (size_t d = 1; d < shape.size(); ++d)
    if (shape[d] > shape[best]) best = d;
  return int64_t(best);
}

std::vector<int64_t> all_reduce_pieces(const Shape& shape, int64_t k) {
  std::vector<int64_t> out(size_t(std::max<int64_t>(k, 1)), 0);
  const int64_t d = all_reduce_split_dim(shape, k);
  if (d < 0) {
    out[0] = 1;
    return out;
  }
  const int64_t len = shape[size_t(d)], rest = shape_size(shape) / std::max<int64_t>(len, 1);
  const int64_t c = (len + k - 1) / k;
  for (int64_t r = 0; r < k; ++r)
    out[size_t(r)] = (std::min(len, (r + 1) * c) - std::min(len, r * c)) * (len ? rest : 0);
  return out;
}

ReshardPlan plan_reshard(const Sharding& src, const Sharding& dst, const ShapedArray& aval,
                         std::source_location loc) {
  if (!src.mesh || !dst.mesh || !(*src.mesh == *dst.mesh))
    throw ShardingError("plan_reshard: the shardings are on different meshes (" +
                            describe(src, dst, aval) + ")",
                        loc);
  try {
    src.check(aval.shape, loc);
    dst.check(aval.shape, loc);
  } catch (const ShardingError& e) {
    throw ShardingError("plan_reshard: " + e.message(), loc);
  }
  if (src.memory_kind != dst.memory_kind)
    throw ShardingError("plan_reshard: the memory kinds differ (" + describe(src, dst, aval) +
                            "); a reshard stays in one memory kind",
                        loc);
  if (!dst.unreduced.empty())
    throw ShardingError("plan_reshard: the target has unreduced axes (" +
                            describe(src, dst, aval) +
                            "); a reshard reduces partial sums, it never makes or moves them",
                        loc);
  if (!src.unreduced.empty()) return detail::plan_unreduced(src, dst, aval, loc);
  return detail::plan_reduced(src, dst, aval, loc);
}

namespace detail {

ReshardPlan plan_reduced(const Sharding& src, const Sharding& dst, const ShapedArray& aval,
                         std::source_location loc) {
  const Mesh& mesh = *src.mesh;
  const size_t n = mesh.num_devices();

  ReshardPlan plan;
  plan.src = src;
  plan.dst = dst;
  plan.aval = aval;
  plan.src_boxes = device_boxes(src, aval.shape);
  plan.dst_boxes = device_boxes(dst, aval.shape);
  const auto& A = plan.src_boxes;
  const auto& B = plan.dst_boxes;

  // Source replica groups: devices with equal non-empty boxes.
  std::vector<int64_t> group_of(n, -1);
  std::vector<std::vector<size_t>> groups;
  for (size_t d = 0; d < n; ++d) {
    if (A[d].volume() == 0) continue;
    for (size_t g = 0; g < groups.size(); ++g)
      if (A[groups[g][0]] == A[d]) group_of[d] = int64_t(g);
    if (group_of[d] < 0) {
      group_of[d] = int64_t(groups.size());
      groups.push_back({d});
    } else {
      groups[size_t(group_of[d])].push_back(d);
    }
  }
  int64_t covered = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    covered += A[groups[g][0]].volume();
    for (size_t h = g + 1; h < groups.size(); ++h)
      if (intersect(A[groups[g][0]], A[groups[h][0]]).volume() != 0)
        throw ShardingError("plan_reshard: source boxes " + A[groups[g][0]].str() + " and " +
                                A[groups[h][0]].str() + " overlap (" + describe(src, dst, aval) +
                                ")",
                            loc);
  }
  if (covered != aval.size())
    throw ShardingError("plan_reshard: the source boxes cover " + std::to_string(covered) +
                            " of " + std::to_string(aval.size()) + " elements (" +
                            describe(src, dst, aval) + ")",
                        loc);

  plan.local_copy.assign(n, 0);
  plan.receive_bound.assign(n, 0);
  for (size_t d = 0; d < n; ++d) {
    plan.local_copy[d] = intersect(A[d], B[d]).volume();
    plan.receive_bound[d] = B[d].volume() - plan.local_copy[d];
    plan.staging_capacity = std::max(plan.staging_capacity, B[d].volume());
  }
  std::vector<std::vector<int64_t>> coords(n);
  for (size_t d = 0; d < n; ++d) coords[d] = mesh.coords_of(d);

  ReshardStep step;
  for (size_t g = 0; g < groups.size(); ++g) {
    const Box& held = A[groups[g][0]];
    std::vector<Item> items;
    for (size_t r = 0; r < n; ++r) {
      if (group_of[r] == int64_t(g)) continue;
      Box b = intersect(B[r], held);
      const int64_t v = b.volume();
      if (v > 0) items.push_back(Item{r, std::move(b), v});
    }
    std::sort(items.begin(), items.end(), [](const Item& x, const Item& y) {
      return x.v != y.v ? x.v > y.v : x.receiver < y.receiver;
    });
    std::vector<size_t> senders;
    if (!assign(Rule::nearest_fit, items, groups[g], plan.receive_bound, coords, senders) &&
        !assign(Rule::most_room, items, groups[g], plan.receive_bound, coords, senders))
      assign(Rule::fewest_sent, items, groups[g], plan.receive_bound, coords, senders);
    for (size_t k = 0; k < items.size(); ++k)
      step.messages.push_back(ReshardMessage{senders[k], items[k].receiver, items[k].box,
                                             items[k].v});
  }
  std::sort(step.messages.begin(), step.messages.end(),
            [](const ReshardMessage& x, const ReshardMessage& y) {
              return std::tie(x.sender, x.receiver) < std::tie(y.sender, y.receiver);
            });
  std::vector<int64_t> msgs_in(n, 0), msgs_out(n, 0);
  for (const auto& m : step.messages) {
    ++msgs_in[m.receiver];
    ++msgs_out[m.sender];
  }

  // Naming (e).
  bool even = true;
  for (size_t d = 0; d < n; ++d)
    if (A[d].volume() != A[0].volume() || B[d].volume() != B[0].volume() || B[d].volume() == 0)
      even = false;
  if (step.messages.empty()) {
    step.kind = ReshardKind::local_slice;
  } else if (even && match_all_gather(src, dst, step)) {
    step.kind = ReshardKind::all_gather;
  } else if (even && match_all_to_all(src, dst, step)) {
    step.kind = ReshardKind::all_to_all;
  } else {
    bool permute = even;
    for (const auto& m : step.messages)
      if (!(m.box == B[m.receiver]) || msgs_in[m.receiver] != 1 || msgs_out[m.sender] != 1)
        permute = false;
    step.kind = permute ? ReshardKind::collective_permute : ReshardKind::ragged_all_to_all;
  }
  step.from = src;
  step.to = dst;
  step.from_boxes = A;
  step.to_boxes = B;
  plan.steps.push_back(std::move(step));
  plan.tally();
  return plan;
}

}  // namespace detail

std::vector<Array> execute_reshard(const ReshardPlan& plan, const std::vector<Array>& src_shards,
                                   std::vector<int64_t>* peak_staging) {
  const size_t n = plan.src_boxes.size();
  if (src_shards.size() != n)
    throw ValueError("execute_reshard: " + std::to_string(src_shards.size()) +
                     " source shards for a mesh of " + std::to_string(n) + " devices");
  const int64_t item = int64_t(itemsize(plan.aval.dtype));
  for (size_t d = 0; d < n; ++d) {
    const Array& s = src_shards[d];
    if (!s.defined() || s.dtype() != plan.aval.dtype || s.shape() != plan.src_boxes[d].extent())
      throw ValueError("execute_reshard: shard " + std::to_string(d) + " is " +
                       (s.defined() ? s.aval().str() : std::string("empty")) + ", expected " +
                       dtype_name(plan.aval.dtype) + shape_str(plan.src_boxes[d].extent()));
  }
  std::vector<Array> cur = src_shards;
  std::vector<int64_t> peak(n, 0);
  for (size_t si = 0; si < plan.steps.size(); ++si) {
    const ReshardStep& st = plan.steps[si];
    std::vector<const unsigned char*> in(n);
    std::vector<Array> out(n);
    std::vector<unsigned char*> o(n);
    for (size_t d = 0; d < n; ++d) {
      in[d] = static_cast<const unsigned char*>(cur[d].raw_data());
      ShapedArray a = plan.aval;
      a.shape = st.to_boxes[d].extent();
      a.weak_type = false;
      out[d] = Array::allocate(a);
      o[d] = static_cast<unsigned char*>(const_cast<void*>(out[d].raw_data()));
      copy_box(intersect(st.from_boxes[d], st.to_boxes[d]), in[d], st.from_boxes[d], o[d],
               st.to_boxes[d], item);
    }
    const auto& msgs = st.messages;
    const auto batches = plan.staging_batches(si);
    for (int phase = 0; phase < 2; ++phase) {
      size_t rounds = 0;
      for (const auto& b : batches) rounds = std::max(rounds, b.size());
      for (size_t round = 0; round < rounds; ++round) {
        // Pack: every sender stages its batch `round` (if it is of this phase).
        std::vector<std::vector<std::pair<size_t, std::vector<unsigned char>>>> staged(n);
        for (size_t d = 0; d < n; ++d) {
          if (round >= batches[d].size() || msgs[batches[d][round][0]].phase != phase) continue;
          int64_t live = 0;
          for (size_t k : batches[d][round]) {
            const ReshardMessage& m = msgs[k];
            std::vector<unsigned char> buf(size_t(m.elements * item));
            if (phase == 0)
              copy_box(m.box, in[d], st.from_boxes[d], buf.data(), m.box, item);
            else
              copy_box(m.box, o[d], st.to_boxes[d], buf.data(), m.box, item);
            live += m.elements;
            staged[d].emplace_back(k, std::move(buf));
          }
          peak[d] = std::max(peak[d], live);
        }
        // Deliver into the receivers' target shards, then free the staging buffers.
        for (size_t d = 0; d < n; ++d)
          for (const auto& [k, buf] : staged[d]) {
            const ReshardMessage& m = msgs[k];
            if (m.partial)
              add_box(m.box, buf.data(), m.box, o[m.receiver], st.to_boxes[m.receiver],
                      plan.aval.dtype);
            else
              copy_box(m.box, buf.data(), m.box, o[m.receiver], st.to_boxes[m.receiver], item);
          }
      }
    }
    cur = std::move(out);
  }
  if (peak_staging) *peak_staging = peak;
  return cur;
}

}  // namespace minijax
