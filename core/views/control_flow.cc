// minijax typed params of scan, while, cond, the plain calls and name: reads from and writes to
// Params, and the params checks registered on each primitive.
#include "core/views/control_flow.h"
#include "core/param_reads.h"

#include <set>

namespace minijax {
namespace {

template <class T>
const T& req(const Params& p, const std::string& k, const char* tname) {
  const Param& v = param_at(p, k);  // ValueError "missing parameter 'k'"
  if (auto* x = std::get_if<T>(&v)) return *x;
  throw ValueError("parameter '" + k + "' is not of type " + tname);
}
template <class T>
std::optional<T> opt(const Params& p, const std::string& k, const char* tname) {
  if (!p.has(k)) return std::nullopt;
  return req<T>(p, k, tname);
}
ClosedJaxprPtr req_jaxpr(const Params& p, const std::string& k) {
  const ClosedJaxprPtr& j = req<ClosedJaxprPtr>(p, k, "jaxpr");
  if (!j || !j->jaxpr) throw ValueError("parameter '" + k + "' is empty");
  return j;
}
int64_t req_count(const Params& p, const std::string& k) {
  int64_t v = req<int64_t>(p, k, "int");
  if (v < 0) throw ValueError("parameter '" + k + "' must be >= 0, got " + std::to_string(v));
  return v;
}
// Params of `p` whose keys are not in `typed`.
Params others(const Params& p, std::initializer_list<const char*> typed) {
  std::set<std::string> t(typed.begin(), typed.end());
  Params o;
  for (auto& [k, v] : p.items())
    if (!t.count(k)) o.set(k, v);
  return o;
}

const Primitive* scan_p() { static const Primitive* p = &get_or_create_primitive("scan"); return p; }
const Primitive* while_p() { static const Primitive* p = &get_or_create_primitive("while"); return p; }
const Primitive* cond_p() { static const Primitive* p = &get_or_create_primitive("cond"); return p; }
const Primitive* name_p() { static const Primitive* p = &get_or_create_primitive("name"); return p; }

}  // namespace

// ---- scan
const Primitive& ScanParams::primitive() { return *scan_p(); }
bool ScanParams::is(const Primitive& p) { return &p == scan_p(); }
bool ScanParams::is(const Eqn& e) { return e.primitive == scan_p(); }
ScanParams ScanParams::from(const Params& p) {
  return views::read_view("scan", [&] {
    ScanParams s;
    s.jaxpr = req_jaxpr(p, "jaxpr");
    s.num_consts = req_count(p, "num_consts");
    s.num_carry = req_count(p, "num_carry");
    s.length = req_count(p, "length");
    s.reverse = req<bool>(p, "reverse", "bool");
    s.unroll = opt<int64_t>(p, "unroll", "int");
    s.linear = opt<std::vector<int64_t>>(p, "linear", "int tuple");
    s.split_transpose = opt<bool>(p, "_split_transpose", "bool");
    s.other = others(p, {"jaxpr", "num_consts", "num_carry", "length", "reverse", "unroll", "linear",
                         "_split_transpose"});
    return s;
  });
}
Params ScanParams::to_params() const {
  Params p = other;
  p.set("jaxpr", jaxpr);
  p.set("num_consts", num_consts);
  p.set("num_carry", num_carry);
  p.set("length", length);
  p.set("reverse", reverse);
  if (unroll) p.set("unroll", *unroll);
  if (linear) p.set("linear", *linear);
  if (split_transpose) p.set("_split_transpose", *split_transpose);
  return p;
}
ScanParams scan_params(const Eqn& e) {
  if (!ScanParams::is(e)) views::wrong_primitive("scan", e);
  return ScanParams::from(e.params);
}

// ---- while
const Primitive& WhileParams::primitive() { return *while_p(); }
bool WhileParams::is(const Primitive& p) { return &p == while_p(); }
bool WhileParams::is(const Eqn& e) { return e.primitive == while_p(); }
WhileParams WhileParams::from(const Params& p) {
  return views::read_view("while", [&] {
    WhileParams w;
    w.cond_jaxpr = req_jaxpr(p, "cond_jaxpr");
    w.body_jaxpr = req_jaxpr(p, "body_jaxpr");
    w.cond_nconsts = req_count(p, "cond_nconsts");
    w.body_nconsts = req_count(p, "body_nconsts");
    w.other = others(p, {"cond_jaxpr", "body_jaxpr", "cond_nconsts", "body_nconsts"});
    return w;
  });
}
Params WhileParams::to_params() const {
  Params p = other;
  p.set("cond_jaxpr", cond_jaxpr);
  p.set("body_jaxpr", body_jaxpr);
  p.set("cond_nconsts", cond_nconsts);
  p.set("body_nconsts", body_nconsts);
  return p;
}
WhileParams while_params(const Eqn& e) {
  if (!WhileParams::is(e)) views::wrong_primitive("while", e);
  return WhileParams::from(e.params);
}

// ---- cond
const Primitive& CondParams::primitive() { return *cond_p(); }
bool CondParams::is(const Primitive& p) { return &p == cond_p(); }
bool CondParams::is(const Eqn& e) { return e.primitive == cond_p(); }
CondParams CondParams::from(const Params& p) {
  return views::read_view("cond", [&] {
    CondParams c;
    c.branches = req<std::vector<ClosedJaxprPtr>>(p, "branches", "jaxpr tuple");
    for (auto& b : c.branches)
      if (!b || !b->jaxpr) throw ValueError("parameter 'branches' holds an empty jaxpr");
    c.other = others(p, {"branches"});
    return c;
  });
}
Params CondParams::to_params() const {
  Params p = other;
  p.set("branches", branches);
  return p;
}
CondParams cond_params(const Eqn& e) {
  if (!CondParams::is(e)) views::wrong_primitive("cond", e);
  return CondParams::from(e.params);
}

// ---- plain calls
bool CallParams::is(const Primitive& p) { return p.plain_call(); }
bool CallParams::is(const Eqn& e) { return e.primitive && e.primitive->plain_call(); }
CallParams CallParams::from(const Primitive& prim, const Params& p) {
  return views::read_view(prim.name.c_str(), [&] {
    if (!prim.plain_call() || prim.body_params.size() != 1)
      throw ValueError("not a plain call primitive");
    CallParams c;
    c.body_key = prim.body_params[0];
    c.jaxpr = req_jaxpr(p, c.body_key);
    c.name = opt<std::string>(p, "name", "string");
    c.differentiated = opt<bool>(p, "differentiated", "bool");
    if (p.has("prevent_cse")) c.prevent_cse = param_at(p, "prevent_cse");
    // A policy object; a parsed jaxpr holds its printed name (text), kept untyped in `other`.
    const bool policy_text = p.has("policy") && std::holds_alternative<std::string>(param_at(p, "policy"));
    if (!policy_text) c.policy = opt<ParamObjectPtr>(p, "policy", "object");
    c.kind = opt<std::string>(p, "kind", "string");
    c.num_consts = opt<int64_t>(p, "num_consts", "int");
    c.symbolic_zeros = opt<bool>(p, "symbolic_zeros", "bool");
    if (p.has("jvp")) c.jvp = req<ParamObjectPtr>(p, "jvp", "object");
    if (p.has("fwd")) c.fwd = req<ParamObjectPtr>(p, "fwd", "object");
    if (p.has("bwd")) c.bwd = req<ParamObjectPtr>(p, "bwd", "object");
    Params o = others(p, {"name", "differentiated", "prevent_cse", "policy", "kind", "num_consts",
                          "symbolic_zeros", "jvp", "fwd", "bwd"});
    c.other = Params{};
    for (auto& [k, v] : o.items())
      if (k != c.body_key) c.other.set(k, v);
    if (policy_text) c.other.set("policy", param_at(p, "policy"));
    return c;
  });
}
Params CallParams::to_params() const {
  Params p = other;
  p.set(body_key, jaxpr);
  if (name) p.set("name", *name);
  if (differentiated) p.set("differentiated", *differentiated);
  if (prevent_cse) p.set("prevent_cse", *prevent_cse);
  if (policy) p.set("policy", *policy);
  if (kind) p.set("kind", *kind);
  if (num_consts) p.set("num_consts", *num_consts);
  if (symbolic_zeros) p.set("symbolic_zeros", *symbolic_zeros);
  if (jvp) p.set("jvp", jvp);
  if (fwd) p.set("fwd", fwd);
  if (bwd) p.set("bwd", bwd);
  return p;
}
CallParams call_params(const Eqn& e) {
  if (!CallParams::is(e)) views::wrong_primitive("call", e);
  return CallParams::from(*e.primitive, e.params);
}

const Primitive& checkpoint_primitive() {
  static const Primitive* c = &get_or_create_primitive("checkpoint");
  return *c;
}
CallParams checkpoint_params(const Params& p) { return CallParams::from(checkpoint_primitive(), p); }

const Primitive& custom_jvp_call_primitive() {
  static const Primitive* c = &get_or_create_primitive("custom_jvp_call");
  return *c;
}
const Primitive& custom_vjp_call_primitive() {
  static const Primitive* c = &get_or_create_primitive("custom_vjp_call");
  return *c;
}
CallParams custom_jvp_call_params(const Params& p) { return CallParams::from(custom_jvp_call_primitive(), p); }
CallParams custom_vjp_call_params(const Params& p) { return CallParams::from(custom_vjp_call_primitive(), p); }

// ---- name (checkpoint_name)
const Primitive& CheckpointNameParams::primitive() { return *name_p(); }
bool CheckpointNameParams::is(const Primitive& p) { return &p == name_p(); }
bool CheckpointNameParams::is(const Eqn& e) { return e.primitive == name_p(); }
CheckpointNameParams CheckpointNameParams::from(const Params& p) {
  return views::read_view("name", [&] {
    CheckpointNameParams n;
    n.name = req<std::string>(p, "name", "string");
    n.other = others(p, {"name"});
    return n;
  });
}
Params CheckpointNameParams::to_params() const {
  Params p = other;
  p.set("name", name);
  return p;
}
CheckpointNameParams checkpoint_name_params(const Eqn& e) {
  if (!CheckpointNameParams::is(e)) views::wrong_primitive("name", e);
  return CheckpointNameParams::from(e.params);
}

bool is_checkpoint(const Primitive& p) { return &p == &checkpoint_primitive(); }
bool is_fusion(const Primitive& p) {
  static const Primitive* c = &get_or_create_primitive("fusion");
  return &p == c;
}
bool is_pjit(const Primitive& p) {
  static const Primitive* c = &get_or_create_primitive("pjit");
  return &p == c;
}
bool is_closed_call(const Primitive& p) {
  static const Primitive* c = &get_or_create_primitive("closed_call");
  return &p == c;
}

bool is_custom_derivative_call(const Primitive& p) {
  return &p == &custom_jvp_call_primitive() || &p == &custom_vjp_call_primitive();
}

namespace {
Registrar reg_checks([] {
  get_or_create_primitive("scan").check_params = [](const Params& p) { return ScanParams::from(p).to_params(); };
  get_or_create_primitive("while").check_params = [](const Params& p) { return WhileParams::from(p).to_params(); };
  get_or_create_primitive("cond").check_params = [](const Params& p) { return CondParams::from(p).to_params(); };
  get_or_create_primitive("name").check_params = [](const Params& p) { return CheckpointNameParams::from(p).to_params(); };
  for (const char* n : {"pjit", "closed_call", "checkpoint", "custom_jvp_call", "custom_vjp_call", "fusion"}) {
    const Primitive* prim = &get_or_create_primitive(n);
    get_or_create_primitive(n).check_params = [prim](const Params& p) { return CallParams::from(*prim, p).to_params(); };
  }
});
}  // namespace

}  // namespace minijax
