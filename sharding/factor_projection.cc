// minijax factor projection: dealing one dim's axes to its factors (Shardy's projection) and the
// sub-axis arithmetic it needs.
#include "sharding/factor_projection.h"

#include <numeric>

namespace minijax {

std::pair<int64_t, int64_t> axis_pre_size(const AxisRef& a, const Mesh& m) {
  if (a.is_sub_axis()) return {a.pre_size, a.size};
  return {1, m.axis_size(a.name)};
}

AxisRef axis_ref_of(const std::string& name, int64_t pre, int64_t size, const Mesh& m) {
  if (pre == 1 && size == m.axis_size(name)) return AxisRef::axis(name);
  return AxisRef::sub(name, pre, size);
}

std::vector<std::vector<AxisRef>> project_dim_axes(const std::vector<AxisRef>& axes,
                                                   const std::vector<int>& factors,
                                                   const std::vector<int64_t>& factor_sizes,
                                                   const Mesh& m) {
  std::vector<std::vector<AxisRef>> out(factors.size());
  if (factors.empty()) return out;
  size_t fi = 0;
  int64_t cap = factor_sizes[size_t(factors[0])];
  for (auto& a : axes) {
    auto [pre, size] = axis_pre_size(a, m);
    while (size > 1) {
      if (fi + 1 == factors.size()) {  // the last factor takes the rest
        out[fi].push_back(axis_ref_of(a.name, pre, size, m));
        cap = std::max<int64_t>(1, cap / std::gcd(cap, size));
        size = 1;
        break;
      }
      if (cap == 1) {
        ++fi;
        cap = factor_sizes[size_t(factors[fi])];
        continue;
      }
      int64_t g = std::gcd(cap, size);
      if (g == 1) return out;
      out[fi].push_back(axis_ref_of(a.name, pre, g, m));
      cap /= g;
      pre *= g;
      size /= g;
    }
  }
  return out;
}

}  // namespace minijax
