// minijax io: how the savers and loaders touch disk and report bad files.
// Owns detail::IOContext (error messages naming function, file and key), read_file and AtomicFile.
#pragma once
#include <cstddef>
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "core/errors.h"

namespace minijax::detail {

/// Where an I/O error happened: the public function (`load_npz`), the file, the key being read
/// or written (empty before any key) and the user's call site. fail() throws
/// `IOError("<fn>: file '<path>'[, key '<key>']: <what>", loc)`.
struct IOContext {
  const char* fn;
  std::string path;
  std::string key;
  std::source_location loc;
  /// The message's prefix: "<fn>: file '<path>'[, key '<key>']".
  std::string where() const;
  [[noreturn]] void fail(const std::string& what) const;
  /// This context with `key` set.
  IOContext at(const std::string& k) const { return IOContext{fn, path, k, loc}; }
};

/// The bytes of the regular file ctx.path. Throws IOError (ctx.fail) when it is missing, not a
/// regular file, or cannot be read, with the system's reason (strerror).
std::vector<uint8_t> read_file(const IOContext& ctx);

/// A file replaced atomically. The bytes go to a temporary file in the target's folder,
/// `.<name>.tmp-<pid>-<n>` (created with O_EXCL and mode 0666 & ~umask, as a plain open would
/// create the target); commit() flushes it (fsync), renames it over the target and fsyncs the
/// folder, so at every instant the target path holds either its old contents or the complete new
/// file, also after a crash or power loss. An AtomicFile destroyed before commit() (an exception
/// while writing) removes its temporary file and leaves the target untouched. Every failure
/// (temporary not creatable — read-only folder, name too long —, a short write — disk full,
/// file size limit —, fsync, rename onto a folder) throws IOError through ctx naming the step
/// and strerror. A target that is a symbolic link is replaced by the new file (the link's target
/// is left as it was), as rename(2) does.
/// Before creating its temporary, the constructor calls remove_stale_temporaries on the folder.
class AtomicFile {
 public:
  explicit AtomicFile(IOContext ctx);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// Appends n bytes (buffered; large writes go straight to the file).
  void write(const void* data, size_t n);
  /// Bytes appended so far.
  uint64_t size() const { return size_; }
  /// Flushes, fsyncs, renames over the target, fsyncs the folder. Call once.
  void commit();

 private:
  void flush();
  void write_fd(const void* data, size_t n);
  IOContext ctx_;
  std::string tmp_;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t on_disk_ = 0;
  std::vector<char> buf_;
  bool committed_ = false;
};

/// Removes from `dir` the temporaries of AtomicFiles whose process is gone: regular files named
/// `.<name>.tmp-<pid>-<n>` (pid and n decimal) for which kill(pid, 0) fails with ESRCH — no such
/// process on this machine, e.g. a save killed by SIGKILL. A live process's temporary (kill
/// succeeds, or fails with EPERM: another user's process) and this process's own are kept, as
/// is every other name. Best effort: an unreadable folder or a failed unlink is ignored. (A
/// folder shared with another machine (NFS) cannot tell that machine's live processes apart
/// from dead ones: a pid that does not exist here counts as gone.)
void remove_stale_temporaries(const std::string& dir);

/// The little-endian bytes of an unsigned integer, appended to `out` (n bytes of v).
void put_le(std::string& out, uint64_t v, int n);
/// The unsigned little-endian integer of n bytes at p.
uint64_t get_le(const uint8_t* p, int n);

}  // namespace minijax::detail
