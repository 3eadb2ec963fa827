// minijax jit with in_shardings/out_shardings: resolving the user's shardings, lowering (propagate
// + partition), putting arguments on their shardings, running run_spmd and assembling outputs.
#include "jit/jit.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>

#include "core/errors.h"
#include "core/lax.h"
#include "sharding/boxes.h"
#include "sharding/partition_spmd.h"
#include "sharding/plan_reshard.h"
#include "sharding/reshard_api.h"

namespace minijax {

namespace detail {

std::vector<std::optional<Sharding>> resolve_shardings(
    const std::vector<std::optional<NamedSharding>>& given, const std::vector<ShapedArray>& avals,
    size_t num_consts, const char* what, std::shared_ptr<const Mesh>& mesh,
    std::source_location loc) {
  const size_t leaves = avals.size() - num_consts;
  std::vector<std::optional<Sharding>> out(avals.size());
  if (given.empty()) return out;
  if (given.size() != 1 && given.size() != leaves)
    throw ShardingError(std::string("jit: ") + what + " has " + std::to_string(given.size()) +
                            " entries but the function has " + std::to_string(leaves) +
                            " flattened leaves (give one per leaf, or one for all)",
                        loc);
  for (size_t i = 0; i < leaves; ++i) {
    const std::optional<NamedSharding>& ns = given.size() == 1 ? given[0] : given[i];
    if (!ns) continue;
    const ShapedArray& aval = avals[num_consts + i];
    Sharding s = to_sharding(*ns, int64_t(aval.shape.size()), loc);
    s.check(aval.shape, loc);
    if (mesh && !(*mesh == *s.mesh))
      throw ShardingError(std::string("jit: ") + what + " entry " + std::to_string(i) + " (" +
                              ns->str() + ") is on " + s.mesh->str() +
                              ", but another sharding of the call is on " + mesh->str() +
                              "; one program runs on one mesh",
                          loc);
    if (!mesh) mesh = s.mesh;
    out[num_consts + i] = std::move(s);
  }
  return out;
}

namespace {

// The sharding a program output is returned in: the output reshard's target if one was placed
// there, else the output variable's sharding; a literal output is replicated.
Sharding output_sharding(const PropagationResult& prop, const Jaxpr& j, size_t k,
                         const std::shared_ptr<const Mesh>& mesh) {
  for (auto& r : prop.reshards)
    if (r.on_output && r.index == k) return r.to;
  if (auto* v = std::get_if<Var>(&j.outvars[k])) return prop.of(*v);
  return Sharding::replicated_on(mesh, int64_t(j.out_avals()[k].shape.size()));
}

}  // namespace

std::shared_ptr<const Lowered> lower_sharded(const ClosedJaxprPtr& jaxpr, size_t num_consts,
                                             const std::vector<std::optional<Sharding>>& in,
                                             const std::vector<std::optional<Sharding>>& out_given,
                                             const std::shared_ptr<const Mesh>& mesh,
                                             std::source_location loc) {
  const Jaxpr& j = *jaxpr->jaxpr;
  auto low = std::make_shared<Lowered>();
  low->mesh = mesh;
  low->jaxpr = jaxpr;
  low->num_consts = num_consts;
  std::vector<std::optional<Sharding>> out = out_given;
  low->propagation = propagate_shardings(j, in, out, *mesh, loc);
  // Outputs left as partial sums are returned reduced (JAX never returns unreduced values unless
  // asked): fix them to the same dims without unreduced axes and propagate again.
  bool again = false;
  for (size_t k = 0; k < out.size(); ++k) {
    if (out[k]) continue;
    Sharding s = output_sharding(low->propagation, j, k, mesh);
    if (s.unreduced.empty()) continue;
    s.unreduced.clear();
    out[k] = std::move(s);
    again = true;
  }
  if (again) low->propagation = propagate_shardings(j, in, out, *mesh, loc);
  low->program = partition_spmd(j, low->propagation, *mesh, loc);
  for (auto& v : j.invars) low->in_shardings.push_back(low->propagation.of(v));
  for (size_t k = 0; k < j.outvars.size(); ++k)
    low->out_shardings.push_back(output_sharding(low->propagation, j, k, mesh));
  return low;
}

SpmdRun run_lowered(const std::shared_ptr<const Lowered>& lowered, const std::vector<Array>& operands,
                    std::source_location loc) {
  const Lowered& low = *lowered;
  const size_t n = low.mesh->num_devices();
  if (operands.size() != low.in_shardings.size())
    throw ValueError("jit: " + std::to_string(operands.size()) + " operands for a program of " +
                         std::to_string(low.in_shardings.size()) + " inputs",
                     loc);
  std::vector<std::vector<Array>> dev(n);
  for (size_t k = 0; k < operands.size(); ++k) {
    const Array& x = operands[k];
    std::vector<Box> boxes = device_boxes(low.in_shardings[k], x.shape(), loc);
    for (size_t p = 0; p < n; ++p) {
      bool whole = true;
      for (size_t d = 0; d < boxes[p].lo.size(); ++d)
        whole &= boxes[p].lo[d] == 0 && boxes[p].hi[d] == x.shape()[d];
      dev[p].push_back(whole ? x : lax::slice(x, boxes[p].lo, boxes[p].hi));
    }
  }
  SpmdRun run;
  run.lowered = lowered;
  run.outputs = run_spmd(low.program, *low.mesh, dev, &run.stats);
  return run;
}

Array assemble_shards(const std::vector<Array>& shards, const Sharding& s, const ShapedArray& aval,
                      std::source_location loc) {
  if (!s.unreduced.empty())
    throw ShardingError("jit: cannot assemble an output of " + aval.str() + " with sharding " +
                            s.str() + ": it holds unreduced partial sums",
                        loc);
  std::vector<Box> boxes = device_boxes(s, aval.shape, loc);
  Array g = Array::allocate(aval);
  auto* dst = static_cast<uint8_t*>(const_cast<void*>(g.raw_data(loc)));
  const size_t es = itemsize(aval.dtype);
  const size_t rank = aval.shape.size();
  std::set<std::string> done;  // replicas hold the same box: copy it once
  for (size_t p = 0; p < boxes.size(); ++p) {
    const Box& b = boxes[p];
    if (b.volume() == 0 || !done.insert(b.str()).second) continue;
    const auto* src = static_cast<const uint8_t*>(shards[p].raw_data(loc));
    if (rank == 0) {
      std::memcpy(dst, src, es);
      continue;
    }
    // Copy one innermost row of the box at a time; `idx` walks the outer dims row-major.
    const int64_t row = b.hi[rank - 1] - b.lo[rank - 1];
    std::vector<int64_t> idx(b.lo.begin(), b.lo.end());
    for (int64_t copied = 0; copied < b.volume(); copied += row) {
      int64_t off = 0;
      for (size_t d = 0; d < rank; ++d) off = off * aval.shape[d] + idx[d];
      std::memcpy(dst + size_t(off) * es, src + size_t(copied) * es, size_t(row) * es);
      for (int64_t d = int64_t(rank) - 2; d >= 0; --d) {
        if (++idx[size_t(d)] < b.hi[size_t(d)]) break;
        idx[size_t(d)] = b.lo[size_t(d)];
      }
    }
  }
  return g;
}

}  // namespace detail

std::string collectives_text(const SpmdStats& stats, const Jaxpr& program) {
  std::ostringstream os;
  for (auto& c : stats.collectives) {
    std::string axes = "?";
    if (c.eqn_index < program.eqns.size()) {
      const Eqn& e = program.eqns[c.eqn_index];
      if (e.params.has("axis_name")) axes = param_to_string(e.params.at("axis_name"));
      else axes = e.primitive->name + " body";
    }
    auto range = [](const std::vector<int64_t>& v) {
      int64_t hi = v.empty() ? 0 : *std::max_element(v.begin(), v.end());
      int64_t lo = v.empty() ? 0 : *std::min_element(v.begin(), v.end());
      return std::to_string(hi) + " B" + (lo == hi ? "" : " (max; min " + std::to_string(lo) + ")");
    };
    os << "eqn " << c.eqn_index << " " << c.primitive << " over " << axes << ": "
       << range(c.bytes_sent) << " sent, " << range(c.bytes_received) << " received per device\n";
  }
  return os.str();
}

std::string Lowered::as_text() const {
  std::ostringstream os;
  os << "# global program on " << mesh->str() << " with propagated shardings\n"
     << propagation.text << "\n# SPMD program (one per device, local shapes)\n"
     << to_string(program) << "\n# collectives (bytes and messages per device, run_spmd's traffic model)\n"
     << spmd_collectives_text(program, *mesh);
  return os.str();
}

}  // namespace minijax
