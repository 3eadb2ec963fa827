// minijax remat primitives: `checkpoint` (a plain call, registered by register_call_primitive) and
// `name` (checkpoint_name, an identity that tags a value). Owns the per-operand `prevent_cse` param.
#include "core/prevent_cse.h"
#include "core/param_reads.h"

#include <string>

#include "core/dce.h"
#include "core/parser.h"
#include "core/pjit.h"
#include "core/primitive.h"
#include "core/staging.h"
#include "core/trace.h"

namespace minijax {
namespace {

// prevent_cse as a tuple of bools: one flag per operand of the checkpoint equation.
class PreventCseParam : public ParamObject {
 public:
  explicit PreventCseParam(std::vector<bool> flags) : flags_(std::move(flags)) {}
  std::string str() const override {
    std::string s = "(";
    for (size_t i = 0; i < flags_.size(); ++i) s += std::string(i ? ", " : "") + (flags_[i] ? "True" : "False");
    return s + (flags_.size() == 1 ? ",)" : ")");
  }
  bool equals(const ParamObject& o) const override {
    auto* p = dynamic_cast<const PreventCseParam*>(&o);
    return p && p->flags_ == flags_;
  }
  const std::vector<bool>& flags() const { return flags_; }

 private:
  std::vector<bool> flags_;
};

// Reads back PreventCseParam::str() for param prevent_cse: `(True, False)`, `(True,)`, `()`.
ParamObjectPtr parse_prevent_cse(const std::string& key, const std::string& text) {
  if (key != "prevent_cse" || text.size() < 2 || text.front() != '(' || text.back() != ')') return nullptr;
  std::vector<bool> flags;
  size_t at = 1;
  const size_t end = text.size() - 1;
  while (at < end) {
    if (text.compare(at, 4, "True") == 0) flags.push_back(true), at += 4;
    else if (text.compare(at, 5, "False") == 0) flags.push_back(false), at += 5;
    else return nullptr;
    if (at < end && text[at] == ',') ++at;
    while (at < end && text[at] == ' ') ++at;
  }
  return std::make_shared<PreventCseParam>(std::move(flags));
}

Registrar reg([] {
  {
    // checkpoint: a plain call whose body has no constvars (closed-over values are operands),
    // with one prevent_cse flag per operand when a tuple; DCE keeps the flags of kept operands.
    CallSpec spec;
    spec.closed_name = "checkpointed jaxpr";
    spec.closed_hint = "closed-over values must be leading operands";
    spec.check = [](const Params& params, size_t n) { (void)prevent_cse_flags(params, n); };
    spec.prune_params = [](Params& out, const Params& in, const std::vector<bool>& used) {
      const std::vector<bool> cse = prevent_cse_flags(in, used.size());
      std::vector<bool> kept;
      for (size_t i = 0; i < used.size(); ++i)
        if (used[i]) kept.push_back(cse[i]);
      set_prevent_cse(out, in, kept);
    };
    register_call_primitive("checkpoint", spec);
    register_param_object_parser(parse_prevent_cse);
  }
  {
    auto& p = get_or_create_primitive("name");
    p.shape_rule = [](const std::vector<ShapedArray>& in, const Params& params) {
      if (in.size() != 1) throw TypeError("name takes one operand, got " + std::to_string(in.size()));
      if (!params.has("name")) throw ValueError("name needs a string parameter 'name'");
      (void)param_string(params, "name");
      return std::vector<ShapedArray>{in[0]};
    };
    p.impl = [](const std::vector<Array>& args, const Params&, const std::vector<ShapedArray>&) {
      return std::vector<Array>{args[0]};
    };
  }
});

}  // namespace

Param prevent_cse_param(const std::vector<bool>& per_operand) {
  return ParamObjectPtr(std::make_shared<PreventCseParam>(per_operand));
}

bool prevent_cse_per_operand(const Params& params) {
  if (!params.has("prevent_cse")) return false;
  const Param& v = param_at(params, "prevent_cse");
  if (auto* ints = std::get_if<std::vector<int64_t>>(&v)) return ints->empty();  // `()` as parsed
  auto* o = std::get_if<ParamObjectPtr>(&v);
  return o && dynamic_cast<const PreventCseParam*>(o->get());
}

std::vector<bool> prevent_cse_flags(const Params& params, size_t n) {
  if (!params.has("prevent_cse")) return std::vector<bool>(n, true);
  const Param& v = param_at(params, "prevent_cse");
  if (auto* b = std::get_if<bool>(&v)) return std::vector<bool>(n, *b);
  if (auto* ints = std::get_if<std::vector<int64_t>>(&v); ints && ints->empty() && n == 0) return {};
  auto* o = std::get_if<ParamObjectPtr>(&v);
  auto* t = o ? dynamic_cast<const PreventCseParam*>(o->get()) : nullptr;
  if (!t) throw TypeError("parameter 'prevent_cse' must be a bool or a tuple of bools");
  if (t->flags().size() != n)
    throw TypeError("parameter 'prevent_cse' has " + std::to_string(t->flags().size()) + " flags for " +
                    std::to_string(n) + " operands (one per operand)");
  return t->flags();
}

void set_prevent_cse(Params& out, const Params& in, const std::vector<bool>& per_operand) {
  if (prevent_cse_per_operand(in)) out.set("prevent_cse", prevent_cse_param(per_operand));
  else if (in.has("prevent_cse")) out.set("prevent_cse", param_at(in, "prevent_cse"));
}

namespace {

// Classes: checkpoint is a call that costs its body; `name` is a tag that moves nothing. Both
// are removed by inline_calls before lowering.
Registrar reg_checkpoint_classes([] {
  auto& p = get_or_create_primitive("checkpoint");
  set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
  p.cost = call_cost;
  p.inlined = true;
  auto& n = get_or_create_primitive("name");
  set_classes(n, OpClass::other, CostClass::data_movement, FusionClass::normal);
  n.inlined = true;
});

}  // namespace

}  // namespace minijax
