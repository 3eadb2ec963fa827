// minijax memory analysis: the planner's prediction of a compiled program's memory, with JAX's
// CompiledMemoryStats fields. Compile time; includes only core/ (and the buffer plan).
#pragma once
#include <array>
#include <cstdint>
#include <source_location>
#include <string>

#include "core/aval.h"
#include "memory/plan_buffers.h"

namespace minijax {

/// JAX's `compiled.memory_analysis()`: bytes per category, device memory then host memory
/// (pinned_host and unpinned_host together). `argument`: the inputs; `output`: the outputs (an
/// output that is an input or a view of one counts here too); `alias`: output bytes held in
/// input buffers (donated inputs overwritten, or inputs returned unchanged); `temp`: the arena of temporaries; `peak_memory`: arguments + outputs
/// - aliases + temporaries, what the program holds at once at most.
struct CompiledMemoryStats {
  int64_t argument_size_in_bytes = 0, output_size_in_bytes = 0, alias_size_in_bytes = 0,
          temp_size_in_bytes = 0, peak_memory_in_bytes = 0;
  int64_t host_argument_size_in_bytes = 0, host_output_size_in_bytes = 0, host_alias_size_in_bytes = 0,
          host_temp_size_in_bytes = 0, host_peak_memory_in_bytes = 0;
  /// The same four categories per memory kind (device, pinned_host, unpinned_host).
  std::array<int64_t, 3> argument{}, output{}, alias{}, temp{};
  /// Predicted peak bytes of memory kind `kind` (argument + output - alias + temp of that kind).
  /// ValueError at `loc` for a value outside the MemoryKind enum.
  int64_t peak_bytes(MemoryKind kind, std::source_location loc = std::source_location::current()) const;
  /// Accepts "device", "pinned_host", "unpinned_host"; ValueError (naming peak_bytes and
  /// `kind`) at `loc` otherwise.
  int64_t peak_bytes(const std::string& kind, std::source_location loc = std::source_location::current()) const;
  /// One line per category, JAX's names.
  std::string str() const;
};

/// The memory analysis of `program` planned by `plan`.
CompiledMemoryStats memory_analysis(const Jaxpr& program, const BufferPlan& plan);

}  // namespace minijax
