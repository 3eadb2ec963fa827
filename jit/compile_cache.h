// minijax compile caches: the process-wide executable cache (keyed by the program after the
// passes) and the persistent cache on disk (config().compilation_cache_dir).
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "jit/emit_llvm.h"
#include "jit/executable.h"

namespace minijax {

/// Generates the code of `exe` (after the passes); `cached` is object code from the persistent
/// cache, or null to compile.
using CodeGenerator = std::function<void(Executable& exe, const CompileOptions&, const ObjectCode* cached)>;

/// The executable for `exe` (a program after the passes): shared when an equal program with
/// equal code-relevant options was compiled before in this process, else generated once — also
/// when several threads ask for it at the same time (the others wait; nobody busy-waits). With
/// config().compilation_cache_dir set, object code is first looked up on disk (not with
/// keep_llvm_ir, whose IR the disk does not hold, nor for a program whose bodies hold
/// constants); a corrupt, foreign or unloadable entry is rejected and the program compiled.
/// Rethrows what `generate` throws (to every waiting caller; a later call tries again).
std::shared_ptr<const Executable> cached_executable(Executable exe, const CompileOptions& opts,
                                                    const CodeGenerator& generate);

/// Writes exe's object code to the persistent cache when config().compilation_cache_dir is set
/// (atomically: a temporary file renamed). Errors writing are ignored: the cache is optional.
void store_persistent(const Executable& exe, const CompileOptions& opts, const ObjectCode& obj);

/// The persistent key of a program after the passes: SHA-256 over its printed jaxpr, the options
/// that change code (donation), the library's build id (the linker's GNU build id of libminijax,
/// else SHA-256 of its file), the LLVM
/// version and the host CPU's features.
std::string persistent_key(const Jaxpr& program, const CompileOptions& opts);

/// The caches' counters since the process started. `entries`: executables the process-wide cache
/// holds; `generated`: executables made (compiled, or loaded from the persistent cache), i.e. the
/// process-wide cache's misses; `persistent_hits`: those loaded from disk (no optimization or code
/// generation); `persistent_rejected`: disk entries found but not loaded (corrupt, truncated,
/// another key's entry, unloadable), each compiled anew and overwritten.
struct CompileCacheStats {
  size_t entries = 0, generated = 0, persistent_hits = 0, persistent_rejected = 0;
};
/// A snapshot of the counters (thread-safe).
CompileCacheStats compile_cache_stats();

}  // namespace minijax
