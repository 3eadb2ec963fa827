// minijax typed params: what every typed view (core/views/*.h) shares.
// Owns the primitive identity check and the read wrapper that names the primitive in errors.
#pragma once
#include <string>
#include <utility>

#include "core/errors.h"
#include "core/jaxpr.h"
#include "core/primitive.h"

namespace minijax::views {

/// Whether `e` is an equation of the primitive registered as `name`. Views call it from their
/// `is(e)` with a function-local static `Primitive*`, so the test is a pointer comparison.
inline bool is_primitive(const Eqn& e, const Primitive* p) { return e.primitive == p; }

/// Runs `read` (a view's field reads from Params), rethrowing a ValueError as
/// "<primitive>: <message>" (e.g. "scan: missing parameter 'num_carry'").
template <class F>
auto read_view(const char* primitive_name, F&& read) {
  try {
    return std::forward<F>(read)();
  } catch (const ValueError& e) {
    throw ValueError(std::string(primitive_name) + ": " + e.message());
  }
}

/// Throws ValueError "<view> params read from a <name> equation" when a view is asked of an
/// equation of another primitive.
[[noreturn]] inline void wrong_primitive(const char* view, const Eqn& e) {
  throw ValueError(std::string(view) + " params read from a " +
                   (e.primitive ? e.primitive->name : std::string("null")) + " equation");
}

}  // namespace minijax::views
