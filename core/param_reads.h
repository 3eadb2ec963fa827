// minijax string-keyed parameter reads, for core/ only: the typed views (core/views/), the
// primitives' own rules, the printer and the parser. Owns the free functions over Params' getters.
#pragma once
#include <string>
#include <vector>

#include "core/params.h"

namespace minijax {

/// The one friend of Params' private getters. Outside core/, read a parameter through its
/// primitive's typed view; no file outside core/ includes this header (the lint test
/// lint_core_only_headers, tools/core_only_headers.sh, checks it).
struct ParamReads {
  static const Param& at(const Params& p, const std::string& k) { return p.at(k); }
  static int64_t get_int(const Params& p, const std::string& k) { return p.get_int(k); }
  static bool get_bool(const Params& p, const std::string& k) { return p.get_bool(k); }
  static double get_float(const Params& p, const std::string& k) { return p.get_float(k); }
  static const std::string& get_string(const Params& p, const std::string& k) { return p.get_string(k); }
  static const std::vector<int64_t>& get_ints(const Params& p, const std::string& k) { return p.get_ints(k); }
  static DType get_dtype(const Params& p, const std::string& k) { return p.get_dtype(k); }
  static MemoryKind get_memory_kind(const Params& p, const std::string& k) { return p.get_memory_kind(k); }
  static const ClosedJaxprPtr& get_jaxpr(const Params& p, const std::string& k) { return p.get_jaxpr(k); }
  static const std::vector<ClosedJaxprPtr>& get_jaxprs(const Params& p, const std::string& k) {
    return p.get_jaxprs(k);
  }
  static const ParamObjectPtr& get_object(const Params& p, const std::string& k) { return p.get_object(k); }
};

/// Param `k` of `p`; ValueError "missing parameter 'k'" when absent.
inline const Param& param_at(const Params& p, const std::string& k) { return ParamReads::at(p, k); }
/// Typed reads; each throws ValueError naming the key if it is missing or of another type.
inline int64_t param_int(const Params& p, const std::string& k) { return ParamReads::get_int(p, k); }
inline bool param_bool(const Params& p, const std::string& k) { return ParamReads::get_bool(p, k); }
inline double param_float(const Params& p, const std::string& k) { return ParamReads::get_float(p, k); }
inline const std::string& param_string(const Params& p, const std::string& k) {
  return ParamReads::get_string(p, k);
}
inline const std::vector<int64_t>& param_ints(const Params& p, const std::string& k) {
  return ParamReads::get_ints(p, k);
}
inline DType param_dtype(const Params& p, const std::string& k) { return ParamReads::get_dtype(p, k); }
inline MemoryKind param_memory_kind(const Params& p, const std::string& k) {
  return ParamReads::get_memory_kind(p, k);
}
inline const ClosedJaxprPtr& param_jaxpr(const Params& p, const std::string& k) {
  return ParamReads::get_jaxpr(p, k);
}
inline const std::vector<ClosedJaxprPtr>& param_jaxprs(const Params& p, const std::string& k) {
  return ParamReads::get_jaxprs(p, k);
}
inline const ParamObjectPtr& param_object(const Params& p, const std::string& k) {
  return ParamReads::get_object(p, k);
}

}  // namespace minijax
