// minijax typed views: the check that params hold no key a view does not know.
// Used by the collective and memory views (core/views/collectives.cc, memory_ops.cc).
#pragma once
#include <initializer_list>
#include <string>

#include "core/errors.h"
#include "core/params.h"

namespace minijax::views {

/// Throws ValueError "unexpected parameter 'k'" for the first key of `p` not in `known` (a
/// view's read_view adds the primitive's name), so that to_params() gives back all of `p`.
inline void check_known_keys(const Params& p, std::initializer_list<const char*> known) {
  for (const auto& [k, v] : p.items()) {
    bool ok = false;
    for (const char* n : known) ok = ok || k == n;
    if (!ok) throw ValueError("unexpected parameter '" + k + "'");
  }
}

}  // namespace minijax::views
