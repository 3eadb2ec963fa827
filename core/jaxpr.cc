// minijax IR data structures and the printer in JAX's text format.
// Owns variable identity, naming by order of binding, and the printing of params and literals.
#include "core/jaxpr.h"
#include "core/param_reads.h"

#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <algorithm>
#include <deque>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "core/pretty_printer.h"
#include "core/views/control_flow.h"

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

namespace {
// Moves the nested jaxprs that `eqns` alone owns into `pending` (their params are cleared).
void take_owned_bodies(std::vector<Eqn>& eqns, std::vector<JaxprPtr>& pending) {
  for (Eqn& e : eqns) {
    std::vector<ClosedJaxprPtr> bodies;
    for (auto& [k, v] : e.params.items()) {
      if (auto* cj = std::get_if<ClosedJaxprPtr>(&v)) bodies.push_back(*cj);
      else if (auto* cjs = std::get_if<std::vector<ClosedJaxprPtr>>(&v))
        bodies.insert(bodies.end(), cjs->begin(), cjs->end());
    }
    if (bodies.empty()) continue;
    e.params = Params();
    for (auto& cj : bodies)
      if (cj && cj.use_count() == 1 && cj->jaxpr && cj->jaxpr.use_count() == 1)
        // cj is ours alone, so is the ClosedJaxpr it points to (made non-const by make_shared).
        pending.push_back(std::move(const_cast<ClosedJaxpr&>(*cj).jaxpr));
  }
}
}  // namespace

Jaxpr::~Jaxpr() {
  std::vector<JaxprPtr> pending;
  take_owned_bodies(eqns, pending);
  while (!pending.empty()) {
    JaxprPtr p = std::move(pending.back());
    pending.pop_back();
    if (p.use_count() == 1) take_owned_bodies(const_cast<Jaxpr&>(*p).eqns, pending);
    // p's destructor runs here with its bodies already taken: one level of recursion at most.
  }
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

// Shortest decimal form that reads back to the same value of type T, in numpy's style
// (positional for 1e-4 <= |x| < 1e16, scientific otherwise; "2.0", "1e-05", "1e+16").
template <class T>
std::string shortest_repr(T d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  int prec = 1;
  for (; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, double(d));
    if (T(std::strtod(buf, nullptr)) == d) break;
  }
  double a = std::fabs(double(d));
  if (a != 0 && (a < 1e-4 || a >= 1e16)) {
    // buf is d.ddde[+-]XX; drop trailing zeros of the mantissa.
    std::string s = buf;
    size_t e = s.find('e');
    std::string mant = s.substr(0, e), ex = s.substr(e);
    if (mant.find('.') != std::string::npos) {
      while (mant.back() == '0') mant.pop_back();
      if (mant.back() == '.') mant.pop_back();
    }
    return mant + ex;
  }
  // Positional with just enough fractional digits.
  for (int frac = 0; frac <= 40; ++frac) {
    std::snprintf(buf, sizeof buf, "%.*f", frac, double(d));
    if (T(std::strtod(buf, nullptr)) == d) break;
  }
  std::string s = buf;
  if (s.find('.') == std::string::npos) s += ".0";
  return s;
}

// bfloat16 round-trips through its float value: the shortest float form that converts back
// to the same bfloat16 bits.
std::string bf16_repr(bfloat16 x) {
  float f = float(x);
  if (std::isnan(f) || std::isinf(f)) return shortest_repr(f);
  char buf[64];
  for (int prec = 1; prec <= 9; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, double(f));
    if (bfloat16(float(std::strtod(buf, nullptr))).bits == x.bits)
      return shortest_repr(float(std::strtod(buf, nullptr)));
  }
  return shortest_repr(f);
}

std::string literal_value_str(const Array& v) {
  // float0 (the tangent type of ints and bools) has a single value, the zero: no bytes to read.
  if (v.dtype() == DType::float0) return "0";
  return dispatch_dtype(v.dtype(), [&]<class T>() -> std::string {
    const T x = *static_cast<const T*>(v.raw_data());
    if constexpr (std::is_same_v<T, bool>) return x ? "True" : "False";
    else if constexpr (std::is_same_v<T, bfloat16>) return bf16_repr(x);
    else if constexpr (std::is_floating_point_v<T>) return shortest_repr(x);
    else return std::to_string(x);
  });
}

}  // namespace

std::string literal_str(const Literal& l) {
  return literal_value_str(l.value) + ":" + l.value.aval().str();
}

