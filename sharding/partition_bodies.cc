// minijax SPMD partitioning of equations with bodies: recursive partition_spmd of each body and
// the rebinding of the call / loop / conditional primitive on local values.
#include "sharding/partition_bodies.h"

#include <memory>
#include <string>

#include "core/errors.h"
#include "core/pjit.h"
#include "core/primitive.h"
#include "core/trace.h"
#include "sharding/partition_spmd.h"

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

bool partitions_bodies(const Eqn& e) {
  const std::string& n = e.primitive->name;
  return n == "pjit" || n == "closed_call" || n == "checkpoint" || n == "custom_jvp_call" ||
         n == "custom_vjp_call" || n == "scan" || n == "while" || n == "cond";
}

std::vector<Array> partition_body_eqn(const Eqn& e, const std::vector<Array>& local_ops,
                                      const PropagationResult& shardings, const Mesh& mesh,
                                      std::source_location loc) {
  const std::string& n = e.primitive->name;
  Params params = e.params;
  auto part = [&](const std::string& key) {
    params.set(key, local_body(*e.params.get_jaxpr(key), shardings, mesh, loc));
  };
  if (n == "custom_jvp_call" || n == "custom_vjp_call") {
    ClosedJaxprPtr body = local_body(*e.params.get_jaxpr("call_jaxpr"), shardings, mesh, loc);
    std::string name = e.params.has("name") ? e.params.get_string("name") : n;
    return bind_call(closed_call_p(), body, name, local_ops, loc);
  }
  if (n == "pjit" || n == "checkpoint" || n == "scan") {
    part("jaxpr");
  } else if (n == "closed_call") {
    part("call_jaxpr");
  } else if (n == "while") {
    part("cond_jaxpr");
    part("body_jaxpr");
  } else if (n == "cond") {
    std::vector<ClosedJaxprPtr> branches;
    for (auto& b : e.params.get_jaxprs("branches")) branches.push_back(local_body(*b, shardings, mesh, loc));
    params.set("branches", branches);
  } else {
    throw ShardingError("partition_body_eqn: '" + n + "' has no bodies to partition", loc);
  }
  return minijax::bind(*e.primitive, local_ops, params, loc);
}

}  // namespace minijax
