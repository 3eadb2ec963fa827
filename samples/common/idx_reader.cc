// minijax samples: reader of gzip-compressed IDX files (the MNIST / Fashion-MNIST format).
// Reads through zlib's gz* interface, validating magic, rank, sizes and length.
#include "samples/common/idx_reader.h"

#include <zlib.h>

#include <cstdlib>
#include <limits>

#include <minijax/minijax.h>

namespace minijax::samples {
namespace {

struct GzFile {
  gzFile f = nullptr;
  ~GzFile() {
    if (f) gzclose(f);
  }
};

std::string missing_hint(const std::string& provided_by) {
  if (provided_by.empty()) return "";
  return " (this file is provided by the Debian package `" + provided_by +
         "`: apt-get install " + provided_by + ", or run setup.sh)";
}

// Reads exactly n bytes; returns the number read (short at end of file). Throws on zlib errors.
size_t read_some(GzFile& g, void* dst, size_t n, const std::string& path, std::source_location loc) {
  size_t done = 0;
  auto* p = static_cast<unsigned char*>(dst);
  while (done < n) {
    unsigned chunk = unsigned(std::min<size_t>(n - done, size_t(1) << 30));
    int r = gzread(g.f, p + done, chunk);
    if (r < 0) {
      int err = 0;
      const char* msg = gzerror(g.f, &err);
      throw ValueError("corrupt gzip data in IDX file '" + path + "': " + (msg ? msg : "zlib error"),
                       loc);
    }
    if (r == 0) break;
    done += size_t(r);
  }
  return done;
}

uint32_t be32(const unsigned char* b) {
  return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | uint32_t(b[3]);
}

}  // namespace

IdxData read_idx_gz(const std::string& path, int64_t limit, int expect_ndim,
                    const std::string& provided_by, std::source_location loc) {
  GzFile g;
  g.f = gzopen(path.c_str(), "rb");
  if (!g.f)
    throw IOError("cannot open IDX file '" + path + "'" + missing_hint(provided_by), loc);
  gzbuffer(g.f, 1 << 18);

  unsigned char head[4];
  if (read_some(g, head, 4, path, loc) != 4)
    throw ValueError("IDX file '" + path + "' is too short to hold a header" +
                         missing_hint(provided_by),
                     loc);
  if (head[0] != 0 || head[1] != 0 || head[2] != 0x08)
    throw ValueError("IDX file '" + path + "' has a bad magic number (expected 00 00 08 NDIM for "
                     "unsigned bytes, got " + std::to_string(head[0]) + " " + std::to_string(head[1]) +
                     " " + std::to_string(head[2]) + " " + std::to_string(head[3]) + ")",
                     loc);
  int ndim = head[3];
  if (ndim < 1 || ndim > 4)
    throw ValueError("IDX file '" + path + "' declares " + std::to_string(ndim) +
                         " dimensions (expected 1 to 4)",
                     loc);
  if (expect_ndim > 0 && ndim != expect_ndim)
    throw ValueError("IDX file '" + path + "' has " + std::to_string(ndim) + " dimensions, expected " +
                         std::to_string(expect_ndim),
                     loc);

  IdxData out;
  unsigned char dimbytes[16];
  if (read_some(g, dimbytes, size_t(4 * ndim), path, loc) != size_t(4 * ndim))
    throw ValueError("IDX file '" + path + "' ends inside its header", loc);
  int64_t total = 1;
  for (int i = 0; i < ndim; ++i) {
    int64_t d = be32(dimbytes + 4 * i);
    if (d == 0 || d > (int64_t(1) << 28))
      throw ValueError("IDX file '" + path + "' has an implausible size " + std::to_string(d) +
                           " for dimension " + std::to_string(i),
                       loc);
    out.dims.push_back(d);
    total *= d;
    if (total > (int64_t(1) << 32))
      throw ValueError("IDX file '" + path + "' declares more than 2^32 elements", loc);
  }
  const int64_t row = total / out.dims[0];
  if (limit >= 0 && limit < out.dims[0]) out.dims[0] = limit;
  const int64_t want = out.dims[0] * row;
  out.bytes.resize(size_t(want));
  size_t got = read_some(g, out.bytes.data(), size_t(want), path, loc);
  if (got != size_t(want))
    throw ValueError("IDX file '" + path + "' is truncated: its header promises " +
                         std::to_string(want) + " data bytes, found " + std::to_string(got),
                     loc);
  return out;
}

std::string fashion_mnist_dir(const std::string& override_dir) {
  if (!override_dir.empty()) return override_dir;
  if (const char* env = std::getenv("MINIJAX_FASHION_MNIST"); env && *env) return env;
  return "/usr/share/datasets/fashion-mnist";
}

}  // namespace minijax::samples
