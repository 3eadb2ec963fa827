// minijax io: how the savers and loaders touch disk and report bad files.
// Owns whole-file reads and the atomic write protocol (temporary, fsync, rename, fsync of the folder).
#include "io/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace minijax::detail {

namespace {
std::string sys_error(int err) { return std::strerror(err); }

// The folder of a path ("." for a bare name) and its last component.
std::pair<std::string, std::string> split_path(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

constexpr size_t kBufferBytes = 1 << 20;
}  // namespace

std::string IOContext::where() const {
  std::string s = std::string(fn) + ": file '" + path + "'";
  if (!key.empty()) s += ", key '" + key + "'";
  return s;
}

void IOContext::fail(const std::string& what) const { throw IOError(where() + ": " + what, loc); }

std::vector<uint8_t> read_file(const IOContext& ctx) {
  const int fd = ::open(ctx.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) ctx.fail("cannot open it: " + sys_error(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    ctx.fail("cannot stat it: " + sys_error(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    ctx.fail(S_ISDIR(st.st_mode) ? "it is a folder, not a file" : "it is not a regular file");
  }
  std::vector<uint8_t> bytes(size_t(st.st_size));
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t r = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      const int err = errno;
      ::close(fd);
      ctx.fail(r < 0 ? "read failed: " + sys_error(err)
                     : "the file shrank while being read (" + std::to_string(got) + " of " +
                           std::to_string(bytes.size()) + " bytes)");
    }
    got += size_t(r);
  }
  ::close(fd);
  return bytes;
}

AtomicFile::AtomicFile(IOContext ctx) : ctx_(std::move(ctx)) {
  static std::atomic<uint64_t> counter{0};
  auto [dir, name] = split_path(ctx_.path);
  if (name.empty()) ctx_.fail("the path names a folder, not a file");
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    tmp_ = (dir == "/" ? "" : dir) + "/." + name + ".tmp-" + std::to_string(::getpid()) + "-" +
           std::to_string(counter++);
    if (dir == ".") tmp_ = tmp_.substr(2);
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST)
      ctx_.fail("cannot create the temporary file '" + tmp_ + "' next to it: " + sys_error(errno) +
                " (nothing was written; the old file, if any, is unchanged)");
  }
  if (fd_ < 0) ctx_.fail("cannot create a temporary file next to it (100 names taken)");
  buf_.reserve(kBufferBytes);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicFile::write_fd(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      ctx_.fail("writing the temporary file failed after " + std::to_string(on_disk_) +
                " bytes: " + sys_error(w < 0 ? errno : ENOSPC) + " (the old file, if any, is unchanged)");
    p += w;
    n -= size_t(w);
    on_disk_ += uint64_t(w);
  }
}

void AtomicFile::flush() {
  if (buf_.empty()) return;
  write_fd(buf_.data(), buf_.size());
  buf_.clear();
}

void AtomicFile::write(const void* data, size_t n) {
  if (buf_.size() + n <= kBufferBytes) {
    buf_.insert(buf_.end(), static_cast<const char*>(data), static_cast<const char*>(data) + n);
    size_ += n;
    return;
  }
  flush();
  size_ += n;
  if (n <= kBufferBytes) {
    buf_.insert(buf_.end(), static_cast<const char*>(data), static_cast<const char*>(data) + n);
    return;
  }
  write_fd(data, n);
}

void AtomicFile::commit() {
  flush();
  if (::fsync(fd_) != 0) ctx_.fail("fsync of the temporary file failed: " + sys_error(errno));
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) ctx_.fail("closing the temporary file failed: " + sys_error(errno));
  if (::rename(tmp_.c_str(), ctx_.path.c_str()) != 0)
    ctx_.fail("cannot rename the temporary file over it: " + sys_error(errno) +
              " (the old file, if any, is unchanged)");
  committed_ = true;
  // The rename is durable once the folder's entry is: fsync the folder (EINVAL: a file system
  // that does not sync folders).
  const int dfd = ::open(split_path(ctx_.path).first.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    const int r = ::fsync(dfd);
    const int err = errno;
    ::close(dfd);
    if (r != 0 && err != EINVAL && err != EROFS)
      ctx_.fail("the new file is in place, but fsync of its folder failed: " + sys_error(err));
  }
}

void put_le(std::string& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}

uint64_t get_le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace minijax::detail
