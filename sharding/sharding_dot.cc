// minijax jaxpr pictures with shardings: labels each variable with its propagated sharding.
// Owns the PropagationResult overload of to_dot.
#include "sharding/sharding_dot.h"

#include <utility>

namespace minijax {

std::string to_dot(const Jaxpr& jaxpr, const PropagationResult& propagation, DotOptions opts) {
  auto user = std::move(opts.annotate);
  opts.annotate = [&propagation, user](const Var& v) {
    std::string text;
    if (auto it = propagation.shardings.find(v); it != propagation.shardings.end())
      text = it->second.str();
    if (user) {
      std::string more = user(v);
      if (!more.empty()) text += (text.empty() ? "" : "\n") + more;
    }
    return text;
  };
  return to_dot(jaxpr, opts);
}

}  // namespace minijax
