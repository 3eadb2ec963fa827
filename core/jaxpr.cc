// minijax IR data structures and the printer in JAX's text format.
// Owns variable identity, naming by order of binding, and the printing of params and literals.
#include "core/jaxpr.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <unordered_map>

#include "core/primitive.h"

namespace minijax {

static std::atomic<uint64_t> g_next_var_id{1};

Var::Var(ShapedArray aval) : n_(std::make_shared<Node>(Node{std::move(aval), g_next_var_id++, false})) {}

Var Var::dropvar(ShapedArray aval) {
  Var v(std::move(aval));
  v.n_->drop = true;
  return v;
}

const ShapedArray& atom_aval(const Atom& a) {
  if (auto* v = std::get_if<Var>(&a)) return v->aval();
  return std::get<Literal>(a).aval();
}

Var atom_var(const Atom& a) {
  if (auto* v = std::get_if<Var>(&a)) return *v;
  return Var();
}

std::vector<ShapedArray> Jaxpr::in_avals() const {
  std::vector<ShapedArray> r;
  for (auto& v : invars) r.push_back(v.aval());
  return r;
}

std::vector<ShapedArray> Jaxpr::out_avals() const {
  std::vector<ShapedArray> r;
  for (auto& a : outvars) r.push_back(atom_aval(a));
  return r;
}

namespace {

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  // Shortest round-tripping form.
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string literal_str(const Literal& l) {
  const Array& v = l.value;
  std::string val = dispatch_dtype(v.dtype(), [&]<class T>() -> std::string {
    const T x = *static_cast<const T*>(v.raw_data());
    if constexpr (std::is_same_v<T, bool>) return x ? "True" : "False";
    else if constexpr (std::is_same_v<T, bfloat16>) return float_repr(double(float(x)));
    else if constexpr (std::is_floating_point_v<T>) return float_repr(double(x));
    else return std::to_string(x);
  });
  return val + ":" + v.aval().str();
}

class Printer {
 public:
  std::string name(const Var& v) {
    if (v.is_dropvar()) return "_";
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    return "<unbound:" + std::to_string(v.id()) + ">";
  }
  std::string bind(const Var& v) {
    if (v.is_dropvar()) return "_:" + v.aval().str();
    std::string n = encode(next_++);
    names_[v] = n;
    return n + ":" + v.aval().str();
  }
  std::string atom(const Atom& a) {
    if (auto* v = std::get_if<Var>(&a)) return name(*v);
    return literal_str(std::get<Literal>(a));
  }
  std::string jaxpr(const Jaxpr& j, int indent);
  std::string param(const Param& p, int indent);

