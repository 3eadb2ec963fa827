// minijax eager conv_general_dilated: XLA's ConvGeneralDilated on concrete arrays.
// Owns the canonical-layout copies, im2col per group, the GEMM (f32/f64) and the direct loop (bf16, ints).
//
// Algorithm: both operands are copied (and converted to the computation type) into the canonical
// layout, lhs [N, C, S...] and rhs [O, I, K...]. For each group (feature or batch group) and block
// of output images, the columns matrix [I * prod(K), images * prod(Q)] holds for row (c, k) and
// output position q the input element the window reads there (zero for padding and lhs-dilation
// holes, input_index_table); the group's kernel rows [O / groups, I * prod(K)] times the columns
// give the group's output features. The result is copied from [N / batch_groups, O, Q...] into
// out_spec's layout. Semantics of the groups (XLA's operation semantics, "Conv"): with
// feature_group_count G the input features split into G runs of I, output features into G runs,
// run g of the output reading run g of the input; with batch_group_count B the input batch splits
// into B runs of N / B (group-major) and output feature run b reads batch run b.
#include "core/primitives/convolution_eager.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>

#include "core/gemm.h"

namespace minijax::conv_detail {

namespace {

using Ints = std::vector<int64_t>;

// Elements of the scratch buffers of one block of images (4 Mi elements each: 16 MiB in f32; a
// single image may need more).
constexpr int64_t kColumnBudget = int64_t(1) << 22;

template <class D, class S>
D convert(S v) {
  if constexpr (std::is_same_v<S, D>) return v;
  else if constexpr (std::is_same_v<S, bfloat16>) return D(float(v));
  else if constexpr (std::is_same_v<D, bfloat16>) return bfloat16(float(v));
  else return D(v);
}

// A buffer of n elements left uninitialised (every element is written before it is read).
template <class A>
std::unique_ptr<A[]> uninit(int64_t n) {
  return std::unique_ptr<A[]>(new A[size_t(std::max<int64_t>(n, 1))]);
}

// Scratch memory of this thread that survives the call (slot 0: the columns, 1: one block of the
// GEMM's result), so that repeated convolutions neither zero-fill nor page-fault fresh buffers.
template <class A>
A* scratch(int slot, int64_t n) {
  thread_local std::vector<unsigned char> buffers[2];
  std::vector<unsigned char>& b = buffers[slot];
  const size_t bytes = size_t(std::max<int64_t>(n, 1)) * sizeof(A);
  if (b.size() < bytes) b.resize(bytes);
  return reinterpret_cast<A*>(b.data());
}

int64_t product(const Ints& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// Copies the elements of a block of extents `shape` (canonical order), element i going from
// src[sum(i_d * ss[d])] to dst[sum(i_d * ds[d])], converted from S to D.
template <class S, class D>
void copy_permuted(const S* src, const Ints& ss, D* dst, const Ints& ds, const Shape& shape) {
  const int64_t total = shape_size(shape);
  if (total == 0) return;
  const size_t r = shape.size();
  const int64_t inner = shape[r - 1], si = ss[r - 1], di = ds[r - 1];
  Ints idx(r, 0);
  int64_t s = 0, d = 0;
  for (int64_t o = 0; o < total / inner; ++o) {
    for (int64_t i = 0; i < inner; ++i) dst[d + i * di] = convert<D>(src[s + i * si]);
    for (size_t k = r - 1; k-- > 0;) {
      ++idx[k];
      s += ss[k];
      d += ds[k];
      if (idx[k] < shape[k]) break;
      s -= ss[k] * shape[k];
      d -= ds[k] * shape[k];
      idx[k] = 0;
    }
  }
}

// `x`'s dims `spec` (canonical order) as a contiguous canonical array of type A.
template <class A>
std::unique_ptr<A[]> canonical(const Array& x, const Ints& spec) {
  std::unique_ptr<A[]> out = uninit<A>(x.size());
  const Ints st = strides_of(x.shape());
  Shape cs;
  Ints ss;
  for (int64_t d : spec) {
    cs.push_back(x.shape()[size_t(d)]);
    ss.push_back(st[size_t(d)]);
  }
  dispatch_dtype(x.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>)
      copy_permuted<T, A>(x.data<T>(), ss, out.get(), strides_of(cs), cs);
  });
  return out;
}

// For one kernel index of the last spatial dim, the output positions [lo, hi) that read the input,
// when they read it at evenly spaced indices first, first + step, ... (no lhs-dilation holes
// between them): then a run of the columns is zeros, a strided copy (a memcpy for step 1), zeros.
struct Run {
  bool even = false;
  int64_t lo = 0, hi = 0, first = 0, step = 1;
};

// The spatial index tables and strides of one geometry, and the row filler of the columns.
struct Windows {
  size_t ns;
  std::vector<Ints> tab;  // input_index_table per spatial dim
  std::vector<Run> runs;  // per kernel index of the last spatial dim
  Ints in_stride, out, window;
  int64_t outer;  // product of the output's spatial sizes but the last
};

Run run_of(const int64_t* t, int64_t n) {
  Run r;
  r.lo = 0;
  while (r.lo < n && t[r.lo] < 0) ++r.lo;
  r.hi = r.lo;
  while (r.hi < n && t[r.hi] >= 0) ++r.hi;
  for (int64_t q = r.hi; q < n; ++q)
    if (t[q] >= 0) return r;  // holes between valid positions: not a run
  r.first = r.lo < r.hi ? t[r.lo] : 0;
  r.step = r.hi - r.lo > 1 ? t[r.lo + 1] - t[r.lo] : 1;
  for (int64_t q = r.lo + 1; q < r.hi; ++q)
    if (t[q] - t[q - 1] != r.step) return r;
  r.even = true;
  return r;
}

Windows windows_of(const ConvGeometry& g) {
  Windows w;
  w.ns = g.num_spatial();
  w.out = g.out;
  w.window = g.window;
  w.in_stride = strides_of(g.in);
  w.outer = 1;
  for (size_t d = 0; d < w.ns; ++d) {
    w.tab.push_back(input_index_table(g, d));
    if (d + 1 < w.ns) w.outer *= g.out[d];
  }
  const size_t last = w.ns - 1;
  for (int64_t k = 0; k < g.window[last]; ++k)
    w.runs.push_back(run_of(w.tab[last].data() + k * g.out[last], g.out[last]));
  return w;
}

// One row of the columns: for kernel position k (one index per spatial dim), the input element of
// `plane` (one feature of one image, [S...]) each output position reads, or zero.
template <class A>
void fill_row(const A* plane, const Windows& w, const Ints& k, Ints& qi, A* row) {
  const size_t last = w.ns - 1;
  const int64_t qn = w.out[last];
  const int64_t* inner = w.tab[last].data() + k[last] * qn;
  const Run& run = w.runs[size_t(k[last])];
  std::fill(qi.begin(), qi.end(), 0);
  for (int64_t o = 0; o < w.outer; ++o, row += qn) {
    int64_t base = 0;
    bool valid = true;
    for (size_t d = 0; d < last && valid; ++d) {
      const int64_t s = w.tab[d][size_t(k[d] * w.out[d] + qi[d])];
      valid = s >= 0;
      base += s * w.in_stride[d];
    }
    if (!valid) {
      std::fill(row, row + qn, A(0));
    } else if (run.even) {
      std::fill(row, row + run.lo, A(0));
      const A* src = plane + base + run.first;
      if (run.step == 1) std::memcpy(row + run.lo, src, size_t(run.hi - run.lo) * sizeof(A));
      else
        for (int64_t q = run.lo; q < run.hi; ++q) row[q] = src[(q - run.lo) * run.step];
      std::fill(row + run.hi, row + qn, A(0));
    } else {
      for (int64_t q = 0; q < qn; ++q) row[q] = inner[q] < 0 ? A(0) : plane[base + inner[q]];
    }
    for (size_t d = last; d-- > 0;) {
      if (++qi[d] < w.out[d]) break;
      qi[d] = 0;
    }
  }
}

// Y [m, n] = W [m, k] @ C [k, n], row-major with leading dims k, n, n.
void matmul(const float* W, const float* C, float* Y, int64_t m, int64_t n, int64_t k) {
  gemm('N', 'N', m, n, k, 1.0f, W, std::max<int64_t>(1, k), C, std::max<int64_t>(1, n), 0.0f, Y,
       std::max<int64_t>(1, n));
}
void matmul(const double* W, const double* C, double* Y, int64_t m, int64_t n, int64_t k) {
  gemm('N', 'N', m, n, k, 1.0, W, std::max<int64_t>(1, k), C, std::max<int64_t>(1, n), 0.0, Y,
       std::max<int64_t>(1, n));
}
// The direct loop (bf16 products summed in f32; integers wrapping mod 2^32), in the order
// y[i, :] += w[i, r] * c[r, :] for r ascending.
template <class A>
void matmul(const A* W, const A* C, A* Y, int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; ++i) {
    A* y = Y + i * n;
    std::fill(y, y + n, A(0));
    for (int64_t r = 0; r < k; ++r) {
      const A a = W[i * k + r];
      const A* c = C + r * n;
      for (int64_t j = 0; j < n; ++j) y[j] += a * c[j];
    }
  }
}

