// minijax compiler pass simplify (declared in jit/passes/simplify.h).
// Owns the rewrite table (keyed by primitive), constant folding and the CSE value table.
#include "jit/passes/simplify.h"

#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "core/bodies.h"
#include "core/dce.h"
#include "core/primitive.h"
#include "core/views/array_ops.h"
#include "core/views/windowed.h"

namespace minijax {
namespace {

using Env = std::unordered_map<Var, Atom, VarHash>;

Atom subst(const Env& env, const Atom& a) {
  if (auto* v = std::get_if<Var>(&a)) {
    auto it = env.find(*v);
    if (it != env.end()) return it->second;
  }
  return a;
}

/// The exact identity of a literal: aval (weak type and memory kind included) and its bytes.
std::string literal_key(const Literal& l) {
  const ShapedArray& a = l.aval();
  std::string k = "L" + a.str() + (a.weak_type ? "w" : "") + memory_kind_name(a.memory_kind) + ":";
  const auto* p = static_cast<const unsigned char*>(l.value.raw_data());
  static const char* hex = "0123456789abcdef";
  for (int64_t i = 0; i < a.nbytes(); ++i) k += {hex[p[i] >> 4], hex[p[i] & 15]};
  return k;
}

std::string atom_key(const Atom& a) {
  if (auto* v = std::get_if<Var>(&a)) return "v" + std::to_string(v->id());
  return literal_key(std::get<Literal>(a));
}

bool same_atom(const Atom& a, const Atom& b) { return atom_key(a) == atom_key(b); }

/// Params equal for CSE: structurally equal, and nested jaxprs with constants the same object
/// (the printed form does not show constant values).
bool cse_params_equal(const Params& a, const Params& b) {
  if (!(a == b)) return false;
  for (auto& [k, v] : a.items())
    if (auto* cj = std::get_if<ClosedJaxprPtr>(&v))
      if (*cj && !(*cj)->consts.empty() && *cj != std::get<ClosedJaxprPtr>(b.items().at(k))) return false;
  return true;
}

/// What a rewrite rule says about one equation.
struct Rewrite {
  std::optional<Atom> identity;  ///< the single output equals this atom
  std::optional<Eqn> replace;    ///< an equivalent equation
};
/// The simplifier's view of already emitted equations: the producer of a variable, if any.
using ProducerFn = std::function<const Eqn*(const Atom&)>;
using RewriteRule = std::function<Rewrite(const Eqn&, const ProducerFn&)>;

const ShapedArray& in_aval(const Eqn& e, size_t i) { return atom_aval(e.inputs[i]); }

Rewrite same(const Eqn& e, size_t operand) { return Rewrite{e.inputs[operand], std::nullopt}; }

Eqn with_operand(const Eqn& e, Atom a) {
  Eqn n = e;
  n.inputs = {std::move(a)};
  return n;
}

bool is_literal_one(const Atom& a) {
  auto* l = std::get_if<Literal>(&a);
  if (!l || l->aval().ndim() != 0) return false;
  return dispatch_dtype(l->aval().dtype, [&]<class T>() -> bool {
    if constexpr (std::is_same_v<T, bool>) return false;
    else if constexpr (std::is_same_v<T, bfloat16>) return float(*static_cast<const T*>(l->value.raw_data())) == 1.0f;
    else return double(*static_cast<const T*>(l->value.raw_data())) == 1.0;
  });
}

/// Whether literal `a` is the identity of the windowed reduction's monoid: any zero for a sum
/// (the sum starts at +0, so adding a zero never changes a bit), -inf for a float max, +inf for a
/// float min.
bool is_window_identity(const Atom& a, WindowMonoid m) {
  auto* l = std::get_if<Literal>(&a);
  if (!l || l->aval().ndim() != 0 || l->aval().dtype == DType::bool_) return false;
  const double v = dispatch_dtype(l->aval().dtype, [&]<class T>() -> double {
    if constexpr (std::is_same_v<T, bool>) return 1.0;
    else if constexpr (std::is_same_v<T, bfloat16>) return double(float(*static_cast<const T*>(l->value.raw_data())));
    else return double(*static_cast<const T*>(l->value.raw_data()));
  });
  const bool is_float = is_floating(l->aval().dtype);
  switch (m) {
    case WindowMonoid::sum: return v == 0.0;
    case WindowMonoid::max: return is_float && v == -std::numeric_limits<double>::infinity();
    default: return is_float && v == std::numeric_limits<double>::infinity();
  }
}

/// reduce_window_sum/max/min of `pad` by the monoid's identity is the windowed reduction of the
/// pad's operand with the pad's edges added to its padding and its interior padding as base
/// dilation (both filled with the identity, as the pad was; XLA's algebraic simplifier folds a
/// pad into a reduce-window alike). JAX's transpose of reduce_window_sum is such a pair, so the
/// gradient of an average pool becomes one windowed sum of the cotangent itself.
Rewrite fold_pad_into_window(const Eqn& e, const ProducerFn& prod) {
  const Eqn* p = prod(e.inputs[0]);
  if (!p || !PadParams::is(*p) || !is_window_identity(p->inputs[1], window_monoid(e))) return {};
  ReduceWindowMonoidParams w = reduce_window_monoid_params(e);
  const std::vector<lax::PadConfig> pads = pad_params(*p).padding_config;
  for (size_t i = 0; i < pads.size(); ++i)
    if (w.window.base_dilation[i] != 1 || pads[i].low < 0 || pads[i].high < 0) return {};
  for (size_t i = 0; i < pads.size(); ++i) {
    w.window.padding[2 * i] += pads[i].low;
    w.window.padding[2 * i + 1] += pads[i].high;
    w.window.base_dilation[i] = pads[i].interior + 1;
  }
  Eqn n = with_operand(e, p->inputs[0]);
  n.params = w.to_params();
  return {std::nullopt, n};
}

/// The bit-exact rewrite rules, keyed by primitive.
const std::map<std::string, RewriteRule>& rewrite_rules() {
  static const std::map<std::string, RewriteRule> t = {
      {"broadcast_in_dim",
       [](const Eqn& e, const ProducerFn& prod) -> Rewrite {
         BroadcastInDimParams outer = broadcast_in_dim_params(e);
         if (in_aval(e, 0).shape == outer.shape) return same(e, 0);
         const Eqn* p = prod(e.inputs[0]);
         if (!p || p->primitive != e.primitive) return {};
         const auto inner = broadcast_in_dim_params(*p).broadcast_dimensions;
         std::vector<int64_t> dims;
         for (int64_t d : inner) dims.push_back(outer.broadcast_dimensions[size_t(d)]);
         Eqn n = with_operand(e, p->inputs[0]);
         outer.broadcast_dimensions = dims;
         n.params = outer.to_params();
         return {std::nullopt, n};
       }},
      {"transpose",
       [](const Eqn& e, const ProducerFn& prod) -> Rewrite {
         auto identity = [](const std::vector<int64_t>& p) {
           for (size_t i = 0; i < p.size(); ++i)
             if (p[i] != int64_t(i)) return false;
           return true;
         };
         const auto perm = transpose_params(e).permutation;
         if (identity(perm)) return same(e, 0);
         const Eqn* p = prod(e.inputs[0]);
         if (!p || p->primitive != e.primitive) return {};
         const auto inner = transpose_params(*p).permutation;
         std::vector<int64_t> comp;
         for (int64_t d : perm) comp.push_back(inner[size_t(d)]);
         if (identity(comp)) return same(*p, 0);
         Eqn n = with_operand(e, p->inputs[0]);
         n.params = TransposeParams{comp}.to_params();
         return {std::nullopt, n};
       }},
      {"reshape",
       [](const Eqn& e, const ProducerFn& prod) -> Rewrite {
         if (in_aval(e, 0).shape == e.outputs[0].aval().shape) return same(e, 0);
         const Eqn* p = prod(e.inputs[0]);
         if (!p || p->primitive != e.primitive) return {};
         if (atom_aval(p->inputs[0]).shape == e.outputs[0].aval().shape) return same(*p, 0);
         return {std::nullopt, with_operand(e, p->inputs[0])};
       }},
      {"convert_element_type",
       [](const Eqn& e, const ProducerFn&) -> Rewrite {
         const ShapedArray& x = in_aval(e, 0);
         const ConvertElementTypeParams c = convert_element_type_params(e);
         if (x.dtype == c.new_dtype && x.weak_type == c.weak_type)
           return same(e, 0);
         return {};
       }},
      {"stop_gradient", [](const Eqn& e, const ProducerFn&) -> Rewrite { return same(e, 0); }},
      {"select_n",
       [](const Eqn& e, const ProducerFn&) -> Rewrite {
         if (e.inputs.size() == 2) return same(e, 1);
         return {};
       }},
      {"add_any",
       [](const Eqn& e, const ProducerFn&) -> Rewrite {
         if (in_aval(e, 0).dtype == DType::float0) return {};
         Eqn n = e;
         n.primitive = &primitive("add");
         return {std::nullopt, n};
       }},
      {"reduce_window_sum", fold_pad_into_window},
      {"reduce_window_max", fold_pad_into_window},
      {"reduce_window_min", fold_pad_into_window},
      {"mul",
       [](const Eqn& e, const ProducerFn&) -> Rewrite {
         if (e.inputs.size() != 2) return {};
         if (is_literal_one(e.inputs[1])) return same(e, 0);
         if (is_literal_one(e.inputs[0])) return same(e, 1);
         return {};
       }},
  };
  return t;
}

/// Whether an equation may be evaluated now: pure array math on literals with rank-0 results.
bool foldable(const Eqn& e) {
  if (e.primitive->op_class == OpClass::other || eqn_has_effects(e) || has_bodies(e.params)) return false;
  for (auto& a : e.inputs)
    if (!std::holds_alternative<Literal>(a)) return false;
  for (auto& o : e.outputs) {
    const ShapedArray& a = o.aval();
    if (a.ndim() != 0 || a.dtype == DType::float0 || a.is_token()) return false;
  }
  return !e.outputs.empty();
}

/// The outputs of a foldable equation as literals, or nullopt when evaluating fails or gives
/// other avals (the equation is then kept and fails, if at all, when the program runs).
std::optional<std::vector<Literal>> fold(const Eqn& e) {
  std::vector<Array> args;
  std::vector<ShapedArray> in;
  for (auto& a : e.inputs) {
    args.push_back(std::get<Literal>(a).value);
    in.push_back(atom_aval(a));
  }
  try {
    auto out_avals = abstract_eval(*e.primitive, in, e.params, std::source_location::current());
    auto outs = e.primitive->impl(args, e.params, out_avals);
    if (outs.size() != e.outputs.size()) return std::nullopt;
    std::vector<Literal> r;
    for (size_t i = 0; i < outs.size(); ++i) {
      if (!outs[i].is_concrete() || !(outs[i].aval() == e.outputs[i].aval())) return std::nullopt;
      r.push_back(Literal{outs[i]});
    }
    return r;
  } catch (const Error&) {
    return std::nullopt;
  }
}

/// Whether a replacement equation keeps every output aval exactly (weak type included).
bool keeps_avals(const Eqn& n, const Eqn& old) {
  std::vector<ShapedArray> in;
  for (auto& a : n.inputs) in.push_back(atom_aval(a));
  try {
    auto out = abstract_eval(*n.primitive, in, n.params, std::source_location::current());
    if (out.size() != old.outputs.size()) return false;
    for (size_t i = 0; i < out.size(); ++i)
      if (!(out[i] == old.outputs[i].aval())) return false;
    return true;
  } catch (const Error&) {
    return false;
  }
}

class Simplifier {
 public:
  Jaxpr run(const Jaxpr& j) {
    Jaxpr r;
    r.constvars = j.constvars;
    r.invars = j.invars;
    r.effects = j.effects;
    for (const Eqn& e : j.eqns) step(e);
    r.eqns = std::move(out_);
    for (auto& a : j.outvars) r.outvars.push_back(subst(env_, a));
    auto [pruned, used] = dce_jaxpr(r, std::vector<bool>(r.outvars.size(), true), true);
    return pruned;
  }

