// minijax debug_callback's parameter: the host function an equation calls (DebugCallbackObject),
// for the layers that run it (eager implementation, batching, the compiler's host-callback sites).
#pragma once
#include <source_location>
#include <string>
#include <vector>

#include "core/debug.h"
#include "core/params.h"

namespace minijax {

/// The `callback` parameter of debug_callback: the host function, printed as its name
/// (`print_3`, `callback_4`: a serial number per traced call, so two programs calling different
/// host functions never print, or compile-cache, alike).
struct DebugCallbackObject final : ParamObject {
  debug::FlatCallback fn;
  std::string name;  ///< printed form
  std::string what;  ///< "print 'x = {}'" or "callback", for messages
  std::source_location loc;
  std::string str() const override { return name; }
};

/// One debug_callback call site of a compiled program (LoadedExecutable::host_callbacks): the host
/// function and its operands' avals as the program holds them (local shards in an SPMD program).
struct HostCallbackSite {
  debug::FlatCallback fn;
  std::vector<ShapedArray> operands;
};

namespace detail {
/// The callback object of a debug_callback equation's params, or null (a parsed jaxpr).
const DebugCallbackObject* debug_callback_object(const Params& params);
/// Calls the equation's host function with `values`. Throws ValueError when the params hold
/// none (a jaxpr parsed from text), and whatever the host function throws.
void call_debug_callback(const Params& params, const std::vector<Array>& values);
}  // namespace detail

}  // namespace minijax
