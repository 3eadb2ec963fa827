// minijax host offload: the tunables of the offload stages, part of CompileOptions and of the
// compile-cache keys. The API fills them from config(); no stage reads config() for them.
#pragma once
#include <cstdint>
#include <string>

namespace minijax {

/// What the offload stages (split_copies, coalesce_slice_copies, pipeline_slice_copies,
/// place_copies; jit/pipeline.cc) are tuned by.
struct OffloadOptions {
  /// Copies of loop slices smaller than this many bytes are coalesced, k slices per copy
  /// (config().offload_coalesce_bytes; 0: never coalesce).
  int64_t coalesce_bytes = 4096;
  /// The most device memory, in bytes, that reloads started ahead of their first reader may hold
  /// at once (config().offload_prefetch_bytes; 0: unbounded).
  int64_t prefetch_bytes = int64_t(256) << 20;
  /// The copy-cost model's link, in bytes per second (config().host_link_bytes_per_s; 0: 10 GB/s).
  double host_link_bytes_per_s = 0;
  /// "offload:<coalesce>,<prefetch>,<link>": the part of a compile-cache key these make.
  std::string key() const {
    return "offload:" + std::to_string(coalesce_bytes) + "," + std::to_string(prefetch_bytes) + "," +
           std::to_string(host_link_bytes_per_s);
  }
};

}  // namespace minijax
