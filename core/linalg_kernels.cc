// minijax linear-algebra kernels: the row-major mappings onto LAPACK's column-major routines and
// the NaN filling of failed factorisations (core/linalg_kernels.h).
#include "core/linalg_kernels.h"

#include <algorithm>
#include <limits>

#include "core/lapack.h"

namespace minijax::linalg_kernels {

template <class T>
int cholesky_lower(T* a, int64_t n) {
  if (n == 0) return 0;
  int info = 0;
  lapack::potrf<T>('U', int(n), a, int(n), &info);
  if (info != 0) {
    std::fill(a, a + n * n, std::numeric_limits<T>::quiet_NaN());
    return info;
  }
  for (int64_t i = 0; i < n; ++i) std::fill(a + i * n + i + 1, a + (i + 1) * n, T(0));
  return 0;
}

template <class T>
void triangular_solve(const T* a, T* b, int64_t rows, int64_t cols, bool left_side, bool lower,
                      bool transpose_a, bool unit_diagonal) {
  if (rows == 0 || cols == 0) return;
  const int64_t m = left_side ? rows : cols;
  lapack::trsm<T>(left_side ? 'R' : 'L', lower ? 'U' : 'L', transpose_a ? 'T' : 'N',
                  unit_diagonal ? 'U' : 'N', int(cols), int(rows), a, int(m), b, int(cols));
}

template int cholesky_lower<float>(float*, int64_t);
template int cholesky_lower<double>(double*, int64_t);
template void triangular_solve<float>(const float*, float*, int64_t, int64_t, bool, bool, bool, bool);
template void triangular_solve<double>(const double*, double*, int64_t, int64_t, bool, bool, bool, bool);

}  // namespace minijax::linalg_kernels
