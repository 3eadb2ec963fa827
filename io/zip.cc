// minijax io: the zip container of .npz files, as much of PKWARE's APPNOTE as numpy needs.
// Owns the headers' bytes (APPNOTE 4.3.7, 4.3.12, 4.3.16), CRC-32 and deflate through zlib.
#include "io/zip.h"

#include <zlib.h>

#include <cstring>
#include <set>

namespace minijax::detail::zip {

namespace {
constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr size_t kLocalLen = 30, kCentralLen = 46, kEndLen = 22;
constexpr uint64_t kMax32 = 0xffffffffu;
constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01
constexpr uint16_t kUtf8Flag = 1 << 11;                 // APPNOTE 4.4.4 bit 11: names in UTF-8
constexpr uint64_t kMaxDeflateRatio = 1032;             // deflate's largest expansion on inflate

uint32_t crc_of(const std::vector<std::pair<const void*, size_t>>& pieces) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (auto [p, n] : pieces) {
    const Bytef* b = static_cast<const Bytef*>(p);
    for (size_t done = 0; done < n;) {  // crc32's length is a uInt
      const uInt chunk = uInt(std::min<size_t>(n - done, 1u << 30));
      crc = crc32(crc, b + done, chunk);
      done += chunk;
    }
  }
  return uint32_t(crc);
}

std::string deflate_raw(const IOContext& ctx, const std::vector<std::pair<const void*, size_t>>& pieces) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) ctx.fail("zlib's deflateInit2 failed");
  std::string out;
  std::vector<unsigned char> buf(1 << 16);
  for (size_t k = 0; k <= pieces.size(); ++k) {
    const bool last = k == pieces.size();
    size_t left = last ? 0 : pieces[k].second;
    const Bytef* p = last ? nullptr : static_cast<const Bytef*>(pieces[k].first);
    do {
      const uInt chunk = uInt(std::min<size_t>(left, 1u << 30));
      z.next_in = const_cast<Bytef*>(p);
      z.avail_in = chunk;
      const int flush = last ? Z_FINISH : Z_NO_FLUSH;
      int r;
      do {
        z.next_out = buf.data();
        z.avail_out = uInt(buf.size());
        r = deflate(&z, flush);
        if (r == Z_STREAM_ERROR) {
          deflateEnd(&z);
          ctx.fail("zlib's deflate failed");
        }
        out.append(reinterpret_cast<char*>(buf.data()), buf.size() - z.avail_out);
      } while (z.avail_out == 0 || (last && r != Z_STREAM_END));
      if (p) p += chunk;
      left -= chunk;
    } while (left > 0);
  }
  deflateEnd(&z);
  return out;
}
}  // namespace

void Writer::add(const std::string& name, const std::vector<std::pair<const void*, size_t>>& pieces, bool deflate) {
  const IOContext ctx = ctx_.at(name);
  uint64_t size = 0;
  for (auto [p, n] : pieces) size += n;
  const uint32_t crc = crc_of(pieces);
  std::string packed;
  if (deflate) packed = deflate_raw(ctx, pieces);
  const uint64_t csize = deflate ? packed.size() : size;
  const uint64_t offset = f_.size();
  if (size >= kMax32 || csize >= kMax32 || offset >= kMax32 || name.size() > 0xffff || count_ >= 0xfffe)
    ctx.fail("the archive would need zip64 (a member or the archive over 4 GiB, or over 65534 "
             "members), which minijax does not write");
  const uint16_t method = deflate ? 8 : 0;
  auto header = [&](bool central) {
    std::string h;
    put_le(h, central ? kCentralSig : kLocalSig, 4);
    if (central) put_le(h, (3 << 8) | 20, 2);  // made by: Unix, spec 2.0
    put_le(h, 20, 2);                          // needed to extract: 2.0 (deflate)
    put_le(h, kUtf8Flag, 2);
    put_le(h, method, 2);
    put_le(h, 0, 2);  // time 00:00
    put_le(h, kDosDate, 2);
    put_le(h, crc, 4);
    put_le(h, csize, 4);
    put_le(h, size, 4);
    put_le(h, name.size(), 2);
    put_le(h, 0, 2);  // extra field length
    if (central) {
      put_le(h, 0, 2);                  // comment length
      put_le(h, 0, 2);                  // disk number start
      put_le(h, 0, 2);                  // internal attributes
      put_le(h, 0100644u << 16, 4);     // external attributes: a regular file, rw-r--r--
      put_le(h, offset, 4);             // local header's offset
    }
    return h + name;
  };
  const std::string local = header(false);
  f_.write(local.data(), local.size());
  if (deflate) {
    f_.write(packed.data(), packed.size());
  } else {
    for (auto [p, n] : pieces) f_.write(p, n);
  }
  central_ += header(true);
  ++count_;
}

