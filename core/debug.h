// minijax debugging inside transformations: mj::debug::print and mj::debug::callback (JAX's
// jax.debug.print / jax.debug.callback), staged as the effectful primitive debug_callback.
#pragma once
#include <concepts>
#include <functional>
#include <memory>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/array.h"
#include "core/params.h"

namespace minijax::debug {

/// Options of print and callback. `ordered` (JAX's ordered=True): the calls run in program order
/// within one jit call and across calls (an "ordered_debug" effect). Without it no order is
/// promised: today's single-device executor happens to run them in program order, but a compiler
/// pass or an SPMD program may not (each device of a mesh calls its own, concurrently).
struct CallbackOptions {
  bool ordered = false;
};

/// A format string with the user's call site (built implicitly from a string literal or a
/// std::string at the call of print, which records the line). Placeholders: `{}` (the next
/// argument) or `{N}` (argument N, from 0); `{{` and `}}` are literal braces.
struct FormatString {
  FormatString(const char* s, std::source_location loc = std::source_location::current()) : text(s), loc(loc) {}
  FormatString(std::string s, std::source_location loc = std::source_location::current())
      : text(std::move(s)), loc(loc) {}
  std::string text;
  std::source_location loc;
};

/// A host function debug_callback calls with its operands' values (concrete Arrays, in order).
using FlatCallback = std::function<void(const std::vector<Array>& values)>;

namespace detail {

/// Binds debug_callback over `args` (each a concrete or traced Array): eagerly it calls `fn` at
/// once; under jit, scan, vmap or grad it is staged and `fn` runs when the program does.
/// `what` describes the callback in printed jaxprs ("print 'x = {}'"); errors name `loc`.
void bind_debug_callback(FlatCallback fn, std::vector<Array> args, std::string what, CallbackOptions opts,
                         std::source_location loc);
/// The text of `fmt` with each placeholder replaced by its argument's printed form (Array::str():
/// `Array([1., 2.], dtype=float32)`).
std::string format(const std::string& fmt, const std::vector<Array>& values);
/// Checks `fmt` against `nargs` arguments at trace time: ValueError naming the format string,
/// the counts and `loc` for more placeholders than arguments, arguments no placeholder uses, an
/// index out of range, mixed `{}`/`{N}`, an unmatched brace or a format spec (`{:...}`).
void check_format(const std::string& fmt, size_t nargs, std::source_location loc);
/// Writes one line to the debug output (std::cout by default; set_print_sink replaces it).
void emit_line(const std::string& line);

/// A C++ number as a weakly typed scalar (bool: bool, integers: i32, floating: f32).
Array debug_scalar(double v, bool is_bool, bool is_integer);

template <class T>
Array as_debug_array(const T& v) {
  if constexpr (std::is_same_v<T, Array>)
    return v;
  else
    return debug_scalar(double(v), std::is_same_v<T, bool>, std::is_integral_v<T>);
}

}  // namespace detail

/// Where print writes its lines: `sink(line)` (the line without its newline), or std::cout with
/// a newline when null. Returns the previous sink. For tests and for loggers.
std::function<void(const std::string&)> set_print_sink(std::function<void(const std::string&)> sink);

/// JAX's jax.debug.print: formats `fmt` with the values of `args` (Arrays, concrete or traced,
/// or C++ numbers) and prints the line when the values exist: at once eagerly, and each time the
/// program runs under jit (once per scan iteration, once per vmap element with that element's
/// values, the primal values under grad). Throws ValueError at trace time, naming the format
/// string and the user's line, when the placeholders and the arguments do not match.
template <class... Args>
  requires(((std::is_same_v<Args, Array> || std::is_arithmetic_v<Args>) && ...))
void print(CallbackOptions opts, FormatString fmt, const Args&... args) {
  detail::check_format(fmt.text, sizeof...(Args), fmt.loc);
  std::vector<Array> values{detail::as_debug_array(args)...};
  std::string text = fmt.text;
  detail::bind_debug_callback([text](const std::vector<Array>& v) { detail::emit_line(detail::format(text, v)); },
                              std::move(values), "print '" + text + "'", opts, fmt.loc);
}

/// print without options (unordered).
template <class... Args>
  requires(((std::is_same_v<Args, Array> || std::is_arithmetic_v<Args>) && ...))
void print(FormatString fmt, const Args&... args) {
  print(CallbackOptions{}, std::move(fmt), args...);
}

/// JAX's jax.debug.callback: calls `fn(values...)` with the concrete values of `args` (Arrays),
/// at once eagerly and each time the program runs under jit, scan, vmap (once per element) and
/// grad (the primal values). `fn` returns nothing that is used. An exception `fn` throws
/// propagates out of the eager call or the jitted call (an mj::Error names the call's line).
template <class F, class... Args>
  requires(std::invocable<F&, const std::conditional_t<true, Array, Args>&...>)
void callback(CallbackOptions opts, F fn, const Args&... args) {
  std::vector<Array> values{detail::as_debug_array(args)...};
  auto flat = [fn = std::move(fn)](const std::vector<Array>& v) mutable {
    [&]<size_t... I>(std::index_sequence<I...>) { (void)fn(v[I]...); }(std::index_sequence_for<Args...>{});
  };
  detail::bind_debug_callback(std::move(flat), std::move(values), "callback", opts, std::source_location::current());
}

/// callback without options (unordered).
template <class F, class... Args>
  requires(std::invocable<F&, const std::conditional_t<true, Array, Args>&...>)
void callback(F fn, const Args&... args) {
  callback(CallbackOptions{}, std::move(fn), args...);
}

}  // namespace minijax::debug
