// minijax compile caches: the process-wide executable cache (keyed by the program after the
// passes, bounded, least recently used evicted) and the persistent cache on disk (bounded too).
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "jit/caches.h"
#include "jit/codegen/emit_llvm.h"
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
///
/// Bounded: each kept executable is an entry of the cache budget (core/cache_budget.h, kind
/// "executable") with its bytes (CompilationCacheStats::bytes says which), and the least recently
/// used entries are evicted once config().compilation_cache_max_bytes or _max_entries is passed.
/// Eviction drops the cache's reference only: the executable is freed, its code unmapped, when
/// its last holder (a Compiled, a call running it) lets it go. ValueError for a negative bound
/// (check_cache_bounds).
std::shared_ptr<const Executable> cached_executable(Executable exe, const CompileOptions& opts,
                                                    const CodeGenerator& generate);

/// Writes exe's object code to the persistent cache when config().compilation_cache_dir is set
/// (atomically: a temporary file renamed). Errors writing are ignored: the cache is optional.
/// With config().compilation_cache_dir_max_bytes > 0, the least recently used entries (by their
/// files' modification times, which a read or write sets to now) are removed first until the new
/// entry fits; an entry larger than the bound by itself is not written. Another process reading
/// an entry removed meanwhile finds no file (or reads the unlinked file it opened) and compiles.
void store_persistent(const Executable& exe, const CompileOptions& opts, const ObjectCode& obj);

/// The persistent key of a program after the passes: SHA-256 over its printed jaxpr, the options
/// that change code (donation), the library's build id (the linker's GNU build id of libminijax,
/// else SHA-256 of its file), the LLVM
/// version and the host CPU's features.
std::string persistent_key(const Jaxpr& program, const CompileOptions& opts);

}  // namespace minijax
