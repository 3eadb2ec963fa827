// minijax host callbacks of compiled code: mj_rt_host_callback and the per-thread table of sites
// (HostCallbacksScope) that execute and execute_spmd install around a program's entry.
#include "jit/runtime/host_callback.h"

#include <cstring>
#include <string>

#include "jit/runtime/abi.h"

namespace minijax {

namespace {
thread_local const std::vector<HostCallbackSite>* t_sites = nullptr;
thread_local std::exception_ptr* t_error = nullptr;
thread_local bool t_call = true;
}  // namespace

HostCallbacksScope::HostCallbacksScope(const std::vector<HostCallbackSite>& sites, bool call)
    : prev_sites_(t_sites), prev_error_(t_error), prev_call_(t_call) {
  t_sites = &sites;
  t_error = &error_;
  t_call = call;
}

HostCallbacksScope::~HostCallbacksScope() {
  t_sites = prev_sites_;
  t_error = prev_error_;
  t_call = prev_call_;
}

void HostCallbacksScope::rethrow_if_failed() {
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace minijax

using namespace minijax;

extern "C" void mj_rt_host_callback(int32_t site, void** operands) {
  if (!t_sites || !t_error || site < 0 || size_t(site) >= t_sites->size()) {
    detail::record_runtime_error("mj_rt_host_callback: no host callback site " + std::to_string(site) +
                              " is installed for this program");
    return;
  }
  if (*t_error || !t_call) return;  // an earlier callback failed (its exception is reported), or skipped here
  const HostCallbackSite& s = (*t_sites)[size_t(site)];
  try {
    std::vector<Array> values;
    values.reserve(s.operands.size());
    for (size_t k = 0; k < s.operands.size(); ++k) {
      ShapedArray av = s.operands[k];
      av.memory_kind = MemoryKind::device;  // a host copy of the value, wherever it lives
      Array a = Array::empty(av);
      if (av.nbytes() > 0) std::memcpy(const_cast<void*>(a.raw_data()), operands[k], size_t(av.nbytes()));
      values.push_back(std::move(a));
    }
    s.fn(values);
  } catch (...) {
    *t_error = std::current_exception();
  }
}
