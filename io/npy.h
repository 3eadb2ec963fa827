// minijax io: numpy's .npy format, one array per file (numpy.save / numpy.load).
// Owns save_npy / load_npy and the .npy header writer and parser the npz code reuses.
#pragma once
#include <cstdint>
#include <source_location>
#include <string>

#include "core/array.h"
#include "io/file.h"
#include "io/stored_array.h"

namespace minijax {

/// Writes `a` to `path` as numpy.save does: the .npy format of NEP 1 / numpy.lib.format
/// (https://numpy.org/neps/nep-0001-npy-format.html): magic "\x93NUMPY", version 1.0 (2.0 when
/// the header exceeds 65535 bytes), the header dict {'descr', 'fortran_order': False, 'shape'}
/// padded with spaces to a multiple of 64 bytes, then the elements in C order, little-endian.
/// dtypes: bool '|b1', i32 '<i4', u32 '<u4', f32 '<f4', f64 '<f8'; numpy has no bfloat16, so a
/// bf16 array is written as its bits, '<u2' (read it back with load_npy(path, like) and a bf16
/// `like`). The write is atomic (a temporary file in the same folder, fsync, rename): `path` keeps
/// its old contents unless the whole new file was written. Throws IOError naming the function and
/// the file when it cannot be written (the old file unchanged), and for a float0/token dtype;
/// ConcretizationError for a traced or abstract array.
void save_npy(const std::string& path, const Array& a,
              std::source_location loc = std::source_location::current());

/// Reads a .npy file (versions 1.0, 2.0 and 3.0, as numpy.save writes them: any byte order,
/// C or Fortran order) into a new array of device memory: '|b1' -> bool, '<i4' -> i32,
/// '<u4' -> u32, '<f4' -> f32, '<f8' -> f64 ('>' big-endian ones converted). Throws IOError
/// naming the function, the file and what was expected for: a missing or unreadable file, a
/// foreign file (no magic), a corrupt or truncated header, a header that claims more bytes than
/// the file holds (or fewer: trailing bytes), an unsupported dtype (int64, float16, '<u2' without
/// a bf16 `like`, objects, structured dtypes; convert with astype first).
Array load_npy(const std::string& path, std::source_location loc = std::source_location::current());

/// load_npy checked against `like` (its values are not read; an abstract array will do): the
/// file's dtype and shape must equal like's, else IOError naming the file and both. A bf16 `like`
/// reads a '<u2' file as bfloat16 bits (what save_npy writes for bf16). The result takes like's
/// aval (weak type and memory kind included).
Array load_npy(const std::string& path, const Array& like,
               std::source_location loc = std::source_location::current());

namespace detail {
/// The .npy descr of a dtype: "|b1", "<i4", "<u4", "<u2" (bf16's bits), "<f4", "<f8".
const char* npy_descr(DType d);
/// A .npy header for (d, shape): magic, version, length, the dict, spaces and '\n' up to a
/// multiple of 64 bytes (numpy.lib.format's ARRAY_ALIGN).
std::string npy_header(DType d, const Shape& shape);
/// Parses the .npy image at [p, p + n) (a file's or an npz member's bytes): its dtype, shape,
/// order and elements (pointing into p). '<u2' is read as bf16 when `u2_as_bf16`, else refused.
/// Fails through ctx (IOError) for anything but a well-formed .npy of a supported dtype whose
/// data fills the rest exactly.
StoredArray parse_npy(const IOContext& ctx, const uint8_t* p, size_t n, bool u2_as_bf16);
}  // namespace detail

}  // namespace minijax
