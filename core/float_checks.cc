// minijax debug_nans / debug_infs: scans results for NaN and ±Inf, and raises FloatingPointError
// for eager primitives and for jitted functions (re-run op by op to find the primitive).
#include "core/float_checks.h"

#include <cmath>

#include "core/config.h"
#include "core/primitive.h"

namespace minijax::detail {

bool float_checks_on() { return config().debug_nans || config().debug_infs; }

namespace {

// Row-major element `flat` of a box of `shape` whose dim d starts at offset[d] of the array
// (a shard's box; all zeros for an unsharded array), as "[i, j]".
std::string position(const Shape& shape, int64_t flat, const std::vector<std::pair<int64_t, int64_t>>& index) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
    if (d < index.size()) idx[d] += index[d].first;
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

// The first caught value of one unsharded concrete array and its flat index.
std::optional<std::pair<std::string, int64_t>> scan_buffer(const Array& x) {
  const ShapedArray& av = x.aval();
  if (!is_floating(av.dtype) || av.size() == 0) return std::nullopt;
  const bool nans = config().debug_nans, infs = config().debug_infs;
  std::optional<std::pair<std::string, int64_t>> found;
  dispatch_dtype(av.dtype, [&]<class T>() {
    if constexpr (!std::is_integral_v<T>) {
      const T* p = static_cast<const T*>(x.raw_data());
      for (int64_t i = 0; i < av.size(); ++i) {
        double v;
        if constexpr (std::is_same_v<T, bfloat16>) v = double(float(p[i]));  // bf16 converts through f32
        else v = double(p[i]);
        if (nans && std::isnan(v)) return void(found = std::make_pair(std::string("nan"), i));
        if (infs && std::isinf(v)) return void(found = std::make_pair(std::string("inf"), i));
      }
    }
  });
  return found;
}

const char* what_of(const std::string& kind) { return kind == "nan" ? "a NaN" : "an Inf"; }

}  // namespace

std::optional<std::pair<std::string, std::string>> first_bad_float(const Array& x) {
  if (!x.defined() || !x.is_concrete() || !is_floating(x.dtype())) return std::nullopt;
  for (const Shard& s : x.addressable_shards())
    if (auto f = scan_buffer(s.data)) return std::make_pair(f->first, position(s.data.shape(), f->second, s.index));
  return std::nullopt;
}

void check_primitive_outputs(const Primitive& p, const std::vector<ShapedArray>& in, const std::vector<Array>& outs,
                             std::source_location loc) {
  for (size_t k = 0; k < outs.size(); ++k) {
    auto bad = first_bad_float(outs[k]);
    if (!bad) continue;
    std::string ops;
    for (size_t i = 0; i < in.size(); ++i) ops += (i ? ", " : "") + in[i].str();
    throw FloatingPointError("invalid value (" + bad->first + ") encountered in " + p.name + "(" + ops +
                                 "): output " + std::to_string(k) + " " + outs[k].aval().str() + " has " +
                                 what_of(bad->first) + " at " + bad->second,
                             loc);
  }
}

void check_jit_outputs(const std::vector<Array>& outs, const std::string& name, bool donated,
                       const std::function<void()>& rerun, std::source_location loc) {
  for (size_t k = 0; k < outs.size(); ++k) {
    auto bad = first_bad_float(outs[k]);
    if (!bad) continue;
    const std::string head = "invalid value (" + bad->first + ") encountered in the output of jit '" + name +
                             "': output " + std::to_string(k) + " " + outs[k].aval().str() + " has " +
                             what_of(bad->first) + " at " + bad->second;
    if (donated)
      throw FloatingPointError(head + "; re-running the function op by op to find the primitive is impossible "
                                      "because arguments were donated (donate_argnums): call it without donation "
                                      "to find the primitive",
                               loc);
    if (!rerun)
      throw FloatingPointError(head + "; a compiled executable holds no function to re-run op by op: call the jit "
                                      "function itself to find the primitive",
                               loc);
    try {
      rerun();  // throws FloatingPointError at the first offending primitive, at the user's line
    } catch (const FloatingPointError& e) {
      // A primitive the library bound (a derivative rule's) names the jit's line instead.
      if (is_library_location(e.where()) && !is_library_location(loc)) rethrow_at(e, "", loc);
      throw;
    }
    throw FloatingPointError(head + "; re-running the function op by op (eagerly) produced none, so no primitive "
                                    "can be named (the compiled code and the eager evaluation differ here)",
                             loc);
  }
}

}  // namespace minijax::detail
