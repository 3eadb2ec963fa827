// minijax buffer rules: the table of views and in-place updates for the primitives that have them
// (reshape, squeeze, expand_dims, optimization_barrier, device_put, dynamic_update_slice, ...).
#include "memory/buffer_rules.h"

#include <map>
#include <unordered_map>
#include <unordered_set>

#include "core/primitive.h"

namespace minijax {

namespace {

std::map<std::string, BufferRule>& table() {
  static std::map<std::string, BufferRule> t;
  return t;
}

std::vector<int> none_in_place(const Eqn&, size_t) { return {}; }

// Output 0 is a view of input 0 (a row-major buffer reinterpreted).
BufferRule view_of_first() {
  return {[](const Eqn&) { return std::vector<int>{0}; }, none_in_place};
}

const bool registered = [] {
  for (const char* p : {"reshape", "squeeze", "expand_dims"}) register_buffer_rule(p, view_of_first());
  // optimization_barrier: output k is input k.
  register_buffer_rule("optimization_barrier",
                       {[](const Eqn& e) {
                          std::vector<int> v(e.outputs.size());
                          for (size_t k = 0; k < v.size(); ++k) v[k] = int(k);
                          return v;
                        },
                        none_in_place});
  // device_put within one memory kind is the identity; across kinds it is a copy.
  register_buffer_rule("device_put",
                       {[](const Eqn& e) {
                          std::vector<int> v(e.outputs.size(), -1);
                          for (size_t k = 0; k < v.size() && k < e.inputs.size(); ++k)
                            if (atom_aval(e.inputs[k]).memory_kind == e.outputs[k].aval().memory_kind) v[k] = int(k);
                          return v;
                        },
                        none_in_place});
  for (const char* p : {"dynamic_update_slice", "scatter_add"})
    register_buffer_rule(p, {[](const Eqn& e) { return std::vector<int>(e.outputs.size(), -1); },
                             [](const Eqn&, size_t k) { return k == 0 ? std::vector<int>{0} : std::vector<int>{}; }});
  register_buffer_rule("fusion",
                       {[](const Eqn& e) { return std::vector<int>(e.outputs.size(), -1); },
                        [](const Eqn& e, size_t k) {
                          std::vector<int> r;
                          if (e.params.get_string("kind") != "loop") return r;
                          const Jaxpr& body = *e.params.get_jaxpr("jaxpr")->jaxpr;
                          for (size_t i = 0; i < e.inputs.size(); ++i)
                            if (fusion_reads_elementwise(body, i)) r.push_back(int(i));
                          (void)k;
                          return r;
                        }});
  return true;
}();

}  // namespace

void register_buffer_rule(const std::string& primitive, BufferRule rule) { table()[primitive] = std::move(rule); }

const BufferRule* buffer_rule(const Eqn& eqn) {
  (void)registered;
  auto it = table().find(eqn.primitive->name);
  return it == table().end() ? nullptr : &it->second;
}

bool fusion_reads_elementwise(const Jaxpr& body, size_t i) {
  const Var& start = body.invars.at(i);
  const Shape& shape = start.aval().shape;
  std::unordered_set<uint64_t> tainted{start.id()};
  for (auto& e : body.eqns) {
    bool reads = false;
    for (auto& in : e.inputs)
      if (auto* v = std::get_if<Var>(&in); v && tainted.count(v->id())) reads = true;
    if (!reads) continue;
    if (e.primitive->op_class != OpClass::elementwise) return false;
    for (auto& o : e.outputs) {
      if (o.aval().shape != shape) return false;
      tainted.insert(o.id());
    }
  }
  return true;
}

}  // namespace minijax