 private:
  void step(const Eqn& orig) {
    Eqn e = orig;
    for (auto& a : e.inputs) a = subst(env_, a);
    if (has_bodies(e.params)) e.params = map_bodies(e.params, [](const Jaxpr& b) { return simplify(b); });
    if (foldable(e)) {
      if (auto lits = fold(e)) {
        for (size_t i = 0; i < lits->size(); ++i) env_[e.outputs[i]] = (*lits)[i];
        return;
      }
    }
    if (apply_rewrites(e)) return;
    if (merge_common(e)) return;
    for (size_t i = 0; i < e.outputs.size(); ++i) producer_[e.outputs[i]] = out_.size();
    out_.push_back(std::move(e));
  }

  // Rewrites e in place until no rule applies; true if it became an identity (substituted).
  bool apply_rewrites(Eqn& e) {
    ProducerFn prod = [this](const Atom& a) -> const Eqn* {
      auto* v = std::get_if<Var>(&a);
      if (!v) return nullptr;
      auto it = producer_.find(*v);
      return it == producer_.end() ? nullptr : &out_[it->second];
    };
    for (int round = 0; round < 8; ++round) {
      auto rule = rewrite_rules().find(e.primitive->name);
      if (rule == rewrite_rules().end() || e.outputs.size() != 1 || eqn_has_effects(e)) return false;
      Rewrite rw = rule->second(e, prod);
      if (rw.identity) {
        if (!(atom_aval(*rw.identity) == e.outputs[0].aval())) return false;
        env_[e.outputs[0]] = *rw.identity;
        return true;
      }
      if (!rw.replace || !keeps_avals(*rw.replace, e)) return false;
      rw.replace->outputs = e.outputs;
      e = std::move(*rw.replace);
    }
    return false;
  }