// Gather form (im2col): y [N / B, O, Q...] (canonical) from x [N, C, S...] and w [O, I, K...].
template <class A>
void conv_gather(const A* x, const A* w, const ConvGeometry& g, A* y) {
  const Windows win = windows_of(g);
  const int64_t S = product(g.in), K = product(g.window), Q = product(g.out);
  const int64_t groups = g.feature_groups * g.batch_groups;
  const int64_t Og = g.out_features / groups, I = g.kernel_in, R = I * K, N = g.out_batch();
  const int64_t O = g.out_features, C = g.features;
  if (N * O * Q == 0) return;
  const int64_t chunk = std::clamp<int64_t>(kColumnBudget / std::max<int64_t>({1, R * Q, Og * Q}), 1, N);
  A* col = scratch<A>(0, R * chunk * Q);
  A* tmp = scratch<A>(1, Og * chunk * Q);
  Ints k(win.ns), qi(win.ns);
  for (int64_t grp = 0; grp < groups; ++grp) {
    const A* wg = w + grp * Og * R;
    const int64_t c0 = g.feature_groups > 1 ? grp * I : 0;
    const int64_t b0 = g.batch_groups > 1 ? grp * N : 0;
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
      const int64_t nc = std::min(chunk, N - n0), ld = nc * Q;
      for (int64_t j = 0; j < nc; ++j)
        for (int64_t ci = 0; ci < I; ++ci) {
          const A* plane = x + ((b0 + n0 + j) * C + c0 + ci) * S;
          std::fill(k.begin(), k.end(), 0);
          for (int64_t kk = 0; kk < K; ++kk) {
            fill_row(plane, win, k, qi, col + (ci * K + kk) * ld + j * Q);
            for (size_t d = win.ns; d-- > 0;) {
              if (++k[d] < win.window[d]) break;
              k[d] = 0;
            }
          }
        }
      matmul(wg, col, tmp, Og, ld, R);
      for (int64_t o = 0; o < Og; ++o)
        for (int64_t j = 0; j < nc; ++j)
          std::memcpy(y + ((n0 + j) * O + grp * Og + o) * Q, tmp + o * ld + j * Q, size_t(Q) * sizeof(A));
    }
  }
}

