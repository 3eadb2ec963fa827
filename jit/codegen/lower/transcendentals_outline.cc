// minijax vectorized transcendentals, part 4: each function outlined once per module (a call per use
// in the kernels, one definition per function, type and lane count) and the runtime they declare.
#include <map>
#include <string>

#include "core/errors.h"
#include "jit/codegen/lower/transcendentals.h"

namespace minijax::lower::math {

using kir::Type;
using kir::Value;

namespace {

constexpr const char* kPrefix = "mj_math_";

using Fn1 = Value (*)(kir::Builder&, Value);
using Fn2 = Value (*)(kir::Builder&, Value, Value);

struct Entry {
  Fn1 f1 = nullptr;  // unary (type-dispatching)
  Fn2 f2 = nullptr;  // binary
};

const std::map<std::string, Entry>& table() {
  static const std::map<std::string, Entry> t = {
      {"exp", {&exp, nullptr}},     {"log", {&log, nullptr}},         {"log1p", {&log1p, nullptr}},
      {"expm1", {&expm1, nullptr}}, {"tanh", {&tanh, nullptr}},       {"logistic", {&logistic, nullptr}},
      {"sin", {&sin, nullptr}},     {"cos", {&cos, nullptr}},         {"tan", {&tan, nullptr}},
      {"erf", {&erf, nullptr}},     {"erf_inv", {&erf_inv, nullptr}}, {"pow", {nullptr, &pow}},
      {"atan2", {nullptr, &atan2}}, {"sinh", {&sinh, nullptr}},       {"cosh", {&cosh, nullptr}},
      {"asin", {&asin, nullptr}},   {"acos", {&acos, nullptr}},       {"atan", {&atan, nullptr}},
      {"asinh", {&asinh, nullptr}}, {"acosh", {&acosh, nullptr}},     {"atanh", {&atanh, nullptr}},
      {"cbrt", {&cbrt, nullptr}},   {"erfc", {&erfc, nullptr}}};
  return t;
}

std::string function_name(const std::string& fn, Type t) {
  return kPrefix + fn + "_" + (t.s == kir::Scalar::f64 ? "f64" : "f32") + "x" + std::to_string(t.lanes);
}

// "mj_math_<fn>_<f32|f64>x<lanes>" -> fn and the type; false for another name.
bool parse_name(const std::string& name, std::string& fn, Type& t) {
  if (name.rfind(kPrefix, 0) != 0) return false;
  const size_t us = name.rfind('_');
  if (us == std::string::npos || us < std::string(kPrefix).size() || name.size() < us + 6) return false;
  fn = name.substr(std::string(kPrefix).size(), us - std::string(kPrefix).size());
  const std::string ty = name.substr(us + 1, 3);
  if ((ty != "f32" && ty != "f64") || name[us + 4] != 'x' || !table().count(fn)) return false;
  t = Type{ty == "f64" ? kir::Scalar::f64 : kir::Scalar::f32, std::stoi(name.substr(us + 5))};
  return t.lanes >= 1;
}

// The definition of `name` (fn on type t): its parameters, the inline code, the return.
kir::Function define(const std::string& name, const std::string& fn, Type t, int call_sites) {
  const Entry& e = table().at(fn);
  kir::Function f;
  f.name = name;
  f.params = e.f2 ? std::vector<Type>{t, t} : std::vector<Type>{t};
  f.param_names = e.f2 ? std::vector<std::string>{"x", "y"} : std::vector<std::string>{"x"};
  f.ret = t;
  f.linkage = kir::Linkage::internal;
  f.inlining = call_sites == 1 ? kir::Inline::always : kir::Inline::never;
  f.comment = fn + " on " + kir::type_str(t) + ", called from " + std::to_string(call_sites) +
              (call_sites == 1 ? " place (inlined)" : " places");
  kir::Builder b(f);
  b.ret(e.f2 ? e.f2(b, b.arg(0), b.arg(1)) : e.f1(b, b.arg(0)));
  return f;
}

bool calls(const kir::Function& f, const std::string& callee) {
  for (const kir::Inst& in : f.insts)
    if (in.op == kir::Op::Call && in.name == callee) return true;
  return false;
}

}  // namespace

bool is_outlined_function(const std::string& fn) { return table().count(fn) > 0; }

Value call_outlined(kir::Builder& b, const std::string& fn, const std::vector<Value>& args) {
  auto it = table().find(fn);
  if (it == table().end()) throw ValueError("call_outlined: no outlined function '" + fn + "'");
  const size_t arity = it->second.f2 ? 2 : 1;
  if (args.size() != arity)
    throw ValueError("call_outlined: " + fn + " takes " + std::to_string(arity) + " operand(s), got " +
                     std::to_string(args.size()));
  const Type t = b.type(args[0]);
  if (!t.is_float()) throw ValueError("call_outlined: " + fn + " of non-float type " + kir::type_str(t));
  for (Value a : args)
    if (!(b.type(a) == t))
      throw ValueError("call_outlined: " + fn + " operands of types " + kir::type_str(t) + " and " +
                       kir::type_str(b.type(a)));
  return b.call(function_name(fn, t), t, args);
}

void define_outlined_functions(kir::Module& m) {
  std::map<std::string, int> sites;  // callee -> call sites, for the names this module lacks
  for (const kir::Function& f : m.functions)
    for (const kir::Inst& in : f.insts)
      if (in.op == kir::Op::Call && in.name.rfind(kPrefix, 0) == 0 && m.find(in.name) < 0) ++sites[in.name];
  for (const auto& [name, n] : sites) {
    std::string fn;
    Type t;
    if (!parse_name(name, fn, t)) throw ValueError("define_outlined_functions: unknown math function @" + name);
    m.functions.push_back(define(name, fn, t, n));
  }
  bool trig = false;
  for (const kir::Function& f : m.functions) trig = trig || calls(f, kTrigReduceRuntime);
  if (trig) m.declare(kir::Extern{kTrigReduceRuntime, {kir::kPtr, kir::kI64, kir::kPtr, kir::kPtr, kir::kPtr}, kir::kVoid});
}

}  // namespace minijax::lower::math
