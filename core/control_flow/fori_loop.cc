// minijax fori_loop with Array bounds: which loop it becomes (a scan for bounds with values, a
// while_loop for traced ones), the bounds' dtype agreement and the unroll check, as JAX's fori_loop.
#include <cmath>

#include "core/control_flow.h"

namespace minijax::detail {

namespace {

// Whether `a` has a value now: a concrete array, or a tracer over one (a JVP tracer of eager
// grad/jvp), as JAX's core.is_concrete.
bool has_value(const Array& a) {
  Array cur = a;
  while (Tracer* t = cur.tracer()) {
    std::optional<Array> c = t->concrete_value();
    if (!c) return false;
    cur = *c;
  }
  return cur.is_concrete();
}

std::string unroll_str(const Unroll& u) {
  if (auto* b = std::get_if<bool>(&u)) return *b ? "true" : "false";
  return std::to_string(std::get<int64_t>(u));
}

// The truncation toward zero of a bound's value (Python's int()), as a C++ integer.
int64_t bound_value(const Array& a, const char* which, std::source_location loc) {
  const double v = std::trunc(a.item_f64(loc));
  if (!(v >= -2147483648.0 && v <= 2147483647.0))
    throw ValueError(std::string("fori_loop bounds must fit in int32, got ") + which + "=" +
                         std::to_string(a.item_f64(loc)), loc);
  return int64_t(v);
}

}  // namespace

ForiBounds fori_bounds(const Array& lo, const Array& hi, const ForiLoopOptions& opts,
                       std::source_location loc) {
  for (const Array* b : {&lo, &hi}) {
    const bool numeric = b->defined() && (is_integer(b->dtype()) || is_floating(b->dtype()));
    if (!numeric || b->ndim() != 0)
      throw TypeError(std::string("fori_loop: lower and upper must be integer or floating-point "
                                  "scalars, got ") +
                          (b->defined() ? b->aval().str() : std::string("an empty Array")) + " for " +
                          (b == &lo ? "lower" : "upper"),
                      loc);
  }
  // JAX: equal dtypes, except that a weakly typed signed integer takes the other's signed
  // integer dtype (i32 is minijax's only signed integer dtype, so equal dtypes decide).
  if (lo.dtype() != hi.dtype())
    throw TypeError(std::string("lower and upper arguments to fori_loop must have equal types, got ") +
                        dtype_name(lo.dtype()) + " and " + dtype_name(hi.dtype()) + " (lower " +
                        lo.aval().str() + ", upper " + hi.aval().str() + ")",
                    loc);
  if (opts.unroll) (void)unroll_param(*opts.unroll, 0, "fori_loop", loc);  // a negative int
  ForiBounds fb;
  if (has_value(lo) && has_value(hi)) {
    fb.scan = true;
    fb.lower = bound_value(lo, "lower", loc);
    fb.upper = bound_value(hi, "upper", loc);
    return fb;
  }
  if (opts.unroll) {
    const Unroll& u = *opts.unroll;
    // JAX's check (`unroll is not None and unroll is not False and unroll != 1`) lets True
    // through, since True == 1 in Python: a bool never raises, an int other than 1 does.
    const bool one = std::holds_alternative<bool>(u) || std::get<int64_t>(u) == 1;
    if (!one)
      throw ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are statically known "
                       "(fori_loop got unroll=" + unroll_str(u) + " with traced bounds lower " +
                           lo.aval().str() + ", upper " + hi.aval().str() + ")",
                       loc);
  }
  fb.lo = lo;
  fb.hi = hi;
  return fb;
}

}  // namespace minijax::detail