namespace {

// JAX's _encode_digits_alphabetic: a..z, ba, bb, ... (base 26, 'a' = 0).
std::string encode_name(uint64_t i) {
  std::string s;
  do { s.insert(s.begin(), char('a' + i % 26)); i /= 26; } while (i > 0);
  return s;
}

std::vector<const Jaxpr*> jaxprs_in_params(const Params& ps) {
  std::vector<const Jaxpr*> r;
  for (auto& [k, v] : ps.items()) {
    if (auto* cj = std::get_if<ClosedJaxprPtr>(&v)) {
      if (*cj && (*cj)->jaxpr) r.push_back((*cj)->jaxpr.get());
    } else if (auto* cjs = std::get_if<std::vector<ClosedJaxprPtr>>(&v)) {
      for (auto& c : *cjs)
        if (c && c->jaxpr) r.push_back(c->jaxpr.get());
    }
  }
  return r;
}

// Every jaxpr nested a multiple of this many levels deep is printed as a shared `let`.
constexpr size_t kSharedEveryLevels = 16;

// JAX's JaxprPpContext + pp_jaxpr & co (jax/_src/core.py): variable names are unique across
// the nested jaxprs of one printout and assigned in printing order; jaxprs referenced more
// than once (or nested ones with more than 10 equations) are printed once, first, as
// `let name = { lambda ... } in`.
class PpContext {
 public:
  std::unordered_map<Var, std::string, VarHash> names;
  std::set<std::string> shared_names;
  std::unordered_map<const Jaxpr*, std::string> shared;
  const Jaxpr* top = nullptr;
  std::vector<pp::Doc>* top_eqn_docs = nullptr;

  std::string name(const Var& v) {
    if (v.is_dropvar()) return "_";
    auto it = names.find(v);
    if (it != names.end()) return it->second;
    std::string n;
    do { n = encode_name(next_++); } while (shared_names.count(n));
    names.emplace(v, n);
    return n;
  }
  std::string atom(const Atom& a) {
    if (auto* v = std::get_if<Var>(&a)) return name(*v);
    return literal_str(std::get<Literal>(a));
  }
  // Names `for_vars` like `like_vars` (pjit's printing rule).
  void suggest_same_var_names(const std::vector<Var>& for_vars, const std::vector<Atom>& like) {
    if (for_vars.size() != like.size()) return;
    std::set<Var> used;
    for (size_t i = 0; i < for_vars.size(); ++i) {
      const Var* lv = std::get_if<Var>(&like[i]);
      const Var& fv = for_vars[i];
      if (!lv || used.count(*lv) || !fv.defined() || fv.is_dropvar() || names.count(fv)) continue;
      std::string n = name(*lv);
      // JAX would also copy "_" (an unused output): that text could not be read back.
      if (n == "_") continue;
      used.insert(*lv);
      names[fv] = n;
    }
  }
  pp::Doc vars(const std::vector<Atom>& vs, const std::string& sep, bool shapes) {
    std::vector<pp::Doc> items;
    for (auto& a : vs) {
      std::string s = atom(a);
      if (shapes) s += ":" + atom_aval(a).str();
      items.push_back(pp::text(s));
    }
    return pp::nest(2, pp::group(pp::join(pp::text(sep) + pp::group(pp::brk()), items)));
  }
  pp::Doc binders(const std::vector<Var>& vs) {
    return vars(std::vector<Atom>(vs.begin(), vs.end()), "", true);
  }
  pp::Doc jaxpr(const Jaxpr& j) {
    auto it = shared.find(&j);
    if (it != shared.end()) return pp::text(it->second);
    return skeleton(j);
  }
  pp::Doc skeleton(const Jaxpr& j);
  pp::Doc eqn(const Eqn& e);
  pp::Doc param(const Param& p);

