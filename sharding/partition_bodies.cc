// minijax SPMD partitioning of equations with bodies: recursive partition_spmd of each body and
// the rebinding of the call / loop / conditional primitive on local values.
#include "sharding/partition_bodies.h"

#include <map>
#include <memory>
#include <string>

#include "core/bodies.h"
#include "core/errors.h"
#include "core/pjit.h"
#include "core/primitive.h"
#include "core/trace.h"
#include "core/views/control_flow.h"
#include "sharding/partition_spmd.h"
#include "sharding/propagate_shardings.h"

namespace minijax {
namespace {

// The body partitioned for the mesh; a body's constvars (concrete constants, replicated) stay
// constvars with the same values.
ClosedJaxprPtr local_body(const ClosedJaxpr& body, const PropagationResult& shardings, const Mesh& mesh,
                          std::source_location loc) {
  auto j = std::make_shared<Jaxpr>(partition_spmd(*body.jaxpr, shardings, mesh, loc));
  const size_t nconst = body.jaxpr->constvars.size();
  j->constvars.assign(j->invars.begin(), j->invars.begin() + std::ptrdiff_t(nconst));
  j->invars.erase(j->invars.begin(), j->invars.begin() + std::ptrdiff_t(nconst));
  auto out = std::make_shared<ClosedJaxpr>();
  out->jaxpr = j;
  out->consts = body.consts;
  return out;
}

}  // namespace

bool partitions_bodies(const Eqn& e) { return propagation_enters_bodies(e.primitive->name); }

std::vector<Array> partition_body_eqn(const Eqn& e, const std::vector<Array>& local_ops,
                                      const PropagationResult& shardings, const Mesh& mesh,
                                      std::source_location loc) {
  if (!partitions_bodies(e))
    throw ShardingError("partition_body_eqn: '" + e.primitive->name + "' has no bodies to partition", loc);
  if (is_custom_derivative_call(*e.primitive)) {
    // Its rules are autodiff's, which has run: the primal body becomes a closed_call.
    const CallParams c = call_params(e);
    ClosedJaxprPtr body = local_body(*c.jaxpr, shardings, mesh, loc);
    return bind_call(closed_call_p(), body, c.name_or(e.primitive->name), local_ops, loc);
  }
  Params params = e.params;
  std::map<std::string, std::vector<ClosedJaxprPtr>> lists;  // cond's branches, in order
  for (const SubJaxpr& s : subjaxprs(e)) {
    ClosedJaxprPtr local = local_body(*s.jaxpr, shardings, mesh, loc);
    if (!s.in_list) {
      params.set(s.param, local);
    } else {
      auto& list = lists[s.param];
      if (list.size() <= s.index) list.resize(s.index + 1);
      list[s.index] = local;
    }
  }
  for (auto& [key, list] : lists) params.set(key, std::move(list));
  return minijax::bind(*e.primitive, local_ops, params, loc);
}

}  // namespace minijax
