// minijax io: the step between a file's bytes and Arrays, shared by the npy, npz and safetensors code.
// Owns detail::StoredArray, the checks of a pytree's keys before saving and of a file against `like`.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/pytree.h"
#include "io/file.h"

namespace minijax::detail {

/// One array as a file holds it, before any Array is made: its key, dtype and shape, and where
/// its elements are (`data`, `nbytes` = size * itemsize, row-major little-endian unless
/// `big_endian` / `fortran_order` say otherwise: numpy's '>' byte order and fortran_order).
struct StoredArray {
  std::string key;
  DType dtype = DType::f32;
  Shape shape;
  const uint8_t* data = nullptr;
  size_t nbytes = 0;
  bool big_endian = false;
  bool fortran_order = false;
};

/// The number of elements of a shape read from a file, each dim < 2^63, times `itemsize`, or
/// fails through ctx (the product overflows int64 / size_t).
size_t checked_nbytes(const IOContext& ctx, const std::vector<uint64_t>& dims, size_t itemsize,
                      Shape& shape);

/// A new concrete Array of aval `aval` (shape and dtype those of `s`) holding s's elements:
/// converted to little-endian row-major, bools normalized to 0/1.
Array materialize(const StoredArray& s, const ShapedArray& aval);

/// Every stored array as an Array (strongly typed, device memory), by key.
std::map<std::string, Array> materialize_all(const std::vector<StoredArray>& stored);

/// The leaves of `like` read from `stored`, in like's order. Fails through ctx (IOError) before
/// making any Array when: like repeats a key; a key of like is missing from the file; the file
/// holds a key like lacks; a key's dtype or shape differs from like's leaf (ValueError for an
/// empty like leaf). Each loaded leaf takes like's aval (its weak type and memory kind too).
std::vector<Array> match_like(const IOContext& ctx, const std::vector<StoredArray>& stored,
                              const PathLeaves& like);

/// Checks a pytree's leaves before anything is written: every path non-empty and unique and not
/// `reserved`, every leaf concrete (ConcretizationError for a traced leaf: saving happens outside
/// jit) with a dtype the formats hold (bool, i32, u32, bf16, f32, f64; IOError otherwise).
/// Throws ValueError naming ctx.fn and the key for a bad key.
void check_save_leaves(const IOContext& ctx, const PathLeaves& leaves, const std::string& reserved = "");

/// The per-leaf part of check_save_leaves: ValueError for an empty Array, ConcretizationError
/// for a traced or abstract one, IOError (ctx.fail) for a dtype outside bool, i32, u32, bf16,
/// f32, f64.
void check_save_leaf(const IOContext& ctx, const Array& leaf);

/// numpy's name of a dtype ("bool", "int32", "uint32", "bfloat16", "float32", "float64").
const char* numpy_dtype_name(DType d);
/// "f32[2,3]"-style description of a dtype and shape, for messages.
std::string describe(DType d, const Shape& shape);

}  // namespace minijax::detail