// For spatial dim d, the inverse of input_index_table: for (kernel index k, input index i), the
// output position that reads input element i through kernel index k, or -1. Row-major
// [window[d], in[d]].
Ints output_index_table(const ConvGeometry& g, size_t d) {
  Ints t(size_t(g.window[d] * g.in[d]), -1);
  for (int64_t k = 0; k < g.window[d]; ++k)
    for (int64_t i = 0; i < g.in[d]; ++i) {
      const int64_t p = i * g.lhs_dil[d] + g.lo[d] - k * g.rhs_dil[d];  // q * stride
      if (p >= 0 && p % g.strides[d] == 0 && p / g.strides[d] < g.out[d])
        t[size_t(k * g.in[d] + i)] = p / g.strides[d];
    }
  return t;
}

// Adds row z (one kernel position k, over the input positions S...) into the output plane y
// [Q...] at the positions that read each input element through k.
template <class A>
void scatter_row(const A* z, const std::vector<Ints>& tab, const ConvGeometry& g, const Ints& out_stride,
                 const Ints& k, Ints& ii, A* y) {
  const size_t ns = g.num_spatial(), last = ns - 1;
  const int64_t n = g.in[last];
  const int64_t* inner = tab[last].data() + k[last] * n;
  int64_t outer = 1;
  for (size_t d = 0; d < last; ++d) outer *= g.in[d];
  std::fill(ii.begin(), ii.end(), 0);
  for (int64_t o = 0; o < outer; ++o, z += n) {
    int64_t base = 0;
    bool valid = true;
    for (size_t d = 0; d < last && valid; ++d) {
      const int64_t q = tab[d][size_t(k[d] * g.in[d] + ii[d])];
      valid = q >= 0;
      base += q * out_stride[d];
    }
    if (valid)
      for (int64_t i = 0; i < n; ++i)
        if (inner[i] >= 0) y[base + inner[i]] += z[i];
    for (size_t d = last; d-- > 0;) {
      if (++ii[d] < g.in[d]) break;
      ii[d] = 0;
    }
  }
}

