// minijax dtypes and JAX's type promotion with weak types.
// Owns the promotion lattice and dtype names.
#include "core/dtype.h"

#include <array>
#include <vector>

#include "core/errors.h"

namespace minijax {

const char* dtype_name(DType d) {
  switch (d) {
    case DType::bool_: return "bool";
    case DType::i32: return "i32";
    case DType::u32: return "u32";
    case DType::bf16: return "bf16";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::float0: return "float0";
    case DType::token: return "Tok";
  }
  return "?";
}

DType dtype_from_name(const std::string& s, std::source_location loc) {
  static const std::pair<const char*, DType> names[] = {
      {"bool", DType::bool_},   {"i32", DType::i32},      {"int32", DType::i32},
      {"u32", DType::u32},      {"uint32", DType::u32},   {"bf16", DType::bf16},
      {"bfloat16", DType::bf16}, {"f32", DType::f32},     {"float32", DType::f32},
      {"f64", DType::f64},      {"float64", DType::f64},  {"float0", DType::float0},
      {"Tok", DType::token}};
  for (auto& [n, d] : names)
    if (s == n) return d;
  throw ValueError("unknown dtype name '" + s + "'", loc);
}

size_t itemsize(DType d) {
  switch (d) {
    case DType::bool_: return 1;
    case DType::i32: case DType::u32: case DType::f32: return 4;
    case DType::bf16: return 2;
    case DType::f64: return 8;
    default: return 0;
  }
}

bool is_floating(DType d) { return d == DType::bf16 || d == DType::f32 || d == DType::f64; }
bool is_integer(DType d) { return d == DType::i32 || d == DType::u32; }
bool is_unsigned(DType d) { return d == DType::u32; }
DType tangent_dtype(DType d) { return is_floating(d) ? d : DType::float0; }

void throw_bad_dispatch(DType d) {
  throw TypeError(std::string("no element type for dtype ") + dtype_name(d));
}

namespace {
// Lattice nodes: bool, i*, u32, i32, f*, bf16, f32, f64 (i* / f* = weak int / weak float).
enum Node { kBool, kWI, kU32, kI32, kWF, kBF16, kF32, kF64, kN };
// Edges of JAX's lattice restricted to our dtypes (u32 ⊔ i32 joins at i32, as with x64 off).
const std::vector<int> kUp[kN] = {{kWI}, {kU32, kI32}, {kI32}, {kWF}, {kBF16}, {kF32}, {kF64}, {}};

uint32_t upset(int n) {
  uint32_t s = 1u << n;
  for (int m : kUp[n]) s |= upset(m);
  return s;
}

int node_of(WeakDType w) {
  switch (w.dtype) {
    case DType::bool_: return kBool;
    case DType::i32: return w.weak ? kWI : kI32;
    case DType::u32: return kU32;
    case DType::bf16: return kBF16;
    case DType::f32: return w.weak ? kWF : kF32;
    case DType::f64: return w.weak ? kWF : kF64;
    default: return -1;
  }
}
}  // namespace

WeakDType promote_types(WeakDType a, WeakDType b, std::source_location loc) {
  int na = node_of(a), nb = node_of(b);
  if (na < 0 || nb < 0)
    throw TypeError(std::string("cannot promote ") + dtype_name(a.dtype) + " with " +
                        dtype_name(b.dtype),
                    loc);
  if (a.dtype == b.dtype && a.weak == b.weak) return a;
  uint32_t common = upset(na) & upset(nb);
  // The least upper bound: the common node whose up-set equals the whole common set.
  for (int n = 0; n < kN; ++n) {
    if (!(common >> n & 1)) continue;
    if (upset(n) == common) {
      switch (n) {
        case kBool: return {DType::bool_, false};
        case kWI: return {DType::i32, true};
        case kU32: return {DType::u32, false};
        case kI32: return {DType::i32, false};
        case kWF: {
          // Two weak floats of different width keep the wider one, still weak.
          DType d = DType::f32;
          if ((a.weak && a.dtype == DType::f64) || (b.weak && b.dtype == DType::f64)) d = DType::f64;
          return {d, true};
        }
        case kBF16: return {DType::bf16, false};
        case kF32: return {DType::f32, false};
        case kF64: return {DType::f64, false};
      }
    }
  }
  throw TypeError(std::string("no common dtype for ") + dtype_name(a.dtype) + " and " +
                      dtype_name(b.dtype),
                  loc);
}

}  // namespace minijax
