// minijax io: how the savers and loaders touch disk and report bad files.
// Owns whole-file reads and the atomic write protocol (temporary, fsync, rename, fsync of the folder).
#include "io/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
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

// The pid of an AtomicFile temporary's name ".<name>.tmp-<pid>-<n>" (decimal, no sign or
// leading zero), or 0 when the name is not one.
pid_t temporary_pid(const std::string& entry) {
  if (entry.size() < 2 || entry[0] != '.') return 0;
  const size_t dash = entry.rfind('-');
  if (dash == std::string::npos || dash + 1 == entry.size()) return 0;
  for (size_t i = dash + 1; i < entry.size(); ++i)
    if (entry[i] < '0' || entry[i] > '9') return 0;
  const size_t tmp = entry.rfind(".tmp-", dash);
  if (tmp == std::string::npos || tmp < 2) return 0;  // a non-empty <name> before ".tmp-"
  const size_t begin = tmp + 5;
  if (begin >= dash || entry[begin] == '0' || dash - begin > 9) return 0;
  long pid = 0;
  for (size_t i = begin; i < dash; ++i) {
    if (entry[i] < '0' || entry[i] > '9') return 0;
    pid = pid * 10 + (entry[i] - '0');
  }
  return pid_t(pid);
}
}  // namespace

void remove_stale_temporaries(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const pid_t pid = temporary_pid(name);
    // ESRCH: no such process on this machine. EPERM (another user's live process) and success
    // both mean alive; the file is left alone.
    if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    stale.push_back(name);
  }
  ::closedir(d);
  for (const std::string& name : stale) {
    const std::string path = (dir == "/" ? "" : dir) + "/" + name;
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(path.c_str());
  }
}

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
  remove_stale_temporaries(dir);
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
