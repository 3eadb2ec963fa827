// minijax vectorized transcendentals, part 4: each function outlined once per module (a call per use
// in the kernels, one definition per function, type and lane count) and the runtime they declare.
#include <algorithm>
#include <map>
#include <string>

#include "core/errors.h"
#include "jit/codegen/emit_llvm.h"
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
  // Its f32 form is its f64 code on the operands widened to f64, rounded once (f32(x) ==
  // to_f32(f64(to_f64(x))) by construction): the f32 function calls the f64 one.
  bool f64_core = false;
  // (f64_core) An f32 caller's f64 code runs on the f32 register's lanes, twice the f64 one's: the
  // two halves' dependency chains interleave in one function. For the latency-bound ones (the
  // continued fraction's divisions, erfc's rational function) that is 1.2-1.6x faster than two
  // calls on half the lanes; it doubles their machine code, so the others do not.
  bool f32_wide = false;
};

const std::map<std::string, Entry>& table() {
  static const std::map<std::string, Entry> t = {
      {"exp", {&exp, nullptr}},     {"log", {&log, nullptr}},         {"log1p", {&log1p, nullptr}},
      {"expm1", {&expm1, nullptr}}, {"tanh", {&tanh, nullptr}},       {"logistic", {&logistic, nullptr}},
      {"sin", {&sin, nullptr}},     {"cos", {&cos, nullptr}},         {"tan", {&tan, nullptr}},
      {"erf", {&erf, nullptr}},     {"erf_inv", {&erf_inv, nullptr}}, {"pow", {nullptr, &pow}},
      {"atan2", {nullptr, &atan2}}, {"sinh", {&sinh, nullptr, true}}, {"cosh", {&cosh, nullptr, true}},
      {"asin", {&asin, nullptr, true}},   {"acos", {&acos, nullptr, true}},   {"atan", {&atan, nullptr}},
      {"asinh", {&asinh, nullptr, true}}, {"acosh", {&acosh, nullptr, true}}, {"atanh", {&atanh, nullptr, true}},
      {"cbrt", {&cbrt, nullptr, true}},   {"erfc", {&erfc, nullptr, true, true}},
      {"lgamma", {&lgamma, nullptr, true, true}}, {"digamma", {&digamma, nullptr, true}},
      {"polygamma", {nullptr, &polygamma, true}}, {"igamma", {nullptr, &igamma, true, true}},
      {"igamma_grad_a", {nullptr, &igamma_grad_a, true, true}}};
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

// The lanes of the widest vector register for scalar s.
int native_lanes(kir::Scalar s) { return std::max(1, host_target().vector_bytes / (s == kir::Scalar::f64 ? 8 : 4)); }

// The definition of `name` (fn on type t): its parameters, the code, the return.
kir::Function define(const std::string& name, const std::string& fn, Type t) {
  const Entry& e = table().at(fn);
  kir::Function f;
  f.name = name;
  f.params = e.f2 ? std::vector<Type>{t, t} : std::vector<Type>{t};
  f.param_names = e.f2 ? std::vector<std::string>{"x", "y"} : std::vector<std::string>{"x"};
  f.ret = t;
  f.linkage = kir::Linkage::internal;
  f.light_optimization = true;
  f.unroll_loops = false;  // their loops (digamma's recurrence, polygamma's terms) stay loops: less code to compile
  f.comment = fn + " on " + kir::type_str(t);
  kir::Builder b(f);
  b.ret(e.f2 ? e.f2(b, b.arg(0), b.arg(1)) : e.f1(b, b.arg(0)));
  return f;
}

bool calls(const kir::Function& f, const std::string& callee) {
  for (const kir::Inst& in : f.insts)
    if (in.op == kir::Op::Call && in.name == callee) return true;
  return false;
}

// A call of fn's definition on w lanes with args of type t: w lanes directly; fewer (a scalar tail,
// a narrower loop) padded to w with lane 0's value and cut back; more split into calls on w lanes
// each (the lanes of t a power-of-two multiple of w, as the loops' widths are) and joined. The shuffles of
// constants fold where they are emitted, so a constant operand reaches the call as a constant.
Value call_at_lanes(kir::Builder& b, const std::string& fn, Type t, int w, const std::vector<Value>& args) {
  const int n = t.lanes;
  const std::string callee = function_name(fn, Type{t.s, w});
  const Type wt{t.s, w};
  if (n == w) return b.call(callee, wt, args);
  if (n < w) {
    std::vector<int> pad(size_t(w), 0), cut;
    for (int i = 0; i < n; ++i) pad[size_t(i)] = i, cut.push_back(i);
    std::vector<Value> wide;
    for (Value a : args) wide.push_back(n == 1 ? b.splat(a, w) : b.shuffle(a, a, pad));
    Value r = b.call(callee, wt, wide);
    return n == 1 ? b.extract(r, 0) : b.shuffle(r, r, cut);
  }
  if (n % w || ((n / w) & (n / w - 1)))
    throw ValueError("call_outlined: " + std::to_string(n) + " lanes, not a power-of-two multiple of the " +
                     std::to_string(w) + " of " + callee);
  std::vector<Value> parts;
  for (int c = 0; c < n / w; ++c) {
    std::vector<int> part;
    for (int i = 0; i < w; ++i) part.push_back(c * w + i);
    std::vector<Value> xs;
    for (Value a : args) xs.push_back(b.shuffle(a, a, part));
    parts.push_back(b.call(callee, wt, xs));
  }
  for (int k = w; parts.size() > 1; k *= 2) {  // join neighbours: k lanes each -> 2k
    std::vector<int> both;
    for (int i = 0; i < 2 * k; ++i) both.push_back(i);
    std::vector<Value> next;
    for (size_t i = 0; i < parts.size(); i += 2) next.push_back(b.shuffle(parts[i], parts[i + 1], both));
    parts = next;
  }
  return parts[0];
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
  std::vector<Value> xs = args;
  Type code_t = t;
  if (it->second.f64_core && t.s == kir::Scalar::f32) {
    for (Value& x : xs) x = to_f64(b, x);  // f64 code on the f32 lanes
    code_t.s = kir::Scalar::f64;
  }
  // One definition per function and code type, at the register width: an f32 caller's f64 code on
  // 16 lanes is two calls on 8, except for the f32_wide functions, whose f64 definition then has 16
  // lanes (bench/compile chain-one, f32[4096] x 50 links, against inline 16-lane code: erfc 1.35x,
  // igamma 1.58x slower as two calls; 0.97x and 1.10x wide).
  // An f32 loop narrower than the f32 register (a kernel with f64 data, whose loops have the f64
  // lanes) calls the f64 definition f64 callers use; a scalar tail the f32 register's, as its loop.
  const int f64w = native_lanes(kir::Scalar::f64), f32w = native_lanes(kir::Scalar::f32);
  const int w = it->second.f32_wide && t.s == kir::Scalar::f32 ? (t.lanes >= f64w ? std::min(t.lanes, f32w) : f32w)
                                                                : native_lanes(code_t.s);
  Value r = call_at_lanes(b, fn, code_t, w, xs);
  return code_t.s == t.s ? r : to_f32(b, r);
}

void define_outlined_functions(kir::Module& m) {
  // Define what is called and missing until nothing is (a definition may call others: lgamma calls
  // log), then count every call site, the definitions' own included.
  const size_t first = m.functions.size();
  for (bool more = true; more;) {
    std::map<std::string, int> missing;
    for (const kir::Function& f : m.functions)
      for (const kir::Inst& in : f.insts)
        if (in.op == kir::Op::Call && in.name.rfind(kPrefix, 0) == 0 && m.find(in.name) < 0) ++missing[in.name];
    for (const auto& [name, n] : missing) {
      std::string fn;
      Type t;
      if (!parse_name(name, fn, t)) throw ValueError("define_outlined_functions: unknown math function @" + name);
      m.functions.push_back(define(name, fn, t));
    }
    more = !missing.empty();
  }
  std::map<std::string, int> sites;
  for (const kir::Function& f : m.functions)
    for (const kir::Inst& in : f.insts)
      if (in.op == kir::Op::Call) ++sites[in.name];
  for (size_t i = first; i < m.functions.size(); ++i) {
    kir::Function& f = m.functions[i];
    const int n = sites[f.name];
    f.inlining = n == 1 ? kir::Inline::always : kir::Inline::never;
    f.comment += ", called from " + std::to_string(n) + (n == 1 ? " place (inlined)" : " places");
  }
  bool trig = false;
  for (const kir::Function& f : m.functions) trig = trig || calls(f, kTrigReduceRuntime);
  if (trig) m.declare(kir::Extern{kTrigReduceRuntime, {kir::kPtr, kir::kI64, kir::kPtr, kir::kPtr, kir::kPtr}, kir::kVoid});
}

}  // namespace minijax::lower::math
