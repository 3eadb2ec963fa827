// minijax host callbacks of compiled code: the sites table a running program's
// mj_rt_host_callback calls name (debug::print / debug::callback), installed per thread.
#pragma once
#include <cstdint>
#include <exception>
#include <vector>

#include "core/debug_callback.h"

namespace minijax {

/// Installs `sites` (LoadedExecutable::host_callbacks) for mj_rt_host_callback on the calling thread
/// while the object lives (the previous table is restored after: a callback may run another
/// jitted function). The first exception a callback throws is kept, later callbacks of the run
/// are skipped, and rethrow_if_failed() rethrows it unchanged after the program returns.
class HostCallbacksScope {
 public:
  /// `call` false: the program's callbacks are skipped on this thread (the devices of an SPMD
  /// program other than the one that calls them).
  explicit HostCallbacksScope(const std::vector<HostCallbackSite>& sites, bool call = true);
  ~HostCallbacksScope();
  HostCallbacksScope(const HostCallbacksScope&) = delete;
  HostCallbacksScope& operator=(const HostCallbacksScope&) = delete;
  /// Rethrows what a callback of this scope threw, if any.
  void rethrow_if_failed();

 private:
  const std::vector<HostCallbackSite>* prev_sites_;
  std::exception_ptr* prev_error_;
  bool prev_call_;
  std::exception_ptr error_;
};

}  // namespace minijax

extern "C" {
/// Calls host callback `site` of the running program's table (HostCallbacksScope) with the
/// values at `operands[0 .. n)` (n = the site's operand count; each read as the site's aval,
/// copied into a fresh Array). An exception is kept for the scope, never thrown through
/// compiled frames; with no table installed, or a site out of range, it records a runtime error.
void mj_rt_host_callback(int32_t site, void** operands);
}
