// minijax dot layouts: groups of dims as (extent, stride) pairs and the GEMM flags they allow.
// Owns gemm_layout.
#include "jit/passes/dot_layout.h"

#include <algorithm>
#include <vector>

namespace minijax {

namespace {

struct Group {
  int64_t extent = 1, stride = 0;
  bool ok = true;
};

// dims as one (extent, stride) group: consecutive in memory in the listed order (extent-1 dims
// never constrain the layout).
Group group_of(const Shape& shape, const std::vector<int64_t>& dims) {
  Group g;
  auto st = strides_of(shape);
  std::vector<int64_t> ds;
  for (int64_t d : dims) {
    g.extent *= shape[size_t(d)];
    if (shape[size_t(d)] != 1) ds.push_back(d);
  }
  if (ds.empty()) return g;
  for (size_t i = 0; i + 1 < ds.size(); ++i)
    if (st[size_t(ds[i])] != st[size_t(ds[i + 1])] * shape[size_t(ds[i + 1])]) g.ok = false;
  g.stride = st[size_t(ds.back())];
  return g;
}

std::vector<int64_t> free_dims(size_t rank, const std::vector<int64_t>& batch, const std::vector<int64_t>& contract) {
  std::vector<int64_t> f;
  for (int64_t d = 0; d < int64_t(rank); ++d)
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contract.begin(), contract.end(), d) == contract.end())
      f.push_back(d);
  return f;
}

// A matrix with rows `rows` and columns `cols`: stored row-major (cols contiguous: no transpose,
// ld = the rows' stride) or column-major (rows contiguous: transposed, ld = the cols' stride).
bool matrix(const Group& rows, const Group& cols, bool& trans, int64_t& ld) {
  if (!rows.ok || !cols.ok) return false;
  if (cols.extent == 1 || cols.stride == 1) {
    trans = false;
    ld = rows.extent == 1 ? std::max<int64_t>(1, cols.extent) : rows.stride;
    return ld >= std::max<int64_t>(1, cols.extent);
  }
  if (rows.extent == 1 || rows.stride == 1) {
    trans = true;
    ld = cols.stride;
    return ld >= std::max<int64_t>(1, rows.extent);
  }
  return false;
}

}  // namespace

std::optional<GemmLayout> gemm_layout(const Shape& ls, const Shape& rs, const lax::DotDimensionNumbers& d) {
  Group lb = group_of(ls, d.lhs_batch), lm = group_of(ls, free_dims(ls.size(), d.lhs_batch, d.lhs_contracting)),
        lk = group_of(ls, d.lhs_contracting);
  Group rb = group_of(rs, d.rhs_batch), rn = group_of(rs, free_dims(rs.size(), d.rhs_batch, d.rhs_contracting)),
        rk = group_of(rs, d.rhs_contracting);
  GemmLayout g;
  g.batch = lb.extent, g.m = lm.extent, g.n = rn.extent, g.k = lk.extent;
  if (g.batch * g.m * g.n * g.k == 0) {  // no element is read: any layout does (k = 0 gives zeros)
    g.lda = std::max<int64_t>(1, g.k), g.ldb = std::max<int64_t>(1, g.n);
    return g;
  }
  if (!lb.ok || !rb.ok) return std::nullopt;
  if (!matrix(lm, lk, g.trans_a, g.lda) || !matrix(rk, rn, g.trans_b, g.ldb)) return std::nullopt;
  g.stride_a = g.batch > 1 ? lb.stride : 0;
  g.stride_b = g.batch > 1 ? rb.stride : 0;
  return g;
}

}  // namespace minijax
