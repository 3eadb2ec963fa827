// minijax jaxpr pictures: writes a jaxpr (bodies as nested clusters) in Graphviz's DOT language.
// Owns the node, edge and cluster layout and DOT quoting; reads only core's IR.
#include "core/to_dot.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "core/bodies.h"
#include "core/primitive.h"

namespace minijax {

std::string dot_quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\', q += c;
    else if (c == '\n') q += "\\n";
    else if (c == '\r') continue;
    else q += c;
  }
  return q + "\"";
}

namespace {

// JAX's variable names: a..z, ba, bb, ... (base 26, 'a' = 0), as the printer's.
std::string encode_name(uint64_t i) {
  std::string s;
  do { s.insert(s.begin(), char('a' + i % 26)); i /= 26; } while (i > 0);
  return s;
}

/// The bodies of an equation (subjaxprs), drawn in param key order.
std::vector<SubJaxpr> bodies_in_key_order(const Eqn& e) {
  std::vector<SubJaxpr> out = subjaxprs(e);
  std::stable_sort(out.begin(), out.end(), [](const SubJaxpr& a, const SubJaxpr& b) { return a.param < b.param; });
  return out;
}

bool is_body_param(const Param& p) {
  return std::holds_alternative<ClosedJaxprPtr>(p) || std::holds_alternative<std::vector<ClosedJaxprPtr>>(p);
}

class DotWriter {
 public:
  explicit DotWriter(const DotOptions& opts) : opts_(opts) {}

  std::string run(const Jaxpr& j) {
    out_ << "digraph " << dot_quote(opts_.name) << " {\n"
         << "  graph [compound=true, rankdir=TB, labelloc=t, fontname=\"monospace\", label="
         << dot_quote(opts_.name) << "];\n"
         << "  node [fontname=\"monospace\", fontsize=10];\n"
         << "  edge [fontname=\"monospace\", fontsize=9];\n";
    scope(j, 1);
    out_ << "}\n";
    return out_.str();
  }

 private:
  const DotOptions& opts_;
  std::ostringstream out_;
  std::unordered_map<Var, std::string, VarHash> names_;     // variable -> a, b, ...
  std::unordered_map<Var, std::string, VarHash> producer_;  // variable -> node defining it
  uint64_t next_name_ = 0, next_node_ = 0, next_cluster_ = 0;

  const std::string& name(const Var& v) {
    auto it = names_.find(v);
    if (it == names_.end()) it = names_.emplace(v, encode_name(next_name_++)).first;
    return it->second;
  }

  void indent(int depth) { out_ << std::string(size_t(2 * depth), ' '); }

  /// Writes a node and returns its id.
  std::string node(int depth, const std::string& label, const std::string& attrs) {
    std::string id = "n" + std::to_string(next_node_++);
    indent(depth);
    out_ << id << " [label=" << dot_quote(label) << ", " << attrs << "];\n";
    return id;
  }

  void edge(int depth, const std::string& from, const std::string& to, const Var& v) {
    std::string label = name(v) + ": " + v.aval().str();
    if (opts_.annotate) {
      std::string extra = opts_.annotate(v);
      if (!extra.empty()) label += "\n" + extra;
    }
    indent(depth);
    out_ << from << " -> " << to << " [label=" << dot_quote(label) << "];\n";
  }

  /// The node defining `v` (a node of its own if the jaxpr reads a variable it never defines).
  std::string source(int depth, const Var& v) {
    auto it = producer_.find(v);
    if (it != producer_.end()) return it->second;
    std::string id = node(depth, "free " + name(v), "shape=ellipse, style=dotted");
    producer_[v] = id;
    return id;
  }

  std::string clip(const std::string& s) const {
    if (opts_.max_param_chars == 0 || s.size() <= opts_.max_param_chars) return s;
    return s.substr(0, opts_.max_param_chars) + "...";
  }

  std::string eqn_label(const Eqn& e) {
    std::string label = e.primitive ? e.primitive->name : std::string("?");
    for (auto& [key, p] : e.params.items())
      if (!is_body_param(p)) label += "\n" + key + "=" + clip(param_to_string(p));
    for (size_t i = 0; i < e.inputs.size(); ++i)
      if (auto* lit = std::get_if<Literal>(&e.inputs[i]))
        label += "\noperand " + std::to_string(i) + " = " + literal_str(*lit);
    if (!e.effects.empty()) {
      label += "\neffects:";
      for (auto& fx : e.effects) label += " " + fx;
    }
    return label;
  }

  /// Writes j's inputs, equations (bodies as clusters) and outputs; returns the first node id.
  std::string scope(const Jaxpr& j, int depth) {
    std::string first;
    auto keep_first = [&](const std::string& id) {
      if (first.empty()) first = id;
      return id;
    };
    for (auto& v : j.constvars) producer_[v] = keep_first(node(depth, "const " + name(v), "shape=ellipse"));
    for (auto& v : j.invars) producer_[v] = keep_first(node(depth, name(v), "shape=ellipse"));
    for (auto& e : j.eqns) {
      const std::string id = keep_first(node(depth, eqn_label(e), "shape=box"));
      std::unordered_set<Var, VarHash> seen;  // one edge per variable read
      for (auto& a : e.inputs)
        if (auto* v = std::get_if<Var>(&a); v && v->defined() && seen.insert(*v).second)
          edge(depth, source(depth, *v), id, *v);
      for (const SubJaxpr& sub : bodies_in_key_order(e)) {
        const std::string label = sub.label();
        const ClosedJaxprPtr& body = sub.jaxpr;
        const std::string cluster = "cluster_" + std::to_string(next_cluster_++);
        indent(depth);
        out_ << "subgraph " << cluster << " {\n";
        indent(depth + 1);
        out_ << "label=" << dot_quote((e.primitive ? e.primitive->name : "?") + ": " + label)
             << "; style=rounded; color=gray40;\n";
        std::string head = scope(*body->jaxpr, depth + 1);
        indent(depth);
        out_ << "}\n";
        indent(depth);
        out_ << id << " -> " << head << " [style=dashed, arrowhead=empty, lhead=" << cluster << "];\n";
      }
      for (auto& v : e.outputs)
        if (v.defined() && !v.is_dropvar()) producer_[v] = id;
    }
    for (size_t k = 0; k < j.outvars.size(); ++k) {
      const Atom& a = j.outvars[k];
      if (auto* lit = std::get_if<Literal>(&a)) {
        keep_first(node(depth, "out " + std::to_string(k) + " = " + literal_str(*lit), "shape=ellipse, style=dashed"));
        continue;
      }
      const std::string id = keep_first(node(depth, "out " + std::to_string(k), "shape=ellipse, style=dashed"));
      const Var& v = std::get<Var>(a);
      if (v.defined()) edge(depth, source(depth, v), id, v);
    }
    if (first.empty()) first = node(depth, "(empty)", "shape=plaintext");
    return first;
  }
};

}  // namespace

std::string to_dot(const Jaxpr& jaxpr, const DotOptions& opts) { return DotWriter(opts).run(jaxpr); }

std::string to_dot(const ClosedJaxpr& jaxpr, const DotOptions& opts) {
  return DotWriter(opts).run(*jaxpr.jaxpr);
}

}  // namespace minijax
