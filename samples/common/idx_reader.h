// minijax samples: reader of gzip-compressed IDX files (the MNIST / Fashion-MNIST format).
// Owns read_idx_gz and the Fashion-MNIST file locations (Debian's dataset-fashion-mnist).
#pragma once
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

namespace minijax::samples {

/// One IDX file's contents: its dimensions (major first) and its unsigned-byte elements.
struct IdxData {
  std::vector<int64_t> dims;    ///< e.g. {60000, 28, 28} for images, {60000} for labels
  std::vector<uint8_t> bytes;   ///< row-major, product(dims) elements (or fewer rows, see limit)
};

/// Reads a gzip-compressed IDX file of unsigned bytes (type code 0x08), as distributed by
/// MNIST and Fashion-MNIST (format: http://yann.lecun.com/exdb/mnist/, "FILE FORMATS": a 4-byte
/// big-endian magic 0x0000 08 NDIM, NDIM big-endian uint32 sizes, then the data).
/// `limit` >= 0 keeps only the first `limit` entries of dimension 0 (and reads no further).
/// `expect_ndim` > 0 requires that many dimensions.
/// Throws mj::IOError when the file cannot be opened (naming the file and, via `provided_by`,
/// the Debian package that provides it), mj::ValueError when the magic, rank, sizes or length
/// are wrong (naming the file).
IdxData read_idx_gz(const std::string& path, int64_t limit = -1, int expect_ndim = 0,
                    const std::string& provided_by = "",
                    std::source_location loc = std::source_location::current());

/// Where the Fashion-MNIST files are: `override_dir` when not empty, else the environment
/// variable MINIJAX_FASHION_MNIST when set, else /usr/share/datasets/fashion-mnist (Debian's
/// package dataset-fashion-mnist).
std::string fashion_mnist_dir(const std::string& override_dir = "");

/// The Debian package that ships the Fashion-MNIST IDX files.
inline constexpr const char* kFashionMnistPackage = "dataset-fashion-mnist";

}  // namespace minijax::samples