// Scatter form, for an input smaller than the output (the transpose of a strided or padded
// convolution with respect to its input): per group, Z [(o, k), S] = w [(o, k), I] @ x [I, S]
// multiplies every input element once (no padding or dilation zeros), and each Z row is added
// into the output positions that read it (col2im).
template <class A>
void conv_scatter(const A* x, const A* w, const ConvGeometry& g, A* y) {
  const int64_t S = product(g.in), K = product(g.window), Q = product(g.out);
  const int64_t groups = g.feature_groups * g.batch_groups;
  const int64_t Og = g.out_features / groups, I = g.kernel_in, N = g.out_batch();
  const int64_t O = g.out_features, C = g.features;
  std::fill(y, y + N * O * Q, A(0));
  if (N * O * Q == 0) return;
  std::unique_ptr<A[]> wt = uninit<A>(O * K * I);  // [O, K, I]
  for (int64_t o = 0; o < O; ++o)
    for (int64_t c = 0; c < I; ++c)
      for (int64_t kk = 0; kk < K; ++kk) wt[size_t((o * K + kk) * I + c)] = w[(o * I + c) * K + kk];
  std::vector<Ints> tab;
  for (size_t d = 0; d < g.num_spatial(); ++d) tab.push_back(output_index_table(g, d));
  const Ints out_stride = strides_of(g.out);
  const int64_t chunk = std::clamp<int64_t>(kColumnBudget / std::max<int64_t>({1, Og * K * S, I * S}), 1, N);
  A* xb = scratch<A>(0, I * chunk * S);
  A* z = scratch<A>(1, Og * K * chunk * S);
  Ints k(g.num_spatial()), ii(g.num_spatial());
  for (int64_t grp = 0; grp < groups; ++grp) {
    const int64_t c0 = g.feature_groups > 1 ? grp * I : 0;
    const int64_t b0 = g.batch_groups > 1 ? grp * N : 0;
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
      const int64_t nc = std::min(chunk, N - n0), ld = nc * S;
      for (int64_t j = 0; j < nc; ++j)
        for (int64_t ci = 0; ci < I; ++ci)
          std::memcpy(xb + ci * ld + j * S, x + ((b0 + n0 + j) * C + c0 + ci) * S, size_t(S) * sizeof(A));
      matmul(wt.get() + grp * Og * K * I, xb, z, Og * K, ld, I);
      for (int64_t j = 0; j < nc; ++j)
        for (int64_t o = 0; o < Og; ++o) {
          A* plane = y + ((n0 + j) * O + grp * Og + o) * Q;
          std::fill(k.begin(), k.end(), 0);
          for (int64_t kk = 0; kk < K; ++kk) {
            scatter_row(z + (o * K + kk) * ld + j * S, tab, g, out_stride, k, ii, plane);
            for (size_t d = k.size(); d-- > 0;) {
              if (++k[d] < g.window[d]) break;
              k[d] = 0;
            }
          }
        }
    }
  }
}