void Writer::finish() {
  const uint64_t cd_offset = f_.size();
  if (cd_offset >= kMax32 || central_.size() >= kMax32)
    ctx_.fail("the archive would need zip64 (over 4 GiB), which minijax does not write");
  std::string end;
  put_le(end, kEndSig, 4);
  put_le(end, 0, 2);  // this disk
  put_le(end, 0, 2);  // disk of the central directory
  put_le(end, count_, 2);
  put_le(end, count_, 2);
  put_le(end, central_.size(), 4);
  put_le(end, cd_offset, 4);
  put_le(end, 0, 2);  // comment length
  f_.write(central_.data(), central_.size());
  f_.write(end.data(), end.size());
}

std::vector<Member> read_directory(const IOContext& ctx, const uint8_t* b, size_t n) {
  // The end record: the last signature whose comment reaches exactly the end of the file.
  size_t end = SIZE_MAX;
  for (size_t at = n >= kEndLen ? n - kEndLen + 1 : 0; at-- > 0 && n - at <= kEndLen + 0xffff;)
    if (get_le(b + at, 4) == kEndSig && at + kEndLen + get_le(b + at + 20, 2) == n) {
      end = at;
      break;
    }
  if (end == SIZE_MAX)
    ctx.fail("not a zip archive, or a truncated one: no end-of-central-directory record at its end");
  const uint64_t disk = get_le(b + end + 4, 2), cd_disk = get_le(b + end + 6, 2);
  const uint64_t count_here = get_le(b + end + 8, 2), count = get_le(b + end + 10, 2);
  const uint64_t cd_size = get_le(b + end + 12, 4), cd_offset = get_le(b + end + 16, 4);
  if (count == 0xffff || cd_size == kMax32 || cd_offset == kMax32)
    ctx.fail("a zip64 archive (over 4 GiB or 65535 members), which minijax does not read");
  if (disk != 0 || cd_disk != 0 || count_here != count) ctx.fail("a multi-disk zip archive, not supported");
  if (cd_offset + cd_size > end)
    ctx.fail("corrupt zip: the central directory (" + std::to_string(cd_size) + " bytes at " +
             std::to_string(cd_offset) + ") runs past its end record at " + std::to_string(end));
  std::vector<Member> members;
  std::set<std::string> names;
  size_t at = size_t(cd_offset);
  const size_t cd_end = size_t(cd_offset + cd_size);
  for (uint64_t i = 0; i < count; ++i) {
    if (at + kCentralLen > cd_end || get_le(b + at, 4) != kCentralSig)
      ctx.fail("corrupt zip: central directory entry " + std::to_string(i) + " of " + std::to_string(count) +
               " is missing or truncated");
    const uint64_t flags = get_le(b + at + 8, 2);
    Member m;
    m.method = uint16_t(get_le(b + at + 10, 2));
    m.crc32 = uint32_t(get_le(b + at + 16, 4));
    m.compressed_size = get_le(b + at + 20, 4);
    m.size = get_le(b + at + 24, 4);
    const size_t name_len = get_le(b + at + 28, 2), extra_len = get_le(b + at + 30, 2),
                 comment_len = get_le(b + at + 32, 2);
    const uint64_t local = get_le(b + at + 42, 4);
    if (at + kCentralLen + name_len + extra_len + comment_len > cd_end)
      ctx.fail("corrupt zip: central directory entry " + std::to_string(i) + " runs past the directory");
    m.name.assign(reinterpret_cast<const char*>(b + at + kCentralLen), name_len);
    at += kCentralLen + name_len + extra_len + comment_len;
    const IOContext mctx = ctx.at(m.name);
    if (m.compressed_size == kMax32 || m.size == kMax32 || local == kMax32)
      mctx.fail("a zip64 member (over 4 GiB), which minijax does not read");
    if (flags & 1) mctx.fail("an encrypted zip member, not supported");
    if (m.method != 0 && m.method != 8)
      mctx.fail("zip compression method " + std::to_string(m.method) + ", expected 0 (stored) or 8 (deflate)");
    if (m.method == 0 && m.compressed_size != m.size)
      mctx.fail("corrupt zip: a stored member of " + std::to_string(m.size) + " bytes occupies " +
                std::to_string(m.compressed_size));
    if (!names.insert(m.name).second) mctx.fail("corrupt zip: the archive holds this member twice");
    if (local + kLocalLen > cd_offset || get_le(b + local, 4) != kLocalSig)
      mctx.fail("corrupt zip: no local header at offset " + std::to_string(local));
    const size_t lname = get_le(b + local + 26, 2), lextra = get_le(b + local + 28, 2);
    if (local + kLocalLen + lname > cd_offset || lname != name_len ||
        std::memcmp(b + local + kLocalLen, m.name.data(), name_len) != 0)
      mctx.fail("corrupt zip: the local header at offset " + std::to_string(local) + " names another member");
    m.data_offset = local + kLocalLen + lname + lextra;
    if (m.data_offset + m.compressed_size > cd_offset)
      mctx.fail("corrupt zip: the member's " + std::to_string(m.compressed_size) + " bytes at offset " +
                std::to_string(m.data_offset) + " run past the central directory at " + std::to_string(cd_offset));
    members.push_back(std::move(m));
  }
  if (at != cd_end) ctx.fail("corrupt zip: the central directory's size disagrees with its entries");
  return members;
}

