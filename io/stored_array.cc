// minijax io: the step between a file's bytes and Arrays, shared by the npy, npz and safetensors code.
// Owns making Arrays from stored bytes (byte order, Fortran order, bools) and the key checks.
#include "io/stored_array.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

#include "io/json.h"

namespace minijax::detail {

static_assert(std::endian::native == std::endian::little,
              "minijax's file formats are little-endian and are read and written as the host's bytes");

size_t checked_nbytes(const IOContext& ctx, const std::vector<uint64_t>& dims, size_t itemsize,
                      Shape& shape) {
  shape.clear();
  uint64_t n = 1;
  bool zero = false;
  for (uint64_t d : dims) {
    if (d > uint64_t(INT64_MAX)) ctx.fail("a dimension of " + std::to_string(d) + " is over 2^63 - 1");
    shape.push_back(int64_t(d));
    if (d == 0) zero = true;
  }
  if (zero) return 0;
  for (uint64_t d : dims) {
    if (n > uint64_t(INT64_MAX) / d) ctx.fail("the shape's element count overflows 64 bits");
    n *= d;
  }
  if (n > uint64_t(INT64_MAX) / itemsize) ctx.fail("the shape's byte count overflows 64 bits");
  return size_t(n * itemsize);
}

namespace {
// Copies s's elements into dst as little-endian, row-major (C order) values.
void copy_elements(const StoredArray& s, uint8_t* dst) {
  const size_t item = itemsize(s.dtype);
  const size_t count = item ? s.nbytes / item : 0;
  if (!s.fortran_order || s.shape.size() < 2) {
    std::memcpy(dst, s.data, s.nbytes);
  } else {
    // Fortran order: the element at index (i0, ..., i{n-1}) lies at sum_k i_k * prod_{j<k} d_j.
    const size_t nd = s.shape.size();
    std::vector<size_t> stride(nd), idx(nd, 0);
    size_t st = 1;
    for (size_t k = 0; k < nd; ++k) {
      stride[k] = st;
      st *= size_t(s.shape[k]);
    }
    size_t src = 0;
    for (size_t e = 0; e < count; ++e) {
      std::memcpy(dst + e * item, s.data + src * item, item);
      for (size_t k = nd; k-- > 0;) {  // next row-major index
        src += stride[k];
        if (++idx[k] < size_t(s.shape[k])) break;
        src -= stride[k] * idx[k];
        idx[k] = 0;
      }
    }
  }
  if (s.big_endian && item > 1)
    for (size_t e = 0; e < count; ++e) std::reverse(dst + e * item, dst + (e + 1) * item);
  if (s.dtype == DType::bool_)
    for (size_t e = 0; e < count; ++e) dst[e] = dst[e] != 0;
}
}  // namespace

Array materialize(const StoredArray& s, const ShapedArray& aval) {
  Array a = Array::empty(aval);
  if (s.nbytes) copy_elements(s, static_cast<uint8_t*>(const_cast<void*>(a.raw_data())));
  return a;
}

std::map<std::string, Array> materialize_all(const std::vector<StoredArray>& stored) {
  std::map<std::string, Array> out;
  for (const StoredArray& s : stored) out.emplace(s.key, materialize(s, ShapedArray{s.shape, s.dtype}));
  return out;
}

std::vector<Array> match_like(const IOContext& ctx, const std::vector<StoredArray>& stored,
                              const PathLeaves& like) {
  std::map<std::string, const StoredArray*> by_key;
  for (const StoredArray& s : stored) by_key.emplace(s.key, &s);
  std::set<std::string> like_keys;
  for (auto& [key, leaf] : like) {
    if (!leaf.defined())
      throw ValueError(ctx.at(key).where() + ": like's leaf is an empty Array (no shape or dtype to expect)", ctx.loc);
    if (!like_keys.insert(key).second)
      ctx.at(key).fail("`like` has two leaves with this path (paths must be unique to be matched)");
    auto it = by_key.find(key);
    if (it == by_key.end()) {
      std::string held;
      for (auto& [k, _] : by_key) held += (held.empty() ? "" : ", ") + k;
      ctx.at(key).fail("missing from the file, expected " + describe(leaf.dtype(), leaf.shape()) +
                       " as like's leaf (the file holds: " + (held.empty() ? "nothing" : held) + ")");
    }
    const StoredArray& s = *it->second;
    if (s.dtype != leaf.dtype() || s.shape != leaf.shape())
      ctx.at(key).fail("the file holds " + describe(s.dtype, s.shape) + ", expected " +
                       describe(leaf.dtype(), leaf.shape()) + " as like's leaf");
  }
  for (auto& [k, _] : by_key)
    if (!like_keys.count(k))
      ctx.at(k).fail("the file holds this key but `like` has no leaf with this path (a different "
                     "structure; " + std::to_string(like.size()) + " leaves expected)");
  std::vector<Array> out;
  out.reserve(like.size());
  for (auto& [key, leaf] : like) out.push_back(materialize(*by_key.at(key), leaf.aval()));
  return out;
}

void check_save_leaves(const IOContext& ctx, const PathLeaves& leaves, const std::string& reserved) {
  std::set<std::string> seen;
  for (auto& [key, leaf] : leaves) {
    if (key.empty())
      throw ValueError(std::string(ctx.fn) + ": file '" + ctx.path +
                           "': a leaf at the root has no path to key it by (save a struct, map "
                           "or tuple of arrays; save_npy saves one array)",
                       ctx.loc);
    if (!seen.insert(key).second || key == reserved)
      throw ValueError(ctx.at(key).where() + ": the path " +
                           (key == reserved ? "is reserved by the format" : "names two leaves") +
                           " (paths must be unique: a map key holding '.' can repeat a field's path)",
                       ctx.loc);
    try {
      json::parse(json::quote(key));
    } catch (const json::ParseError&) {
      throw ValueError(ctx.at(key).where() + ": the path is not valid UTF-8", ctx.loc);
    }
    check_save_leaf(ctx.at(key), leaf);
  }
}

void check_save_leaf(const IOContext& ctx, const Array& leaf) {
  if (!leaf.defined()) throw ValueError(ctx.where() + ": the array is empty (a default-constructed Array)", ctx.loc);
  if (!leaf.is_concrete())
    throw ConcretizationError(ctx.where() + ": the array has no value (" +
                                  (leaf.is_tracer() ? "a traced value: save outside jit/grad/vmap"
                                                    : "an abstract ShapeDtypeStruct") + ")",
                              ctx.loc);
  const DType d = leaf.dtype();
  if (d != DType::bool_ && d != DType::i32 && d != DType::u32 && d != DType::bf16 && d != DType::f32 &&
      d != DType::f64)
    ctx.fail(std::string("unsupported dtype ") + dtype_name(d) +
             " (the formats hold bool, i32, u32, bf16, f32 and f64)");
}

const char* numpy_dtype_name(DType d) {
  switch (d) {
    case DType::bool_: return "bool";
    case DType::i32: return "int32";
    case DType::u32: return "uint32";
    case DType::bf16: return "bfloat16";
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    default: return dtype_name(d);
  }
}

std::string describe(DType d, const Shape& shape) { return ShapedArray{shape, d}.str(); }

}  // namespace minijax::detail