  // Merges e into an equal earlier equation; true if merged.
  bool merge_common(const Eqn& e) {
    if (e.outputs.empty() || eqn_has_effects(e) || e.primitive->never_merged) return false;
    std::string key = e.primitive->name + "[";
    for (auto& [k, v] : e.params.items()) key += k + "=" + param_to_string(v) + " ";
    key += "]";
    for (auto& a : e.inputs) key += " " + atom_key(a);
    auto& cands = table_[key];
    for (size_t idx : cands) {
      Eqn& old = out_[idx];
      if (old.primitive != e.primitive || old.inputs.size() != e.inputs.size() ||
          old.outputs.size() != e.outputs.size() || !cse_params_equal(old.params, e.params))
        continue;
      bool same_in = true;
      for (size_t i = 0; i < e.inputs.size() && same_in; ++i) same_in = same_atom(old.inputs[i], e.inputs[i]);
      if (!same_in) continue;
      for (size_t i = 0; i < e.outputs.size(); ++i) {
        if (e.outputs[i].is_dropvar()) continue;
        if (old.outputs[i].is_dropvar()) {  // the earlier equation now defines this value
          old.outputs[i] = e.outputs[i];
          producer_[e.outputs[i]] = idx;
        } else {
          env_[e.outputs[i]] = old.outputs[i];
        }
      }
      return true;
    }
    cands.push_back(out_.size());
    return false;
  }

  Env env_;
  std::vector<Eqn> out_;
  std::unordered_map<Var, size_t, VarHash> producer_;
  std::unordered_map<std::string, std::vector<size_t>> table_;
};

}  // namespace

Jaxpr simplify(const Jaxpr& j) { return Simplifier{}.run(j); }

}  // namespace minijax