std::vector<uint8_t> extract(const IOContext& ctx_in, const uint8_t* b, size_t n, const Member& m) {
  const IOContext ctx = ctx_in.at(m.name);
  const uint8_t* src = b + m.data_offset;
  std::vector<uint8_t> out;
  if (m.method == 0) {
    out.assign(src, src + m.size);
  } else {
    if (m.size > m.compressed_size * kMaxDeflateRatio + 64)
      ctx.fail("corrupt zip: " + std::to_string(m.compressed_size) + " deflated bytes cannot hold " +
               std::to_string(m.size) + " (deflate's ratio is at most 1032)");
    out.resize(size_t(m.size));
    z_stream z{};
    if (inflateInit2(&z, -15) != Z_OK) ctx.fail("zlib's inflateInit2 failed");
    z.next_in = const_cast<Bytef*>(src);
    z.avail_in = uInt(m.compressed_size);
    z.next_out = out.data();
    z.avail_out = uInt(out.size());
    const int r = inflate(&z, Z_FINISH);
    const uint64_t produced = z.total_out, consumed = z.total_in;
    inflateEnd(&z);
    if (r != Z_STREAM_END || produced != m.size || consumed != m.compressed_size)
      ctx.fail("corrupt zip: the deflated member " +
               std::string(r == Z_DATA_ERROR                         ? "is not a valid deflate stream"
                           : r == Z_STREAM_END                        ? "has the wrong size"
                           : produced == m.size && r == Z_BUF_ERROR ? "inflates past its recorded size"
                                                                      : "ends early (truncated)") +
               " (" + std::to_string(produced) + " of " + std::to_string(m.size) + " bytes inflated)");
  }
  if (crc_of({{out.data(), out.size()}}) != m.crc32) ctx.fail("corrupt zip: the member's CRC-32 does not match");
  (void)n;
  return out;
}

}  // namespace minijax::detail::zip
