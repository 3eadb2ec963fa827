// minijax global configuration (the only mutable globals besides the registries).
// Owns switches such as jaxpr verification, the device count and the memory capacities.
#pragma once
#include <cstdint>
#include <string>

namespace minijax {

/// Config::verify_jaxprs' default: true in builds without NDEBUG, false with it (decided where
/// the library is compiled, core/config.cc, not in the including program).
bool default_verify_jaxprs();

/// Process-wide settings. Read/written from the main thread before transformations run.
struct Config {
  /// Run verify_jaxpr on every jaxpr a transformation produces (and on the compiler's scheduled
  /// programs). Defaults to default_verify_jaxprs(): on in debug builds, off in release builds
  /// (it costs tracing and compile time, bench/README.md); the tests' main turns it on.
  bool verify_jaxprs = default_verify_jaxprs();
  /// The number of virtual devices (JAX's `jax_num_cpu_devices`), read at the first use of
  /// mj::devices() (sharding/mesh.h) when set_num_devices was not called; 0 = not set (then
  /// MINIJAX_NUM_DEVICES, else 1). Changing it to another count after that first use makes the
  /// next devices()/num_devices() throw ShardingError (the count cannot change once meshes may
  /// have been built from it).
  int num_cpu_devices = 0;
  /// Capacity in bytes of each device's memory, checked by the allocator at every allocation
  /// (core/allocator.h): a block that would take a device's bytes in use past it throws
  /// ResourceExhaustedError. 0 = unlimited (memory_stats then reports the machine's physical
  /// memory as bytes_limit). Read at each allocation; set it from the main thread.
  int64_t device_memory_bytes = 0;
  /// How long, in seconds, a collective between processes may wait for a peer process
  /// (jit/runtime/mpi_communicator.h) before it fails with DistributedError naming the collective,
  /// the waiting process and the missing ones (OpenMPI has no fault-tolerant mode: the wait is
  /// polled against this deadline). Read when the collective starts. Must be > 0.
  double collective_timeout_s = 300;
  /// Capacity in bytes of the process's host memory (pinned_host and unpinned_host together,
  /// one space shared by all devices), checked as device_memory_bytes is. 0 = unlimited.
  int64_t host_memory_bytes = 0;
  /// The emulated host link of the copy engines (jit/runtime/copy_engine.h), in bytes per
  /// second: a copy of n bytes takes at least n / host_link_bytes_per_s seconds of wall time (the
  /// memcpy, then a timed wait using no core), as a DMA link would, since device and host memory
  /// are the same RAM here. 0 (the default): off, a copy takes its memcpy's time. Read per copy.
  double host_link_bytes_per_s = 0;
  /// Copies of loop slices smaller than this many bytes are coalesced by the offload stages
  /// (memory/coalesce_slice_copies.h): k slices per copy, so a copy never pays an engine round
  /// trip for a few bytes. 0: never coalesce. Read at compile time.
  int64_t offload_coalesce_bytes = 4096;
  /// The most device memory, in bytes, that reloads started ahead of their first reader may hold
  /// at once (place_copies' bounded lookahead: a reload starts later rather than exceed it).
  /// 0: unbounded. Read at compile time.
  int64_t offload_prefetch_bytes = int64_t(256) << 20;
  /// Makes every copy between memory kinds synchronous: the compute thread waits at each start
  /// until the copy is done (the same compiled program, with no overlap), to measure what the
  /// overlap buys. Read per copy.
  bool synchronous_copies = false;
  /// Directory of the persistent compilation cache (JAX's jax_compilation_cache_dir): object code
  /// of compiled programs keyed by SHA-256 of the program, options, library build, LLVM version
  /// and CPU features (jit/compile_cache.h). Empty (the default): off. Read at every compile.
  std::string compilation_cache_dir;
  /// Bound of the persistent cache's directory in bytes (JAX's jax_compilation_cache_max_size):
  /// when a write would take the files' total past it, the least recently used files are removed
  /// first. 0 (the default): unbounded, as in JAX. Negative: ValueError at the next compile.
  int64_t compilation_cache_dir_max_bytes = 0;
  /// Bound of the process-wide executable cache in bytes (jit/compile_cache.h): the code and data
  /// sections ORC allocated for each executable, its hoisted constants and the texts it keeps.
  /// Least recently used entries are evicted first; an executable is freed when nothing refers
  /// to it any more. 0: unbounded. Negative: ValueError at the next compile. The default, 512 MiB,
  /// holds every sample's working set (a training step's executables are a few MB at most)
  /// many times over, while a program compiling shape after shape stays bounded
  /// (CompilationCacheStats::bytes, jit/caches.h, is what it bounds).
  int64_t compilation_cache_max_bytes = int64_t(512) << 20;
  /// Bound of the number of entries of the process-wide caches: executables and the traces
  /// kept per signature (each Jit's and the shared trace cache's), evicted least recently used
  /// first. 0: unbounded. Negative: ValueError at the next compile. The default, 4096, is
  /// far above any sample's working set (a few dozen signatures).
  int64_t compilation_cache_max_entries = 4096;
  /// The most equations in one fused kernel (jit/passes/fuse.h): a longer elementwise chain is split
  /// into kernels of at most this many equations, so code generation's time and stack stay
  /// bounded. Default 500: compiling an elementwise chain costs the same per equation whether
  /// its kernels hold 125 or 20,000 equations (measured, docs/compiler.md "Long programs"), while
  /// very small kernels cost (many functions slow LLVM down) and each split costs one store and
  /// reload of an intermediate array; 500 keeps both small. (The emitter's recursion is bounded
  /// separately: at most 128 index-changing equations per kernel, jit/passes/fuse.h.)
  /// Must be >= 1; otherwise ValueError at the next compile.
  int64_t max_fusion_equations = 500;
  /// The most nested levels of tracing (a traced function calling closed_call, jit, checkpoint,
  /// scan, cond or custom rules inside each other; every trace open on the thread counts):
  /// deeper nesting raises ValueError naming the depth and the user's line (core/trace.h
  /// check_trace_depth), rather than overflowing the stack. Default 256: a user function that
  /// nests closed_call inside itself takes about 1.2 KB of stack per level in a Release build
  /// (measured), so 256 levels take about 300 KB and a thread with a 1 MB stack gets the error,
  /// not a crash, with room for the user's own frames. Must be >= 1; otherwise ValueError at
  /// the next trace.
  int max_trace_depth = 256;
  /// JAX's jax_debug_nans: every primitive evaluated eagerly checks its floating results and
  /// throws FloatingPointError (naming the primitive, its operands' shapes and the user's line) at
  /// the first NaN; a jitted function checks its outputs after running and, on a NaN, runs the
  /// function again op by op on the same arguments to find the primitive (impossible when
  /// arguments were donated: the error says so). Off: no check at all, and the compiled code is
  /// the same either way. Read at every primitive and every jitted call.
  bool debug_nans = false;
  /// As debug_nans, for +Inf and -Inf (JAX's jax_debug_infs).
  bool debug_infs = false;
};

/// The process-wide configuration.
Config& config();

}  // namespace minijax
