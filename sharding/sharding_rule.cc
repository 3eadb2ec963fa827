// minijax sharding rules: FactorRule's text and consistency check, the rule table and lookup.
// The per-primitive rules live in sharding/rules/*.cc (one file per family).
#include "sharding/sharding_rule.h"

#include <set>
#include <sstream>

#include "core/errors.h"
#include "core/primitive.h"
#include "core/primitive_facts.h"
#include "sharding/propagate_shardings.h"

namespace minijax {
namespace {

// Shardy's factor symbols: i, j, ..., z, then z_1, z_2, ...
std::string factor_symbol(int f) {
  constexpr int kLetters = 'z' - 'i' + 1;
  if (f < kLetters) return std::string(1, static_cast<char>('i' + f));
  return "z_" + std::to_string(f - kLetters + 1);
}

void print_values(std::ostringstream& os, const std::vector<std::vector<std::vector<int>>>& vals) {
  os << "(";
  for (size_t v = 0; v < vals.size(); ++v) {
    if (v) os << ", ";
    os << "[";
    for (size_t d = 0; d < vals[v].size(); ++d) {
      if (d) os << ", ";
      if (vals[v][d].empty()) os << "1";
      for (int f : vals[v][d]) os << factor_symbol(f);
    }
    os << "]";
  }
  os << ")";
}

void print_set(std::ostringstream& os, const char* name, const std::vector<int>& fs) {
  if (fs.empty()) return;
  os << " " << name << "={";
  for (size_t i = 0; i < fs.size(); ++i) os << (i ? ", " : "") << factor_symbol(fs[i]);
  os << "}";
}

}  // namespace

std::string FactorRule::str() const {
  std::ostringstream os;
  print_values(os, operand_dims);
  os << "->";
  print_values(os, result_dims);
  os << " {";
  for (size_t f = 0; f < factor_sizes.size(); ++f)
    os << (f ? ", " : "") << factor_symbol(static_cast<int>(f)) << "=" << factor_sizes[f];
  os << "}";
  print_set(os, "reduction", reduction_factors);
  print_set(os, "need_replication", need_replication_factors);
  if (!completed_by.empty()) os << " completed_by=" << completed_by;
  return os.str();
}

std::map<std::string, ShardingRuleFn>& sharding_rules() {
  static std::map<std::string, ShardingRuleFn> table;
  return table;
}

std::map<std::string, std::string>& no_sharding_rule_reasons() {
  static std::map<std::string, std::string> table;
  return table;
}

FactorRule sharding_rule_for(const std::string& name, const std::vector<ShapedArray>& in_avals,
                             const std::vector<ShapedArray>& out_avals, const Params& params) {
  auto it = sharding_rules().find(name);
  if (it == sharding_rules().end()) {
    auto r = no_sharding_rule_reasons().find(name);
    if (r != no_sharding_rule_reasons().end())
      throw ShardingError("primitive '" + name + "' has no sharding rule: " + r->second);
    throw ShardingError("primitive '" + name + "' has no sharding rule");
  }
  return it->second(in_avals, out_avals, params);
}

FactorRule sharding_rule_of(const Eqn& e) {
  if (!e.primitive) throw ShardingError("sharding_rule_of: equation without a primitive");
  std::vector<ShapedArray> in, out;
  for (const Atom& a : e.inputs) in.push_back(atom_aval(a));
  for (const Var& v : e.outputs) out.push_back(v.aval());
  return sharding_rule_for(e.primitive->name, in, out, e.params);
}

void check_factor_rule(const FactorRule& rule, const std::vector<ShapedArray>& in_avals,
                       const std::vector<ShapedArray>& out_avals, const std::string& what) {
  auto fail = [&](const std::string& m) {
    throw ShardingError("sharding rule of " + what + " " + rule.str() + ": " + m);
  };
  const int nf = static_cast<int>(rule.factor_sizes.size());
  for (int f = 0; f < nf; ++f)
    if (rule.factor_sizes[f] < 0) fail("factor " + factor_symbol(f) + " has a negative size");
  std::vector<bool> used(nf, false), in_result(nf, false);
  auto check_side = [&](const std::vector<std::vector<std::vector<int>>>& dims,
                        const std::vector<ShapedArray>& avals, const char* side, bool result) {
    if (dims.size() != avals.size())
      fail(std::string(side) + " count " + std::to_string(dims.size()) + " != " +
           std::to_string(avals.size()));
    for (size_t v = 0; v < avals.size(); ++v) {
      const Shape& s = avals[v].shape;
      const std::string where = std::string(side) + " " + std::to_string(v) + " " + shape_str(s);
      if (dims[v].size() != s.size())
        fail(where + ": rule has " + std::to_string(dims[v].size()) + " dims");
      std::set<int> seen;
      for (size_t d = 0; d < s.size(); ++d) {
        int64_t prod = 1;
        for (int f : dims[v][d]) {
          if (f < 0 || f >= nf) fail(where + ": factor id " + std::to_string(f) + " out of range");
          if (!seen.insert(f).second) fail(where + ": factor " + factor_symbol(f) + " used twice");
          prod *= rule.factor_sizes[f];
          used[f] = true;
          if (result) in_result[f] = true;
        }
        if (prod != s[d])
          fail(where + ": factors of dim " + std::to_string(d) + " multiply to " +
               std::to_string(prod));
      }
    }
  };
  check_side(rule.operand_dims, in_avals, "operand", false);
  check_side(rule.result_dims, out_avals, "result", true);
  for (int f = 0; f < nf; ++f)
    if (!used[f]) fail("factor " + factor_symbol(f) + " is used by no dim");
  for (int f : rule.reduction_factors) {
    if (f < 0 || f >= nf) fail("reduction factor id out of range");
    if (in_result[f]) fail("reduction factor " + factor_symbol(f) + " appears in a result");
  }
  for (int f : rule.need_replication_factors)
    if (f < 0 || f >= nf) fail("need-replication factor id out of range");
}

namespace {

// A fact every primitive must have (core/primitive_facts.h): propagation reads each equation's factor
// rule, so a primitive has one, declares why it has none, or has bodies that propagation enters.
Registrar require_sharding_rule([] {
  detail::require_fact({"no sharding rule (sharding_rules()), no declared reason (no_sharding_rule_reasons()) "
                        "and no bodies that propagation enters",
                        [](const Primitive& p) {
                          return sharding_rules().count(p.name) != 0 || no_sharding_rule_reasons().count(p.name) != 0 ||
                                 propagation_enters_bodies(p.name);
                        }});
});

}  // namespace

}  // namespace minijax
