// minijax linear-algebra kernels: the row-major mappings onto LAPACK's column-major routines, their
// workspace sizes and the NaN filling of failed factorisations (core/linalg_kernels.h).
#include "core/linalg_kernels.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "core/dtype.h"
#include "core/errors.h"
#include "core/gemm.h"

#include "core/lapack.h"

namespace minijax::linalg_kernels {

namespace {
// Every LAPACK call here holds serial_openblas_mutex() (core/gemm.h): Debian's serial OpenBLAS is
// not safe to call from two threads at once, and the compiled runtime runs a batch's matrices as
// oneTBB tasks (measured before this lock: concurrent dpotrf_, dgetrf_, dsytrd_, dstedc_ and
// dsyevd_ calls on 128 x 128 matrices from two threads returned wrong numbers, a compiled
// [64, 128, 128] eigh eigenvalues off by up to 0.5). So those tasks take turns.
using LapackLock = std::lock_guard<std::mutex>;
std::mutex& lapack_mutex() { return serial_openblas_mutex(); }
}  // namespace

template <class T>
int cholesky_lower(T* a, int64_t n) {
  if (n == 0) return 0;
  int info = 0;
  LapackLock lock(lapack_mutex());
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
  LapackLock lock(lapack_mutex());
  lapack::trsm<T>(left_side ? 'R' : 'L', lower ? 'U' : 'L', transpose_a ? 'T' : 'N',
                  unit_diagonal ? 'U' : 'N', int(cols), int(rows), a, int(m), b, int(cols));
}

template int cholesky_lower<float>(float*, int64_t);
template int cholesky_lower<double>(double*, int64_t);
template void triangular_solve<float>(const float*, float*, int64_t, int64_t, bool, bool, bool, bool);
template void triangular_solve<double>(const double*, double*, int64_t, int64_t, bool, bool, bool, bool);

namespace {

constexpr int64_t kAlign = 64;
int64_t align_up(int64_t b) { return (b + kAlign - 1) / kAlign * kAlign; }
int lda_of(int64_t rows) { return int(std::max<int64_t>(1, rows)); }

// The pieces of a workspace of `capacity` bytes, laid out in order, each 64-byte aligned. A piece
// past the capacity is an internal error (std::length_error), never a write past the workspace.
struct Carve {
  char* base;
  int64_t capacity;
  int64_t used = 0;
  template <class U>
  U* take(int64_t count) {
    U* p = reinterpret_cast<U*>(base + used);
    used += align_up(count * int64_t(sizeof(U)));
    if (used > capacity)
      throw std::length_error("linalg workspace of " + std::to_string(capacity) + " bytes, " +
                              std::to_string(used) + " needed");
    return p;
  }
};

// LAPACK's workspace size from its query (returned in a T), at least `minimum` (the routine's
// documented minimum): a float holds integers above 2^24 only to its precision and may round the
// size down (LAPACK 3.11 added sroundup_lwork for this), so it is first rounded up by one ulp.
// Sizes past LAPACK's 32-bit integers are a ValueError naming `what`.
template <class T>
int64_t lwork_of(T query, int64_t minimum, const std::string& what) {
  double q = double(query);
  if constexpr (sizeof(T) == 4)
    q = double(std::nextafter(float(query), std::numeric_limits<float>::infinity()));
  const int64_t lw = std::max<int64_t>({1, minimum, int64_t(std::ceil(q))});
  if (lw > int64_t(INT_MAX))
    throw ValueError(what + ": LAPACK's workspace of " + std::to_string(lw) +
                     " elements exceeds its 32-bit sizes");
  return lw;
}

// "<fn> of a m x n matrix", for messages; `fn_of_a` is "<fn> of a".
std::string dims_str(const char* fn_of_a, int64_t m, int64_t n) {
  return std::string(fn_of_a) + " " + std::to_string(m) + " x " + std::to_string(n) + " matrix";
}

template <class T>
bool all_finite(const T* x, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

template <class T>
void fill_nan(T* x, int64_t count) {
  if (x) std::fill(x, x + count, std::numeric_limits<T>::quiet_NaN());
}

template <class T>
void set_identity(T* x, int64_t rows, int64_t cols) {
  std::fill(x, x + rows * cols, T(0));
  for (int64_t i = 0; i < std::min(rows, cols); ++i) x[i * cols + i] = T(1);
}

// dst[j * dst_ld + i] = src[i * src_ld + j] for i < rows, j < cols (src and dst do not overlap).
// Two rows' pairs of elements are loaded and unpacked into two columns' pairs (2 x 2 blocks in
// registers), in strips of 8 source columns: the 8 destination rows a strip writes stay in the
// cache while it walks down the rows, whatever the strides (in square tiles, a power-of-two stride
// such as 1024 doubles puts every row of a tile in one cache set). Measured on the development
// machine, a 1024 x 1024 f64 transpose: 0.7 ms (a copy: 0.2 ms; an element at a time in 8 x 8
// tiles: 3.4 ms, in 32 x 32 tiles: 9.5 ms, when qr's two of them cost it 8%); 128 x 128: 3.7 us.
template <class T>
void transpose(const T* src, int64_t src_ld, T* dst, int64_t dst_ld, int64_t rows, int64_t cols) {
  typedef T Pair __attribute__((vector_size(2 * sizeof(T))));
  constexpr int64_t kStrip = 8;
  const int64_t r2 = rows & ~int64_t(1), c2 = cols & ~int64_t(1);
  for (int64_t jb = 0; jb < c2; jb += kStrip) {
    const int64_t je = std::min(c2, jb + kStrip);
    for (int64_t i = 0; i < r2; i += 2)
      for (int64_t j = jb; j < je; j += 2) {
        Pair a, b;
        std::memcpy(&a, src + i * src_ld + j, sizeof(Pair));
        std::memcpy(&b, src + (i + 1) * src_ld + j, sizeof(Pair));
        const Pair lo = __builtin_shufflevector(a, b, 0, 2), hi = __builtin_shufflevector(a, b, 1, 3);
        std::memcpy(dst + j * dst_ld + i, &lo, sizeof(Pair));
        std::memcpy(dst + (j + 1) * dst_ld + i, &hi, sizeof(Pair));
      }
  }
  for (int64_t i = 0; i < rows; ++i)  // the odd last column, and the odd last row
    for (int64_t j = i < r2 ? c2 : 0; j < cols; ++j) dst[j * dst_ld + i] = src[i * src_ld + j];
}

// Row-major rows x cols `x` to / from column-major with leading dimension ld.
template <class T>
void to_col_major(const T* x, T* c, int64_t rows, int64_t cols, int64_t ld) {
  transpose(x, cols, c, ld, rows, cols);
}
template <class T>
void from_col_major(const T* c, T* x, int64_t rows, int64_t cols, int64_t ld) {
  transpose(c, ld, x, cols, cols, rows);
}

// A square n x n matrix transposed in place, 8 x 8 tiles at a time (eigh's eigenvectors).
template <class T>
void transpose_in_place(T* v, int64_t n) {
  constexpr int64_t kTile = 8;
  for (int64_t ib = 0; ib < n; ib += kTile)
    for (int64_t jb = ib; jb < n; jb += kTile)
      for (int64_t i = ib; i < std::min(n, ib + kTile); ++i)
        for (int64_t j = std::max(jb, i + 1); j < std::min(n, jb + kTile); ++j)
          std::swap(v[i * n + j], v[j * n + i]);
}

// The workspace queries below call LAPACK: their callers hold lapack_mutex(). A kernel takes the
// lock once per matrix, around its query and its routines (each hand-over of the lock between two
// threads costs a futex wake; qr's five per matrix were 6% of a batched [64, 128, 128] call).
template <class T>
int64_t qr_lwork(int64_t m, int64_t n, int64_t qc) {
  const int64_t k = std::min(m, n);
  if (k == 0 && qc == 0) return 0;
  T q1 = 0, q2 = 0, dummy = 0;
  int info = 0;
  if (k > 0) lapack::geqrf<T>(int(m), int(n), &dummy, lda_of(m), &dummy, &q1, -1, &info);
  if (qc > 0) lapack::orgqr<T>(int(m), int(qc), int(k), &dummy, lda_of(m), &dummy, &q2, -1, &info);
  // ?geqrf_ needs at least n, ?orgqr_ at least its column count (LAPACK's documentation).
  return std::max(lwork_of<T>(q1, n, dims_str("qr of a", m, n)),
                  lwork_of<T>(q2, qc, dims_str("qr of a", m, n)));
}

template <class T>
std::pair<int64_t, int64_t> syevd_lwork(int64_t n) {
  if (n == 0) return {0, 0};
  T w = 0, dummy = 0;
  int iw = 0, info = 0;
  lapack::syevd<T>('V', 'U', int(n), &dummy, int(n), &dummy, &w, -1, &iw, -1, &info);
  // JOBZ = 'V': LWORK >= 1 + 6 n + 2 n^2, LIWORK >= 3 + 5 n (LAPACK's dsyevd documentation).
  const std::string what = dims_str("eigh of a", n, n);
  return {lwork_of<T>(w, 1 + 6 * n + 2 * n * n, what), lwork_of<double>(double(iw), 3 + 5 * n, what)};
}

char gesdd_jobz(bool full, bool uv) { return !uv ? 'N' : full ? 'A' : 'S'; }

template <class T>
int64_t gesdd_lwork(int64_t m, int64_t n, bool full, bool uv) {
  // ?gesdd_ runs on the column-major x^T: n x m.
  const int64_t k = std::min(m, n);
  if (k == 0) return 0;
  T w = 0, dummy = 0;
  int iw = 0, info = 0;
  const int64_t uc = full ? m : k;
  lapack::gesdd<T>(gesdd_jobz(full, uv), int(n), int(m), &dummy, int(n), &dummy, &dummy, int(n), &dummy,
                   lda_of(uv ? uc : 1), &w, -1, &iw, &info);
  // LAPACK's dgesdd documentation: LWORK >= 3 mn + max(mx, 7 mn) for JOBZ = 'N', and
  // 4 mn^2 + 6 mn + mx for 'S' and 'A' (mn, mx = min and max of the dims).
  const int64_t mx = std::max(m, n);
  const int64_t minimum = uv ? 4 * k * k + 6 * k + mx : 3 * k + std::max(mx, 7 * k);
  return lwork_of<T>(w, minimum, dims_str("svd of a", m, n));
}

template <class T>
int64_t lu_bytes(int64_t m, int64_t n) {
  return align_up(m * n * int64_t(sizeof(T))) + align_up(std::min(m, n) * int64_t(sizeof(int)));
}
template <class T>
int64_t qr_bytes(int64_t m, int64_t n, bool full) {
  const int64_t k = std::min(m, n), qc = full ? m : k;
  LapackLock lock(lapack_mutex());
  return align_up(m * std::max(n, qc) * int64_t(sizeof(T))) + align_up(k * int64_t(sizeof(T))) +
         align_up(qr_lwork<T>(m, n, qc) * int64_t(sizeof(T)));
}
template <class T>
int64_t eigh_bytes(int64_t n) {
  LapackLock lock(lapack_mutex());
  const auto [lw, liw] = syevd_lwork<T>(n);
  return align_up(lw * int64_t(sizeof(T))) + align_up(liw * int64_t(sizeof(int)));
}
template <class T>
int64_t svd_bytes(int64_t m, int64_t n, bool full, bool uv) {
  const int64_t k = std::min(m, n);
  LapackLock lock(lapack_mutex());
  return align_up(m * n * int64_t(sizeof(T))) +
         align_up(gesdd_lwork<T>(m, n, full, uv) * int64_t(sizeof(T))) +
         align_up(8 * k * int64_t(sizeof(int)));
}

template <class F>
int64_t by_dtype(int32_t dtype, F&& f) {
  if (DType(dtype) == DType::f32) return f.template operator()<float>();
  return f.template operator()<double>();
}

}  // namespace

int64_t workspace_slots(int64_t batch) {
  const int64_t hw = std::max<int64_t>(1, int64_t(std::thread::hardware_concurrency()));
  return std::max<int64_t>(1, std::min(batch, hw));
}

int64_t lu_workspace_bytes(int32_t dtype, int64_t m, int64_t n) {
  return by_dtype(dtype, [&]<class T>() { return lu_bytes<T>(m, n); });
}
int64_t qr_workspace_bytes(int32_t dtype, int64_t m, int64_t n, bool full) {
  return by_dtype(dtype, [&]<class T>() { return qr_bytes<T>(m, n, full); });
}
int64_t eigh_workspace_bytes(int32_t dtype, int64_t n) {
  return by_dtype(dtype, [&]<class T>() { return eigh_bytes<T>(n); });
}
int64_t svd_workspace_bytes(int32_t dtype, int64_t m, int64_t n, bool full, bool uv) {
  return by_dtype(dtype, [&]<class T>() { return svd_bytes<T>(m, n, full, uv); });
}

template <class T>
int lu(const T* x, T* a, int64_t m, int64_t n, int32_t* pivots, int32_t* perm, void* work,
       int64_t work_bytes) {
  const int64_t k = std::min(m, n);
  for (int64_t i = 0; i < m; ++i) perm[i] = int32_t(i);
  if (k == 0) {
    if (x != a) std::copy(x, x + m * n, a);
    return 0;
  }
  Carve w{static_cast<char*>(work), work_bytes};
  T* c = w.take<T>(m * n);
  int* ipiv = w.take<int>(k);
  to_col_major(x, c, m, n, m);
  int info = 0;
  {
    LapackLock lock(lapack_mutex());
    lapack::getrf<T>(int(m), int(n), c, int(m), ipiv, &info);
  }
  from_col_major(c, a, m, n, m);
  for (int64_t i = 0; i < k; ++i) {
    pivots[i] = ipiv[i] - 1;
    std::swap(perm[i], perm[pivots[i]]);
  }
  return info;
}

template <class T>
int qr(const T* x, T* q, T* r, int64_t m, int64_t n, bool full, void* work, int64_t work_bytes) {
  const int64_t k = std::min(m, n), qc = full ? m : k, rr = full ? m : k;
  if (k == 0) {
    std::fill(r, r + rr * n, T(0));
    set_identity(q, m, qc);
    return 0;
  }
  Carve w{static_cast<char*>(work), work_bytes};
  T* c = w.take<T>(m * std::max(n, qc));
  T* tau = w.take<T>(k);
  to_col_major(x, c, m, n, m);
  int info = 0;
  {
    LapackLock lock(lapack_mutex());
    const int64_t lwork = qr_lwork<T>(m, n, qc);
    T* wk = w.take<T>(lwork);
    lapack::geqrf<T>(int(m), int(n), c, int(m), tau, wk, int(lwork), &info);
    if (info != 0) return info;
    from_col_major(c, r, rr, n, m);  // R: the upper triangle of the first rr rows
    for (int64_t i = 1; i < rr; ++i) std::fill(r + i * n, r + i * n + std::min(i, n), T(0));
    lapack::orgqr<T>(int(m), int(qc), int(k), c, int(m), tau, wk, int(lwork), &info);
  }
  from_col_major(c, q, m, qc, m);
  return info;
}

template <class T>
int eigh(const T* x, T* v, T* w, int64_t n, bool lower, void* work, int64_t work_bytes) {
  if (n == 0) return 0;
  // The triangle read: row-major lower is col <= row.
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = lower ? 0 : i; j < (lower ? i + 1 : n); ++j)
      if (!std::isfinite(x[i * n + j])) {
        fill_nan(v, n * n);
        fill_nan(w, n);
        return -1;
      }
  if (x != v) std::copy(x, x + n * n, v);
  int info = 0;
  {
    LapackLock lock(lapack_mutex());
    const auto [lw, liw] = syevd_lwork<T>(n);
    Carve c{static_cast<char*>(work), work_bytes};
    T* wk = c.take<T>(lw);
    int* iwk = c.take<int>(liw);
    // The row-major matrix is its transpose in column-major order: its lower triangle is 'U' there.
    lapack::syevd<T>('V', lower ? 'U' : 'L', int(n), v, int(n), w, wk, int(lw), iwk, int(liw), &info);
  }
  if (info != 0) {
    fill_nan(v, n * n);
    fill_nan(w, n);
    return info;
  }
  // LAPACK's eigenvectors are its columns, i.e. our rows: transpose in place.
  transpose_in_place(v, n);
  return 0;
}

template <class T>
int svd(const T* x, T* s, T* u, T* vt, int64_t m, int64_t n, bool full, bool uv, void* work,
        int64_t work_bytes) {
  const int64_t k = std::min(m, n), uc = full ? m : k, vr = full ? n : k;
  if (k == 0) {
    if (uv) set_identity(u, m, uc), set_identity(vt, vr, n);
    return 0;
  }
  if (!all_finite(x, m * n)) {
    fill_nan(s, k);
    if (uv) fill_nan(u, m * uc), fill_nan(vt, vr * n);
    return -1;
  }
  Carve c{static_cast<char*>(work), work_bytes};
  T* a = c.take<T>(m * n);
  std::copy(x, x + m * n, a);
  int info = 0;
  T dummy = 0;
  {
    LapackLock lock(lapack_mutex());
    const int64_t lwork = gesdd_lwork<T>(m, n, full, uv);
    T* wk = c.take<T>(lwork);
    int* iwk = c.take<int>(8 * k);
    // On the column-major x^T (n x m): its U (n x vr, ld n) is our vt, its VT (uc x m, ld uc) our u.
    lapack::gesdd<T>(gesdd_jobz(full, uv), int(n), int(m), a, int(n), s, uv ? vt : &dummy, int(n),
                     uv ? u : &dummy, lda_of(uv ? uc : 1), wk, int(lwork), iwk, &info);
  }
  if (info != 0) {
    fill_nan(s, k);
    if (uv) fill_nan(u, m * uc), fill_nan(vt, vr * n);
  }
  return info;
}

template int lu<float>(const float*, float*, int64_t, int64_t, int32_t*, int32_t*, void*, int64_t);
template int lu<double>(const double*, double*, int64_t, int64_t, int32_t*, int32_t*, void*, int64_t);
template int qr<float>(const float*, float*, float*, int64_t, int64_t, bool, void*, int64_t);
template int qr<double>(const double*, double*, double*, int64_t, int64_t, bool, void*, int64_t);
template int eigh<float>(const float*, float*, float*, int64_t, bool, void*, int64_t);
template int eigh<double>(const double*, double*, double*, int64_t, bool, void*, int64_t);
template int svd<float>(const float*, float*, float*, float*, int64_t, int64_t, bool, bool, void*, int64_t);
template int svd<double>(const double*, double*, double*, double*, int64_t, int64_t, bool, bool, void*,
                         int64_t);

}  // namespace minijax::linalg_kernels
