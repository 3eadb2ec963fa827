// minijax primitive registry.
// Owns registration, lookup and the error-wrapping abstract_eval.
#include "core/primitive.h"

#include <map>
#include <mutex>
#include <stdexcept>

namespace minijax {

namespace {
std::map<std::string, std::unique_ptr<Primitive>>& table() {
  static std::map<std::string, std::unique_ptr<Primitive>> t;
  return t;
}
std::mutex& table_mu() {
  static std::mutex m;
  return m;
}
}  // namespace

CostEstimate operand_and_result_bytes(const Eqn& e, bool count_bytes) {
  CostEstimate c;
  if (!count_bytes) return c;
  for (auto& in : e.inputs) c.bytes += double(atom_aval(in).nbytes());
  for (auto& o : e.outputs) c.bytes += double(o.aval().nbytes());
  return c;
}

CostEstimate call_cost(const Eqn& e, bool count_bytes, const JaxprCost& jaxpr_cost) {
  CostEstimate c;
  for (auto& [k, v] : e.params.items())
    if (auto* j = std::get_if<ClosedJaxprPtr>(&v); j && *j) c += jaxpr_cost(*(*j)->jaxpr, count_bytes);
  return c;
}

Primitive& get_or_create_primitive(const std::string& name) {
  std::lock_guard<std::mutex> g(table_mu());
  auto& p = table()[name];
  if (!p) {
    p = std::make_unique<Primitive>();
    p->name = name;
  }
  return *p;
}

const Primitive& primitive(const std::string& name) {
  std::lock_guard<std::mutex> g(table_mu());
  auto it = table().find(name);
  if (it == table().end()) throw ValueError("unknown primitive '" + name + "'");
  return *it->second;
}

const Primitive* find_primitive(const std::string& name) {
  std::lock_guard<std::mutex> g(table_mu());
  auto it = table().find(name);
  return it == table().end() ? nullptr : it->second.get();
}

std::vector<std::string> primitive_names() {
  std::lock_guard<std::mutex> g(table_mu());
  std::vector<std::string> r;
  for (auto& [k, v] : table()) r.push_back(k);
  return r;
}

static std::string describe_call(const Primitive& p, const std::vector<ShapedArray>& in,
                                 const Params& params) {
  std::string s = p.name + "(";
  for (size_t i = 0; i < in.size(); ++i) s += (i ? ", " : "") + in[i].str();
  s += ")";
  bool first = true;
  for (auto& [k, v] : params.items()) {
    if (std::holds_alternative<ClosedJaxprPtr>(v) ||
        std::holds_alternative<std::vector<ClosedJaxprPtr>>(v))
      continue;
    s += (first ? " with " : ", ") + k + "=" + param_to_string(v);
    first = false;
  }
  return s;
}

std::vector<ShapedArray> abstract_eval(const Primitive& p, const std::vector<ShapedArray>& in,
                                       const Params& params, std::source_location loc) {
  if (!p.shape_rule) throw ValueError("primitive '" + p.name + "' has no shape rule", loc);
  try {
    return p.shape_rule(in, params);
  } catch (const ShapeError& e) {
    throw ShapeError(describe_call(p, in, params) + ": " + e.message(), loc);
  } catch (const TypeError& e) {
    throw TypeError(describe_call(p, in, params) + ": " + e.message(), loc);
  } catch (const IndexError& e) {
    throw IndexError(describe_call(p, in, params) + ": " + e.message(), loc);
  } catch (const ValueError& e) {
    throw ValueError(describe_call(p, in, params) + ": " + e.message(), loc);
  } catch (const ShardingError& e) {
    throw ShardingError(describe_call(p, in, params) + ": " + e.message(), loc);
  } catch (const std::out_of_range& e) {
    // A rule reading an operand or a list parameter with .at() past its end: the equation has the
    // wrong number of operands (a parsed jaxpr can give any primitive any number of them).
    throw ValueError(describe_call(p, in, params) + ": malformed call (" + std::to_string(in.size()) +
                         " operands): " + e.what(),
                     loc);
  }
}

}  // namespace minijax
