// minijax registry-wide conformance suite: the case table every primitive must appear in.
// Owns Case (a primitive exercised through its lax function on sample inputs) and helpers.
#pragma once
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <minijax/minijax.h>

namespace conformance {

using mj::Array;

/// One way of exercising a primitive: fn applies it (through lax) to args.
struct Case {
  std::string prim;   ///< registry name of the primitive under test
  std::string label;  ///< distinguishes several cases of one primitive
  std::function<std::vector<Array>(const std::vector<Array>&)> fn;
  std::vector<Array> args;
  bool differentiable = true;  ///< JVP/VJP checks (floating args and outputs only)
  bool smooth = true;          ///< second-order check (grad of grad)
  bool batchable = true;       ///< vmap vs loop check
  /// Arguments that must not be perturbed (indices, predicates): kept identical across the
  /// batch and never differentiated.
  std::vector<bool> fixed;
};

/// All registered cases.
std::vector<Case>& registry();

/// Adds cases at static-initialization time.
struct Add {
  explicit Add(std::vector<Case> cs) {
    for (auto& c : cs) registry().push_back(std::move(c));
  }
};

/// Deterministic uniform values in [lo, hi) of the given shape and dtype (std::mt19937, so the
/// inputs do not depend on minijax's own PRNG).
Array rnd(const mj::Shape& shape, uint32_t seed, double lo = -1, double hi = 1, mj::DType dt = mj::f64);
/// Values in [lo, hi) rounded to integers, as i32.
Array rnd_int(const mj::Shape& shape, uint32_t seed, int lo, int hi);

/// Shorthand for a single-output case function.
inline std::function<std::vector<Array>(const std::vector<Array>&)> one(
    std::function<Array(const std::vector<Array>&)> f) {
  return [f](const std::vector<Array>& a) { return std::vector<Array>{f(a)}; };
}

/// Whether every array of xs has a floating dtype.
bool all_float(const std::vector<Array>& xs);

/// The jaxprs of one case as make_jaxpr traces them, each with its form: "" (the case's function),
/// "jit" (under mj::jit) and, for a differentiable case with floating args, "jvp" (primals then
/// tangents in, primal outputs then defined tangents out) and, with floating outputs too, "vjp"
/// (primals then cotangents in, defined input cotangents out).
std::vector<std::pair<std::string, mj::ClosedJaxpr>> traced_jaxprs(const Case& k);

/// Primitives deliberately absent from the table, with the reason (they are exercised by their
/// own suites: higher-order primitives take functions, not arrays).
const std::vector<std::pair<std::string, std::string>>& exemptions();

/// Primitives the sharded check (sharded_check.cc: every case propagated, partitioned and run on
/// random input shardings vs eager) skips, with the reason: the ONE list of sharded exemptions.
/// Every other registered primitive must have a case that passes it.
const std::vector<std::pair<std::string, std::string>>& sharded_exemptions();

}  // namespace conformance
