// minijax equation parameters: a small typed variant per parameter, printed sorted by name.
// Owns Param, Params and ParamObject (opaque handles: policies, shardings, user callables).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <source_location>
#include <string>
#include <variant>
#include <vector>

#include "core/aval.h"
#include "core/errors.h"

namespace minijax {

struct ClosedJaxpr;
using ClosedJaxprPtr = std::shared_ptr<const ClosedJaxpr>;

/// An opaque parameter value with an identity: a remat policy, a sharding, a user callback.
/// str() is its printed form; equals() decides equality (compile-cache keys, round-trips).
class ParamObject {
 public:
  virtual ~ParamObject() = default;
  virtual std::string str() const = 0;
  virtual bool equals(const ParamObject& o) const { return this == &o; }
};
using ParamObjectPtr = std::shared_ptr<const ParamObject>;

/// One parameter value. Int vectors print as JAX prints tuples: `(0, 1)`.
using Param = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>, DType,
                           MemoryKind, ClosedJaxprPtr, std::vector<ClosedJaxprPtr>, ParamObjectPtr>;

struct ParamReads;

/// Parameters of one equation, keyed (and printed) by name in sorted order: the storage that the
/// printer and the parser use. Outside core/, a parameter is read through its primitive's typed
/// view (core/views/: `scan_params(eqn).num_carry`), so a renamed field is a compile error: the
/// string-keyed getters are private, for core/'s typed views, rules, printer and parser only
/// (core/param_reads.h).
class Params {
 public:
  Params() = default;
  Params(std::initializer_list<std::pair<const std::string, Param>> init) : m_(init) {}

  bool has(const std::string& k) const { return m_.count(k) != 0; }
  void set(const std::string& k, Param v) { m_[k] = std::move(v); }

  const std::map<std::string, Param>& items() const { return m_; }
  bool empty() const { return m_.empty(); }
  bool operator==(const Params& o) const;

 private:
  friend struct ParamReads;
  const Param& at(const std::string& k) const;
  /// Typed access; throws ValueError naming the key if missing or of another type.
  int64_t get_int(const std::string& k) const;
  bool get_bool(const std::string& k) const;
  double get_float(const std::string& k) const;
  const std::string& get_string(const std::string& k) const;
  const std::vector<int64_t>& get_ints(const std::string& k) const;
  DType get_dtype(const std::string& k) const;
  MemoryKind get_memory_kind(const std::string& k) const;
  const ClosedJaxprPtr& get_jaxpr(const std::string& k) const;
  const std::vector<ClosedJaxprPtr>& get_jaxprs(const std::string& k) const;
  const ParamObjectPtr& get_object(const std::string& k) const;

  std::map<std::string, Param> m_;
};

/// Equality of two parameter values (jaxprs compared structurally by printed form).
bool param_equal(const Param& a, const Param& b);

}  // namespace minijax