 private:
  uint64_t next_ = 0;
};

pp::Doc PpContext::param(const Param& p) {
  if (auto* cj = std::get_if<ClosedJaxprPtr>(&p)) {
    if (*cj && (*cj)->jaxpr) return jaxpr(*(*cj)->jaxpr);
  } else if (auto* cjs = std::get_if<std::vector<ClosedJaxprPtr>>(&p)) {
    std::vector<pp::Doc> ds;
    for (auto& c : *cjs) ds.push_back(jaxpr(*c->jaxpr));
    return pp::group(pp::concat({pp::nest(2, pp::concat({pp::text("("), pp::brk(""),
                                                          pp::join(pp::brk(), ds)})),
                                 pp::brk(""), pp::text(")")}));
  }
  return pp::text(param_to_string(p));
}

pp::Doc PpContext::eqn(const Eqn& e) {
  const std::string& pname = e.primitive ? e.primitive->name : std::string("<null>");
  std::vector<std::string> order;
  for (auto& [k, v] : e.params.items()) order.push_back(k);
  if (e.primitive && is_pjit(*e.primitive)) {
    // JAX's _pjit_pp_rule: inner variables named like the operands/results, name= first.
    if (e.params.has("jaxpr")) {
      if (auto* cj = std::get_if<ClosedJaxprPtr>(&param_at(e.params, "jaxpr")); cj && *cj) {
        const Jaxpr& inner = *(*cj)->jaxpr;
        if (!shared.count(&inner)) {
          suggest_same_var_names(inner.invars, e.inputs);
          std::vector<Var> inner_outs;
          for (auto& a : inner.outvars) {
            if (auto* v = std::get_if<Var>(&a)) inner_outs.push_back(*v);
            else inner_outs.push_back(Var());  // a literal output is never renamed
          }
          suggest_same_var_names(inner_outs, std::vector<Atom>(e.outputs.begin(), e.outputs.end()));
        }
      }
    }
  }
  if (e.primitive && (is_pjit(*e.primitive) || is_custom_derivative_call(*e.primitive))) {
    // JAX prints name= first for these call primitives.
    auto it = std::find(order.begin(), order.end(), "name");
    if (it != order.end()) {
      order.erase(it);
      order.insert(order.begin(), "name");
    }
  }
  pp::Doc lhs = binders(e.outputs);
  std::vector<pp::Doc> rhs{pp::text(pname)};
  if (!order.empty()) {
    std::vector<pp::Doc> kvs;
    for (auto& k : order) kvs.push_back(pp::text(k + "=") + param(param_at(e.params, k)));
    rhs.push_back(pp::group(pp::concat(
        {pp::nest(2, pp::concat({pp::text("["), pp::brk(""), pp::join(pp::brk(), kvs)})),
         pp::brk(""), pp::text("]")})));
  }
  rhs.push_back(pp::text(" ") + vars(e.inputs, "", false));
  if (e.outputs.empty()) return pp::concat(rhs);
  std::vector<pp::Doc> all{lhs, pp::text(" = ")};
  all.insert(all.end(), rhs.begin(), rhs.end());
  return pp::concat(all);
}

pp::Doc PpContext::skeleton(const Jaxpr& j) {
  pp::Doc constvars = binders(j.constvars);
  pp::Doc invars = binders(j.invars);
  std::vector<pp::Doc> es;
  for (auto& e : j.eqns) es.push_back(eqn(e));
  if (&j == top && top_eqn_docs) *top_eqn_docs = es;
  pp::Doc eqns = pp::join(pp::brk("; "), es);
  pp::Doc outvars = pp::concat({pp::text("("), vars(j.outvars, ",", false),
                                pp::text(j.outvars.size() == 1 ? ",)" : ")")});
  return pp::group(pp::nest(2, pp::concat({pp::text("{ "), pp::text("lambda "), constvars,
                                           pp::text("; "), invars, pp::text(". "), pp::text("let"),
                                           pp::nest(2, pp::brk() + eqns), pp::brk(),
                                           pp::text("in "), outvars}))) +
         pp::text(" }");
}

// JAX's pp_toplevel_jaxpr. If eqn_docs is given, it receives the documents of top's equations.
std::string print_toplevel(const Jaxpr& top, std::vector<pp::Doc>* eqn_docs = nullptr) {
  PpContext ctx;
  // Outputs of top-level equations that nothing uses print as `_` (JAX's _dropvars).
  {
    std::unordered_set<Var, VarHash> used;
    for (auto& a : top.outvars)
      if (auto* v = std::get_if<Var>(&a)) used.insert(*v);
    for (auto e = top.eqns.rbegin(); e != top.eqns.rend(); ++e) {
      for (auto& v : e->outputs)
        if (v.defined() && !used.count(v)) ctx.names[v] = "_";
      for (auto& a : e->inputs)
        if (auto* v = std::get_if<Var>(&a)) used.insert(*v);
    }
  }
  // Count how often each jaxpr is reached (breadth first, as JAX).
  std::unordered_map<const Jaxpr*, std::string> names;
  std::unordered_map<const Jaxpr*, int> counts;
  std::unordered_map<const Jaxpr*, std::vector<const Jaxpr*>> subs_of;  // nested jaxprs, in order
  std::vector<const Jaxpr*> order;
  std::deque<std::pair<const Jaxpr*, size_t>> queue{{&top, 0}};  // (jaxpr, nesting depth)
  while (!queue.empty()) {
    auto [j, depth] = queue.front();
    queue.pop_front();
    const bool first = !counts.count(j);
    if (first) order.push_back(j);
    counts[j] += 1;
    if (j != &top && j->eqns.size() > 10) counts[j] += 1;
    // Every 16th level of a nest is shared too (printed once as `let`): that bounds the
    // printer's (and the parser's) recursion however deep the nest.
    if (first && j != &top && depth % kSharedEveryLevels == 0) counts[j] += 1;
    for (auto& e : j->eqns) {
      auto subs = jaxprs_in_params(e.params);
      const std::string* nm = nullptr;
      if (e.params.has("name")) nm = std::get_if<std::string>(&param_at(e.params, "name"));
      for (auto* s : subs) {
        queue.push_back({s, depth + 1});
        if (first) subs_of[j].push_back(s);
        if (nm) {
          std::string n = *nm;
          while (!n.empty() && (n.front() == '<' || n.front() == '>')) n.erase(n.begin());
          while (!n.empty() && (n.back() == '<' || n.back() == '>')) n.pop_back();
          // The label must read back as one name (the parser's identifiers): fusion.0 -> fusion_0.
          for (char& ch : n)
            if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') ch = '_';
          if (!n.empty() && std::isdigit(static_cast<unsigned char>(n.front()))) n.insert(n.begin(), '_');
          names.emplace(s, n);
        }
      }
    }
  }
  // Shared jaxprs in dependency order: each after the shared jaxprs nested in it (an iterative
  // depth-first post-order from each, in breadth-first order), so the text reads back in order.
  std::vector<const Jaxpr*> shared_order;
  {
    std::unordered_set<const Jaxpr*> done;
    for (auto* root : order) {
      if (counts[root] == 1 || done.count(root)) continue;
      std::vector<std::pair<const Jaxpr*, size_t>> stack{{root, 0}};  // (jaxpr, next child)
      done.insert(root);
      while (!stack.empty()) {
        auto& [j, next] = stack.back();
        const auto& kids = subs_of[j];
        if (next < kids.size()) {
          const Jaxpr* k = kids[next++];
          if (done.insert(k).second) stack.push_back({k, 0});
          continue;
        }
        if (counts[j] > 1 && j != &top) shared_order.push_back(j);
        stack.pop_back();
      }
    }
  }
  std::map<std::string, int> name_counts;
  std::vector<std::pair<std::string, const Jaxpr*>> shared;
  for (auto* j : shared_order) {
    auto it = names.find(j);
    std::string name = it == names.end() ? "jaxpr" : it->second;
    int c = name_counts[name];
    if (c > 0) {
      name_counts[name] += 1;
      name += std::to_string(c);
    }
    name_counts[name] += 1;
    ctx.shared_names.insert(name);
    ctx.shared[j] = name;
    shared.emplace_back(name, j);
  }
  std::vector<pp::Doc> docs;
  for (auto& [name, j] : shared)
    docs.push_back(pp::concat({pp::text("let "), pp::text(name), pp::text(" = "),
                               ctx.skeleton(*j), pp::text(" in"), pp::brk()}));
  ctx.top_eqn_docs = eqn_docs;
  ctx.top = &top;
  docs.push_back(ctx.jaxpr(top));
  return pp::format(pp::concat(docs), 80);
}

}  // namespace

std::string param_to_string(const Param& p) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) return v ? "True" : "False";
        else if constexpr (std::is_same_v<T, int64_t>) return std::to_string(v);
        else if constexpr (std::is_same_v<T, double>) return shortest_repr(v);
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

std::string to_string(const Jaxpr& j) { return print_toplevel(j); }
std::string eqn_to_string(const Jaxpr& j, size_t i) {
  std::vector<pp::Doc> docs;
  print_toplevel(j, &docs);
  if (i >= docs.size())
    throw IndexError("eqn_to_string: equation " + std::to_string(i) + " of a jaxpr with " +
                     std::to_string(docs.size()) + " equations");
  return pp::format(pp::nest(2, docs[i]), 80);
}

std::string to_string(const ClosedJaxpr& j) { return to_string(*j.jaxpr); }
std::ostream& operator<<(std::ostream& os, const Jaxpr& j) { return os << to_string(j); }
std::ostream& operator<<(std::ostream& os, const ClosedJaxpr& j) { return os << to_string(j); }

}  // namespace minijax
