// minijax caches, the public side: the compilation caches' statistics (JAX's cache counters) and
// clear_caches() (JAX's jax.clear_caches). The caches themselves: jit/compile_cache.h, core/trace_cache.h.
#pragma once
#include <cstddef>

namespace minijax {

/// The process-wide compilation caches' state and counters since the process started.
/// The bounds (config().compilation_cache_max_bytes and compilation_cache_max_entries) apply to
/// `bytes` and to `entries + trace_entries`.
struct CompilationCacheStats {
  /// Executables the process-wide executable cache holds now.
  size_t entries = 0;
  /// Their bytes, as the bound counts them: per executable, the code and data sections ORC
  /// mapped for it, its hoisted constants, and the texts it keeps (its key: the program after
  /// the passes; its kernels' KIR; its LLVM IR with keep_llvm_ir).
  size_t bytes = 0;
  /// Traces kept now: the shared trace cache's and every live Jit's per-signature entries.
  size_t trace_entries = 0;
  /// Lookups of the executable cache that found an executable (made or being made), and those
  /// that did not (each generates one).
  size_t hits = 0, misses = 0;
  /// Executables dropped from the cache to stay within the bounds or by clear_caches(); and
  /// entries of every kind (executables and traces) dropped so.
  size_t evictions = 0, all_evictions = 0;
  /// Executables made (compiled, or loaded from the persistent cache).
  size_t generated = 0;
  /// Executables loaded from the persistent cache (no optimization or code generation).
  size_t persistent_hits = 0;
  /// Persistent entries found but not loaded (corrupt, truncated, another key's, unloadable),
  /// each compiled anew and overwritten.
  size_t persistent_rejected = 0;
  /// Persistent cache files removed to keep its directory within config().compilation_cache_dir_max_bytes.
  size_t persistent_evictions = 0;
  /// Bytes of code and data ORC holds for every loaded executable of the process, cached or not
  /// (an executable a Compiled or a running call holds is loaded until they let it go).
  size_t code_bytes = 0;
};

/// A snapshot of the compilation caches' state and counters (thread-safe). Source: JAX's cache
/// counters (jax/_src/compilation_cache.py, jax/_src/cache_key.py) and the LRU caches of
/// jax/_src/util.py (cache_info: hits, misses, currsize).
CompilationCacheStats compilation_cache_stats();

/// JAX's jax.clear_caches(): drops every entry of the process-wide caches: the executable cache,
/// the shared trace cache, and every Jit's per-signature traces (as Jit::clear_cache() on each).
/// An executable is freed (its code unmapped) once nothing else holds it: a Compiled the user
/// keeps, or a call running now, keeps its executable alive, and that call finishes with correct
/// results. Later calls trace and compile anew (or load from the persistent cache, which is kept).
/// Thread-safe. Source: jax/_src/api.py (clear_caches: every util.cache, weakref_lru_cache and
/// the C++ pjit caches).
void clear_caches();

}  // namespace minijax