 private:
  static std::string encode(uint64_t i) {
    std::string s;
    do { s.insert(s.begin(), char('a' + i % 26)); i /= 26; } while (i > 0);
    // JAX's scheme: a..z, ba, bb, ... (digits in base 26 with 'a' = 0, first digit never 'a').
    return s;
  }
  std::unordered_map<Var, std::string, VarHash> names_;
  uint64_t next_ = 0;
};

std::string Printer::param(const Param& p, int indent) {
  if (auto* cj = std::get_if<ClosedJaxprPtr>(&p)) return jaxpr(*(*cj)->jaxpr, indent);
  if (auto* cjs = std::get_if<std::vector<ClosedJaxprPtr>>(&p)) {
    std::string s = "(\n";
    for (auto& c : *cjs) s += std::string(size_t(indent + 2), ' ') + jaxpr(*c->jaxpr, indent + 2) + "\n";
    return s + std::string(size_t(indent), ' ') + ")";
  }
  return param_to_string(p);
}

std::string Printer::jaxpr(const Jaxpr& j, int indent) {
  // Nested jaxprs name their variables independently, as JAX does.
  Printer inner;
  Printer& P = (indent == 0) ? *this : inner;
  std::string head = "{ lambda ";
  for (size_t i = 0; i < j.constvars.size(); ++i) head += (i ? " " : "") + P.bind(j.constvars[i]);
  head += "; ";
  for (size_t i = 0; i < j.invars.size(); ++i) head += (i ? " " : "") + P.bind(j.invars[i]);
  head += ". let";
  std::vector<std::string> lines;
  bool nested = false;
  for (auto& e : j.eqns) {
    std::string ins;
    for (auto& a : e.inputs) ins += " " + P.atom(a);
    std::string ps;
    if (!e.params.empty()) {
      ps = "[";
      bool first = true;
      for (auto& [k, v] : e.params.items()) {
        bool is_j = std::holds_alternative<ClosedJaxprPtr>(v) ||
                    std::holds_alternative<std::vector<ClosedJaxprPtr>>(v);
        nested |= is_j;
        if (is_j) ps += (first ? "\n" : "\n") + std::string(size_t(indent + 6), ' ');
        else ps += first ? "" : " ";
        ps += k + "=" + P.param(v, indent + 6);
        first = false;
      }
      ps += "]";
    }
    std::string outs;
    for (size_t i = 0; i < e.outputs.size(); ++i) outs += (i ? " " : "") + P.bind(e.outputs[i]);
    lines.push_back(outs + " = " + e.primitive->name + ps + ins);
  }
  std::string res = "(";
  for (size_t i = 0; i < j.outvars.size(); ++i) res += (i ? ", " : "") + P.atom(j.outvars[i]);
  if (j.outvars.size() == 1) res += ",";
  res += ")";
  std::string one = head;
  for (size_t i = 0; i < lines.size(); ++i) one += (i ? "; " : " ") + lines[i];
  one += " in " + res + " }";
  if (!nested && one.size() + size_t(indent) <= 80) return one;
  std::string pad(size_t(indent), ' ');
  std::string s = head + "\n";
  for (auto& l : lines) s += pad + "    " + l + "\n";
  s += pad + "  in " + res + " }";
  return s;
}

}  // namespace

std::string param_to_string(const Param& p) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) return v ? "True" : "False";
        else if constexpr (std::is_same_v<T, int64_t>) return std::to_string(v);
        else if constexpr (std::is_same_v<T, double>) return float_repr(v);
        else if constexpr (std::is_same_v<T, std::string>) return v;
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          std::string s = "(";
          for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
          if (v.size() == 1) s += ",";
          return s + ")";
        } else if constexpr (std::is_same_v<T, DType>) {
          static const char* np[] = {"bool", "int32", "uint32", "bfloat16", "float32", "float64",
                                     "float0", "token"};
          return np[int(v)];
        } else if constexpr (std::is_same_v<T, MemoryKind>) return memory_kind_name(v);
        else if constexpr (std::is_same_v<T, ClosedJaxprPtr>) return to_string(*v);
        else if constexpr (std::is_same_v<T, std::vector<ClosedJaxprPtr>>) {
          std::string s = "(";
          for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + to_string(*v[i]);
          return s + ")";
        } else {
          return v ? v->str() : "None";
        }
      },
      p);
}

bool param_equal(const Param& a, const Param& b) {
  if (a.index() != b.index()) return false;
  if (auto* x = std::get_if<ParamObjectPtr>(&a)) {
    auto& y = std::get<ParamObjectPtr>(b);
    if (!*x || !y) return *x == y;
    return (*x)->equals(*y);
  }
  if (auto* x = std::get_if<ClosedJaxprPtr>(&a))
    return *x == std::get<ClosedJaxprPtr>(b) || to_string(**x) == to_string(*std::get<ClosedJaxprPtr>(b));
  if (std::holds_alternative<std::vector<ClosedJaxprPtr>>(a)) return param_to_string(a) == param_to_string(b);
  return a == b;
}

std::string to_string(const Jaxpr& j) {
  Printer p;
  return p.jaxpr(j, 0);
}
std::string to_string(const ClosedJaxpr& j) { return to_string(*j.jaxpr); }
std::ostream& operator<<(std::ostream& os, const Jaxpr& j) { return os << to_string(j); }
std::ostream& operator<<(std::ostream& os, const ClosedJaxpr& j) { return os << to_string(j); }

}  // namespace minijax
