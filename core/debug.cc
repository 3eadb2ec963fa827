// minijax debug_callback: the primitive behind mj::debug::print and mj::debug::callback (its shape
// rule, eager implementation and "debug" effect), print's format strings and its output sink.
#include "core/debug.h"
#include "core/param_reads.h"

#include <atomic>
#include <iostream>
#include <mutex>

#include "core/debug_callback.h"
#include "core/lax.h"
#include "core/parser.h"
#include "core/primitive.h"
#include "core/trace.h"

namespace minijax {

const DebugCallbackObject* detail::debug_callback_object(const Params& params) {
  if (!params.has("callback")) return nullptr;
  const Param& p = param_at(params, "callback");
  auto* o = std::get_if<ParamObjectPtr>(&p);
  return o ? dynamic_cast<const DebugCallbackObject*>(o->get()) : nullptr;
}

void detail::call_debug_callback(const Params& params, const std::vector<Array>& values) {
  const DebugCallbackObject* cb = debug_callback_object(params);
  if (!cb || !cb->fn)
    throw ValueError("debug_callback: the equation holds no host function (a jaxpr parsed from text keeps only the "
                     "callback's name, " +
                     (params.has("callback") ? param_to_string(param_at(params, "callback")) : std::string("none")) +
                     "): trace the program again to run it");
  cb->fn(values);
}

namespace {

std::vector<ShapedArray> debug_callback_shape(const std::vector<ShapedArray>& in, const Params&) {
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].is_token()) throw TypeError("debug_callback: operand " + std::to_string(i) + " is a token");
  return {};
}

std::vector<Array> debug_callback_impl(const std::vector<Array>& args, const Params& params,
                                       const std::vector<ShapedArray>&) {
  detail::call_debug_callback(params, args);
  return {};
}

std::mutex& sink_mu() {
  static std::mutex m;
  return m;
}
std::function<void(const std::string&)>& sink() {
  static std::function<void(const std::string&)> s;
  return s;
}

const Registrar reg([] {
  auto& p = get_or_create_primitive("debug_callback");
  p.multiple_results = true;
  p.shape_rule = debug_callback_shape;
  p.impl = debug_callback_impl;
  p.effects = {"debug"};
  set_classes(p, OpClass::other, CostClass::data_movement, FusionClass::normal);
});

}  // namespace

namespace debug {

std::function<void(const std::string&)> set_print_sink(std::function<void(const std::string&)> s) {
  std::lock_guard<std::mutex> g(sink_mu());
  std::swap(sink(), s);
  return s;
}

namespace detail {

void emit_line(const std::string& line) {
  std::lock_guard<std::mutex> g(sink_mu());  // lines of concurrent devices do not interleave
  if (sink()) sink()(line);
  else std::cout << line << std::endl;
}

Array debug_scalar(double v, bool is_bool, bool is_integer) {
  return lax::scalar(v, is_bool ? DType::bool_ : is_integer ? DType::i32 : DType::f32, !is_bool);
}

namespace {

// One pass over fmt: calls text(s) for literal text and field(k) for each placeholder's argument
// index; returns an error message, or "" when fmt is well formed for nargs arguments.
template <class Text, class Field>
std::string scan_format(const std::string& fmt, size_t nargs, Text text, Field field) {
  size_t next = 0;
  bool auto_mode = false, manual_mode = false;
  std::vector<bool> used(nargs, false);
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        text("}");
        ++i;
        continue;
      }
      return "a single '}' at position " + std::to_string(i) + " (write '}}' for a brace)";
    }
    if (c != '{') {
      text(std::string(1, c));
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      text("{");
      ++i;
      continue;
    }
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) return "an unmatched '{' at position " + std::to_string(i);
    const std::string inner = fmt.substr(i + 1, close - i - 1);
    size_t k = 0;
    if (inner.empty()) {
      if (manual_mode) return "'{}' mixed with numbered fields such as '{0}'";
      auto_mode = true;
      k = next++;
      if (k >= nargs)
        return "more placeholders than arguments: placeholder " + std::to_string(k) + " of " +
               std::to_string(nargs) + " argument(s)";
    } else {
      for (char d : inner)
        if (d < '0' || d > '9')
          return "the field '{" + inner + "}' is not '{}' or '{N}' (format specs are not supported)";
      if (auto_mode) return "numbered fields such as '{" + inner + "}' mixed with '{}'";
      manual_mode = true;
      k = inner.size() > 9 ? nargs : size_t(std::stoull(inner));
      if (k >= nargs)
        return "the field '{" + inner + "}' names argument " + inner + " of " + std::to_string(nargs) + " argument(s)";
    }
    used[k] = true;
    field(k);
    i = close;
  }
  for (size_t k = 0; k < nargs; ++k)
    if (!used[k])
      return "more arguments than placeholders: argument " + std::to_string(k) + " of " + std::to_string(nargs) +
             " is not used";
  return "";
}

}  // namespace

void check_format(const std::string& fmt, size_t nargs, std::source_location loc) {
  std::string err = scan_format(fmt, nargs, [](const std::string&) {}, [](size_t) {});
  if (!err.empty()) throw ValueError("debug::print(\"" + fmt + "\"): " + err, loc);
}

std::string format(const std::string& fmt, const std::vector<Array>& values) {
  std::string out;
  std::string err = scan_format(fmt, values.size(), [&](const std::string& s) { out += s; },
                                [&](size_t k) { out += values[k].str(); });
  if (!err.empty()) throw ValueError("debug::print(\"" + fmt + "\"): " + err);
  return out;
}

void bind_debug_callback(FlatCallback fn, std::vector<Array> args, std::string what, CallbackOptions opts,
                         std::source_location loc) {
  for (size_t i = 0; i < args.size(); ++i)
    if (!args[i].defined())
      throw ValueError("debug::" + what + ": argument " + std::to_string(i) + " is an empty (default-constructed) Array",
                       loc);
  static std::atomic<uint64_t> serial{0};
  auto obj = std::make_shared<DebugCallbackObject>();
  obj->fn = std::move(fn);
  obj->name = (what.rfind("print", 0) == 0 ? "print_" : "callback_") + std::to_string(serial.fetch_add(1));
  obj->what = std::move(what);
  obj->loc = loc;
  Params ps{{"callback", ParamObjectPtr(obj)}, {"ordered", opts.ordered}};
  (void)minijax::bind(primitive("debug_callback"), args, ps, loc);
}

}  // namespace detail
}  // namespace debug
}  // namespace minijax
