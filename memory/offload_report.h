// minijax host offload report: the host buffers a scheduled program holds and the copies it makes
// between memory kinds, for Compiled::as_text. Compile time; includes only core/.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/jaxpr.h"

namespace minijax {

/// One copy site of a program after the offload stages: a copy_start, copy_slice_start or
/// copy_update_start equation, wherever it is nested.
struct OffloadCopy {
  std::string primitive;
  MemoryKind from = MemoryKind::device, to = MemoryKind::device;
  int64_t bytes = 0;       ///< bytes one copy moves
  int64_t slices = 1;      ///< original loop iterations' slices per copy (coalescing's k)
  int64_t chunks = 1;      ///< contiguous pieces of one copy (> 1: strided)
  int64_t runs = 1;        ///< times the equation runs per call (product of enclosing scan lengths)
  int64_t copying = 1;     ///< runs that move bytes (a pipelined copy's index is past its loop's
                           ///< end once per run of the loop: `pipelined` on the equation)
  bool conditional = false;  ///< inside a cond branch or a while body: runs and copying are per
                             ///< run of that body, which the program decides at run time
  std::string where;       ///< "top level" or "scan(length=100, reverse) in ..."
};

/// The host offload of a scheduled program: its host-kind buffers (program inputs, and values
/// computed by scans or copies in any scope, views excluded), with their avals, and every copy
/// site.
struct OffloadReport {
  std::vector<ShapedArray> host_buffers;
  std::vector<OffloadCopy> copies;
  /// Bytes of host_buffers, summed.
  int64_t host_bytes() const;
  /// Lines for as_text (empty when the program copies nothing between memory kinds).
  std::string str() const;
};

/// The report of `program` (after the offload stages).
OffloadReport offload_report(const Jaxpr& program);

}  // namespace minijax