// y [N / B, O, Q...] (canonical) from x [N, C, S...] and w [O, I, K...], all of type A: the
// scatter form when the input has fewer spatial elements than the output, else the gather form.
template <class A>
void conv_canonical(const A* x, const A* w, const ConvGeometry& g, A* y) {
  if (product(g.in) < product(g.out)) conv_scatter(x, w, g, y);
  else conv_gather(x, w, g, y);
}

// The computation type of operands `in` and result `out`: the result's for a float result wider
// than (or converted from) the operands, f32 for bf16, uint32 (wrapping) for integers.
template <class F>
void with_compute_type(DType out, F&& f) {
  switch (out) {
    case DType::f64: return f.template operator()<double>();
    case DType::f32:
    case DType::bf16: return f.template operator()<float>();
    default: return f.template operator()<uint32_t>();
  }
}

}  // namespace

ConvGeometry conv_geometry(const Shape& l, const Shape& r, const ConvParams& p) {
  ConvGeometry g;
  g.batch = l[size_t(p.lhs_spec[0])];
  g.features = l[size_t(p.lhs_spec[1])];
  g.out_features = r[size_t(p.rhs_spec[0])];
  g.kernel_in = r[size_t(p.rhs_spec[1])];
  g.feature_groups = p.feature_group_count;
  g.batch_groups = p.batch_group_count;
  for (int64_t i = 0; i < p.num_spatial(); ++i) {
    const size_t s = size_t(i);
    g.in.push_back(l[size_t(p.lhs_spec[s + 2])]);
    g.window.push_back(r[size_t(p.rhs_spec[s + 2])]);
    g.strides.push_back(p.window_strides[s]);
    g.lo.push_back(p.pad_lo(i));
    g.hi.push_back(p.pad_hi(i));
    g.lhs_dil.push_back(p.lhs_dilation[s]);
    g.rhs_dil.push_back(p.rhs_dilation[s]);
    const int64_t padded = dilate_dim(g.in[s], g.lhs_dil[s]) + g.lo[s] + g.hi[s];
    g.out.push_back((padded - dilate_dim(g.window[s], g.rhs_dil[s])) / g.strides[s] + 1);
  }
  return g;
}

std::vector<int64_t> input_index_table(const ConvGeometry& g, size_t d) {
  std::vector<int64_t> t(size_t(g.window[d] * g.out[d]), -1);
  for (int64_t k = 0; k < g.window[d]; ++k)
    for (int64_t q = 0; q < g.out[d]; ++q) {
      const int64_t x = q * g.strides[d] - g.lo[d] + k * g.rhs_dil[d];
      if (x >= 0 && x % g.lhs_dil[d] == 0 && x / g.lhs_dil[d] < g.in[d])
        t[size_t(k * g.out[d] + q)] = x / g.lhs_dil[d];
    }
  return t;
}

Array conv_eager(const Array& lhs, const Array& rhs, const ConvParams& p, const ShapedArray& out_aval) {
  const ConvGeometry g = conv_geometry(lhs.shape(), rhs.shape(), p);
  Array out = Array::empty(out_aval);
  if (out.size() == 0) return out;
  with_compute_type(out_aval.dtype, [&]<class A>() {
    std::unique_ptr<A[]> x = canonical<A>(lhs, p.lhs_spec), w = canonical<A>(rhs, p.rhs_spec);
    Shape cs{g.out_batch(), g.out_features};
    cs.insert(cs.end(), g.out.begin(), g.out.end());
    std::unique_ptr<A[]> y = uninit<A>(shape_size(cs));
    conv_canonical<A>(x.get(), w.get(), g, y.get());
    const Ints st = strides_of(out_aval.shape);
    Ints ds;
    for (int64_t d : p.out_spec) ds.push_back(st[size_t(d)]);
    dispatch_dtype(out_aval.dtype, [&]<class T>() {
      if constexpr (!std::is_same_v<T, bool>)
        copy_permuted<A, T>(y.get(), strides_of(cs), out.mutable_data<T>(), ds, cs);
    });
  });
  return out;
}

}  // namespace minijax::conv_detail
