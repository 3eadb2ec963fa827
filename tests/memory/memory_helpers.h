// Test helpers shared by the memory tests: a program as the compiler's passes hand it to the
// memory passes (traced, dead code removed, inlined, simplified, fused: jit/pipeline.cc's order).
#pragma once
#include <minijax/minijax.h>

#include "core/dce.h"
#include "jit/fuse.h"
#include "jit/inline_calls.h"
#include "jit/simplify.h"

namespace memtest {

/// f traced on args, then dce → inline_calls → simplify → fuse.
template <class F, class... A>
mj::Jaxpr fused(F f, const A&... args) {
  mj::ClosedJaxpr cj = mj::make_jaxpr(f)(args...);
  mj::Jaxpr j = mj::convert_constvars_jaxpr(*cj.jaxpr);
  j = mj::dce_jaxpr(j, std::vector<bool>(j.outvars.size(), true), true).first;
  return mj::fuse(mj::simplify(mj::inline_calls(j)));
}

}  // namespace memtest
