// minijax io: the zip container of .npz files, as much of PKWARE's APPNOTE as numpy needs.
// Owns detail::zip: a writer of stored and deflated members and a reader of its central directory.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/file.h"

namespace minijax::detail::zip {

// The format: PKWARE's APPNOTE.TXT 6.3.10 (https://pkware.cachefly.net/webdocs/casestudies/APPNOTE.TXT),
// sections 4.3.7 (local file header), 4.3.12 (central directory header), 4.3.16 (end of central
// directory record). Limits, both ways: no zip64 (every member and the archive under 4 GiB, under
// 65535 members), no encryption, no multi-disk archives; methods 0 (stored) and 8 (deflate).

/// One member as the central directory describes it.
struct Member {
  std::string name;
  uint16_t method = 0;           ///< 0 stored, 8 deflated
  uint32_t crc32 = 0;            ///< CRC-32 of the uncompressed bytes
  uint64_t compressed_size = 0;  ///< bytes in the archive
  uint64_t size = 0;             ///< bytes once uncompressed
  uint64_t data_offset = 0;      ///< where its bytes start (after its local header)
};

/// The members of the zip archive in bytes[0, n), in central-directory order, each checked
/// against its local header and the archive's bounds. Fails through ctx (IOError) for a foreign
/// file (no end-of-central-directory record), a truncated or corrupt directory, a duplicate name,
/// zip64, encryption, another method than 0 or 8, or a member whose bytes lie outside the file.
std::vector<Member> read_directory(const IOContext& ctx, const uint8_t* bytes, size_t n);

/// The uncompressed bytes of member m (inflated when deflated), checked against its size and
/// CRC-32. Fails through ctx.at(m.name) for a corrupt member (bad deflate stream, wrong size or
/// CRC, or a size over 1032 times the compressed one, deflate's largest ratio: no zip bombs).
std::vector<uint8_t> extract(const IOContext& ctx, const uint8_t* bytes, size_t n, const Member& m);

/// Writes a zip archive member by member into an AtomicFile. Members are written with a fixed
/// date (1980-01-01 00:00, DOS time 0) so that equal contents give equal files.
class Writer {
 public:
  explicit Writer(AtomicFile& f, IOContext ctx) : f_(f), ctx_(std::move(ctx)) {}
  /// Adds member `name` whose bytes are the concatenation of `pieces` (pointer, length), stored
  /// or deflated (zlib level 6, the default of Python's zipfile). Fails through ctx (IOError)
  /// past the zip64 limits or when deflate fails.
  void add(const std::string& name, const std::vector<std::pair<const void*, size_t>>& pieces, bool deflate);
  /// Writes the central directory and the end record. Call once, after the last add().
  void finish();

 private:
  AtomicFile& f_;
  IOContext ctx_;
  std::string central_;
  size_t count_ = 0;
};

}  // namespace minijax::detail::zip
