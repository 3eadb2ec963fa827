// minijax equation parameters.
// Owns typed access and equality of parameters.
#include "core/params.h"

namespace minijax {

const Param& Params::at(const std::string& k) const {
  auto it = m_.find(k);
  if (it == m_.end()) throw ValueError("missing parameter '" + k + "'");
  return it->second;
}

namespace {
template <class T>
const T& get_as(const Params& p, const std::string& k, const char* tname) {
  auto it = p.items().find(k);
  if (it == p.items().end()) throw ValueError("missing parameter '" + k + "'");
  const Param& v = it->second;
  if (auto* x = std::get_if<T>(&v)) return *x;
  throw ValueError("parameter '" + k + "' is not of type " + tname);
}
}  // namespace

int64_t Params::get_int(const std::string& k) const { return get_as<int64_t>(*this, k, "int"); }
bool Params::get_bool(const std::string& k) const { return get_as<bool>(*this, k, "bool"); }
double Params::get_float(const std::string& k) const { return get_as<double>(*this, k, "float"); }
const std::string& Params::get_string(const std::string& k) const {
  return get_as<std::string>(*this, k, "string");
}
const std::vector<int64_t>& Params::get_ints(const std::string& k) const {
  return get_as<std::vector<int64_t>>(*this, k, "int tuple");
}
DType Params::get_dtype(const std::string& k) const { return get_as<DType>(*this, k, "dtype"); }
MemoryKind Params::get_memory_kind(const std::string& k) const {
  return get_as<MemoryKind>(*this, k, "memory kind");
}
const ClosedJaxprPtr& Params::get_jaxpr(const std::string& k) const {
  return get_as<ClosedJaxprPtr>(*this, k, "jaxpr");
}
const std::vector<ClosedJaxprPtr>& Params::get_jaxprs(const std::string& k) const {
  return get_as<std::vector<ClosedJaxprPtr>>(*this, k, "jaxpr tuple");
}
const ParamObjectPtr& Params::get_object(const std::string& k) const {
  return get_as<ParamObjectPtr>(*this, k, "object");
}

bool Params::operator==(const Params& o) const {
  if (m_.size() != o.m_.size()) return false;
  for (auto a = m_.begin(), b = o.m_.begin(); a != m_.end(); ++a, ++b)
    if (a->first != b->first || !param_equal(a->second, b->second)) return false;
  return true;
}

}  // namespace minijax
