// minijax cost analysis: the per-primitive flop rules (a table keyed by primitive class and name)
// summed over a fused program, its fusion bodies and its loops.
#include "jit/cost_analysis.h"

#include <set>

#include "core/lax.h"
#include "core/primitive.h"
#include "core/views/array_ops.h"

namespace minijax {

namespace {

struct Cost {
  double flops = 0, transcendentals = 0, bytes = 0;
  Cost& operator+=(const Cost& o) {
    flops += o.flops, transcendentals += o.transcendentals, bytes += o.bytes;
    return *this;
  }
  Cost operator*(double k) const { return {flops * k, transcendentals * k, bytes * k}; }
};

const std::set<std::string>& transcendental() {
  static const std::set<std::string> s = {"exp", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos",
                                          "tan", "erf", "erf_inv", "pow", "atan2", "sqrt", "rsqrt"};
  return s;
}

// Operations that move or relabel elements but compute nothing.
const std::set<std::string>& data_movement() {
  static const std::set<std::string> s = {"broadcast_in_dim", "transpose", "reshape", "squeeze", "expand_dims",
                                          "slice", "rev", "pad", "concatenate", "dynamic_slice", "gather",
                                          "dynamic_update_slice", "device_put", "copy_start", "copy_done", "optimization_barrier",
                                          "stop_gradient", "iota"};
  return s;
}

double size_of(const Atom& a) { return double(atom_aval(a).size()); }

Cost jaxpr_cost(const Jaxpr& j, bool count_bytes);

Cost eqn_flops(const Eqn& e) {
  Cost c;
  const std::string& n = e.primitive->name;
  double out = e.outputs.empty() ? 0 : double(e.outputs[0].aval().size());
  if (n == "dot_general") {
    auto d = dot_general_params(e).dimension_numbers;
    double k = 1;
    for (int64_t ax : d.lhs_contracting) k *= double(atom_aval(e.inputs[0]).shape[size_t(ax)]);
    c.flops = 2 * out * k;  // out = batch * m * n
  } else if (e.primitive->op_class == OpClass::reduction || n == "cumsum") {
    c.flops = size_of(e.inputs[0]) - (n == "cumsum" ? 0 : out);
  } else if (e.primitive->op_class == OpClass::elementwise && !data_movement().count(n)) {
    if (transcendental().count(n)) c.transcendentals = out;
    else c.flops = out * double(std::max<size_t>(1, e.outputs.size()));
  } else if (n == "scatter_add") {
    c.flops = size_of(e.inputs.back());
  }
  return c;
}

Cost eqn_cost(const Eqn& e, bool count_bytes) {
  const std::string& n = e.primitive->name;
  Cost c;
  if (n == "fusion") {
    c = jaxpr_cost(*e.params.get_jaxpr("jaxpr")->jaxpr, false);
  } else if (n == "scan") {
    c = jaxpr_cost(*e.params.get_jaxpr("jaxpr")->jaxpr, true) * double(e.params.get_int("length"));
    return c;
  } else if (n == "while") {
    c = jaxpr_cost(*e.params.get_jaxpr("cond_jaxpr")->jaxpr, true);
    c += jaxpr_cost(*e.params.get_jaxpr("body_jaxpr")->jaxpr, true);
    return c;
  } else if (n == "cond") {
    for (auto& br : e.params.get_jaxprs("branches")) {
      Cost b = jaxpr_cost(*br->jaxpr, true);
      if (b.flops + b.transcendentals > c.flops + c.transcendentals) c = b;
    }
    return c;
  } else {
    c = eqn_flops(e);
  }
  static const std::set<std::string> views = {"reshape", "squeeze", "expand_dims", "optimization_barrier"};
  if (count_bytes && !views.count(n)) {
    for (auto& in : e.inputs) c.bytes += double(atom_aval(in).nbytes());
    for (auto& o : e.outputs) c.bytes += double(o.aval().nbytes());
  }
  return c;
}

Cost jaxpr_cost(const Jaxpr& j, bool count_bytes) {
  Cost c;
  for (auto& e : j.eqns) c += eqn_cost(e, count_bytes);
  return c;
}

}  // namespace

std::map<std::string, double> cost_analysis(const Jaxpr& program) {
  Cost c = jaxpr_cost(program, true);
  return {{"flops", c.flops}, {"transcendentals", c.transcendentals}, {"bytes accessed", c.bytes}};
}

}  // namespace minijax
