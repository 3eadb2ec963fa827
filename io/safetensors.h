// minijax io: the Hugging Face safetensors format, a pytree's leaves keyed by their paths.
// Owns save_safetensors / load_safetensors / load_safetensors_metadata.
#pragma once
#include <map>
#include <source_location>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/pytree.h"

namespace minijax {

/// Options of save_safetensors.
struct SafetensorsSaveOptions {
  /// Also write, for each tensor, the "__metadata__" entry "crc32:<tensor name>" (the name in
  /// the file: the leaf's path) with value "%08x" (8 lower-case hex digits): zlib's CRC-32
  /// (`crc32`, the polynomial of gzip and zip) of the tensor's bytes as stored. load_safetensors
  /// checks every such entry, so a flipped bit is an IOError instead of silently wrong values;
  /// other readers see plain metadata strings.
  bool crc32 = false;
};

namespace detail {
void save_safetensors_leaves(const std::string& path, const PathLeaves& leaves,
                             const std::map<std::string, std::string>& metadata,
                             const SafetensorsSaveOptions& options, std::source_location loc);
std::vector<Array> load_safetensors_like(const std::string& path, const PathLeaves& like,
                                         std::source_location loc);
}  // namespace detail

/// Writes the leaves of `tree` to `path` in the safetensors format
/// (https://github.com/huggingface/safetensors, README "Format"): N, the header's length, as an
/// 8-byte little-endian unsigned integer; N bytes of UTF-8 JSON, an object from tensor name to
/// {"dtype", "shape", "data_offsets": [begin, end]} (offsets into the data that follows), with
/// `metadata` as its "__metadata__" string-to-string object when not empty; then the data,
/// little-endian, row-major, with no holes. Tensor names are the leaves' paths
/// (flatten_with_path: `w1`, `layers.0.w`, `mu.w1`, `step`). As the reference implementation
/// does, the header is padded with spaces to a multiple of 8 bytes and the tensors are laid out
/// by decreasing element size (then name), so each starts aligned to its element size. dtypes:
/// bool BOOL, i32 I32, u32 U32, bf16 BF16, f32 F32, f64 F64. The write is atomic (temporary
/// file in the same folder, fsync, rename). Throws ValueError naming the key for an empty,
/// repeated, non-UTF-8 or "__metadata__" path; ConcretizationError for a traced leaf; IOError
/// naming the file for an unsupported dtype or a failed write (the old file unchanged).
/// With `options.crc32`, the "crc32:<name>" entries join `metadata`; a `metadata` key starting
/// with "crc32:" is then a ValueError naming it (the saver owns those keys). Without it, such a
/// key is written as given, and load_safetensors checks it as any other.
/// Before writing, the temporaries of earlier saves into the same folder whose process is gone
/// are removed (AtomicFile, io/file.h).
template <class T>
  requires PyTree<T>
void save_safetensors(const std::string& path, const T& tree,
                      const std::map<std::string, std::string>& metadata = {},
                      const SafetensorsSaveOptions& options = {},
                      std::source_location loc = std::source_location::current()) {
  detail::save_safetensors_leaves(path, flatten_with_path(tree), metadata, options, loc);
}

/// Every tensor of a safetensors file, by name, as new strongly typed device arrays. Reads the
/// dtypes BOOL, I32, U32, BF16, F32 and F64. Throws IOError naming the function, the file, the
/// key and what was expected for: a missing or unreadable file; fewer than 8 bytes; a header
/// length over 100,000,000 bytes (the reference implementation's limit) or past the end of the
/// file; a header that is not a JSON object starting with '{', holds a duplicate key, or a
/// tensor entry without a string dtype, an integer shape or two integer data_offsets; an
/// unsupported dtype (F16, I64, U8, ...); a tensor whose byte range disagrees with its dtype and
/// shape, overlaps another, or leaves a hole; data shorter or longer than the tensors claim
/// (a truncated file, trailing bytes); a non-string "__metadata__" value; and for each
/// "__metadata__" entry "crc32:<name>" (SafetensorsSaveOptions::crc32): a value that is not 8
/// hex digits (either case), a name the file holds no tensor of, or a CRC-32 of the tensor's
/// bytes other than the value (the message names the file, the key, the tensor and both CRCs).
/// Files without such entries are read as before. Nothing is returned unless the whole file
/// checked out.
std::map<std::string, Array> load_safetensors(const std::string& path,
                                              std::source_location loc = std::source_location::current());

/// The pytree of `like`'s structure whose leaves are the file's tensors named by the leaves'
/// paths (flatten_with_path), as flax's from_state_dict restores a state dict; `like` gives the
/// structure, shapes and dtypes (its values are not read; abstract leaves will do), and the
/// loaded leaves take like's avals. Throws IOError naming the file, the key and what was expected
/// when a key of `like` is missing, the file holds a tensor `like` lacks, or a dtype or shape
/// differs, and for everything load_safetensors(path) throws for. Nothing is loaded partially.
template <class T>
  requires PyTree<T>
T load_safetensors(const std::string& path, const T& like,
                   std::source_location loc = std::source_location::current()) {
  return tree_unflatten(like, detail::load_safetensors_like(path, flatten_with_path(like), loc), loc);
}

/// The "__metadata__" object of a safetensors file (empty when it has none), after checking the
/// whole file as load_safetensors does (same errors).
std::map<std::string, std::string> load_safetensors_metadata(
    const std::string& path, std::source_location loc = std::source_location::current());

}  // namespace minijax
