// minijax dtypes and JAX's type promotion with weak types.
// Owns DType, bfloat16 storage, dtype names/sizes and promote_types.
#pragma once
#include <cstdint>
#include <cstring>
#include <source_location>
#include <string>

namespace minijax {

/// Element types. `float0` is the tangent/cotangent type of integer and bool values (JAX's
/// float0, zero bytes per element); `token` is the type of ordering tokens (no elements).
enum class DType : uint8_t { bool_, i32, u32, bf16, f32, f64, float0, token };

inline constexpr DType bool_ = DType::bool_;
inline constexpr DType i32 = DType::i32;
inline constexpr DType u32 = DType::u32;
inline constexpr DType bf16 = DType::bf16;
inline constexpr DType f32 = DType::f32;
inline constexpr DType f64 = DType::f64;
inline constexpr DType float0 = DType::float0;

/// bfloat16 as a storage type: the upper 16 bits of an IEEE f32, round-to-nearest-even on store.
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) { bits = uint16_t((u >> 16) | 0x40); return; }  // NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    bits = uint16_t(u >> 16);
  }
  explicit operator float() const {
    uint32_t u = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

/// Short name as printed in avals: "f32", "i32", "bool", "bf16", "u32", "f64", "float0", "Tok".
const char* dtype_name(DType d);
/// Parses a short name (as dtype_name prints) or a numpy name ("float32"). Throws ValueError.
DType dtype_from_name(const std::string& s, std::source_location loc = std::source_location::current());
/// Bytes per element (0 for float0 and token).
size_t itemsize(DType d);
bool is_floating(DType d);   ///< bf16, f32, f64
bool is_integer(DType d);    ///< i32, u32
bool is_unsigned(DType d);   ///< u32
/// The dtype of tangents of values of dtype d: d itself for floats, float0 otherwise.
DType tangent_dtype(DType d);

/// A dtype with JAX's weak-type flag (a C++ scalar literal is weakly typed: it adopts the other
/// operand's dtype). Result of promote_types.
struct WeakDType {
  DType dtype;
  bool weak;
};

/// JAX's type promotion (jax.numpy.promote_types over the lattice with weak types, x64 off for
/// integers: i32 ⊔ u32 = i32). Weak int ⊔ i32 = i32; weak float ⊔ i32 = weak f32;
/// weak float ⊔ bf16 = bf16; f32 ⊔ f64 = f64. Source: JAX's "Type promotion semantics" JEP 9407.
/// Throws TypeError for float0 or token operands.
WeakDType promote_types(WeakDType a, WeakDType b,
                        std::source_location loc = std::source_location::current());

/// Calls f.template operator()<T>() with T the C++ element type of d (bool, int32_t, uint32_t,
/// bfloat16, float, double). Throws TypeError for float0/token.
template <class F>
decltype(auto) dispatch_dtype(DType d, F&& f);

[[noreturn]] void throw_bad_dispatch(DType d);

template <class F>
decltype(auto) dispatch_dtype(DType d, F&& f) {
  switch (d) {
    case DType::bool_: return f.template operator()<bool>();
    case DType::i32: return f.template operator()<int32_t>();
    case DType::u32: return f.template operator()<uint32_t>();
    case DType::bf16: return f.template operator()<bfloat16>();
    case DType::f32: return f.template operator()<float>();
    case DType::f64: return f.template operator()<double>();
    default: throw_bad_dispatch(d);
  }
}

/// The DType of a C++ element type.
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<bool>() { return DType::bool_; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::u32; }
template <> constexpr DType dtype_of<bfloat16>() { return DType::bf16; }
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }

}  // namespace minijax
