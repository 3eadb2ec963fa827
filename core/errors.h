// minijax error types: the exceptions every layer throws for bad input.
// Owns ShapeError/TypeError/ValueError/ConcretizationError/ResourceExhaustedError and call sites.
#pragma once
#include <source_location>
#include <stdexcept>
#include <string>

namespace minijax {

/// Base class of every minijax exception. what() = "<message> [at file:line in function]".
class Error : public std::runtime_error {
 public:
  Error(const std::string& msg, std::source_location loc = std::source_location::current());
  /// The user's call site the error was raised for.
  const std::source_location& where() const { return loc_; }
  /// The message without the call site.
  const std::string& message() const { return msg_; }

 private:
  std::string msg_;
  std::source_location loc_;
};

/// Operand shapes that do not fit a primitive (wrong rank, mismatched dims, bad axes).
class ShapeError : public Error { using Error::Error; };
/// Operand dtypes or memory kinds that do not fit a primitive; wrong pytree structure.
class TypeError : public Error { using Error::Error; };
/// A value out of range (index, axis number, memory-kind name, file contents).
class ValueError : public Error { using Error::Error; };
/// An index out of range.
class IndexError : public Error { using Error::Error; };
/// A traced (abstract) value was used where a concrete value is needed (branching, item()).
class ConcretizationError : public Error { using Error::Error; };
/// A tracer escaped the transformation that created it.
class UnexpectedTracerError : public Error { using Error::Error; };
/// A transformation is asked of a primitive declared as lacking the rule (e.g. not differentiable).
class NotDifferentiableError : public Error { using Error::Error; };
/// An I/O failure (missing or corrupt data file).
class IOError : public Error { using Error::Error; };
/// A mesh, partition spec or sharding that is invalid or does not fit the array it is put on.
class ShardingError : public Error { using Error::Error; };
/// The processes of a multi-process run cannot go on together (mj::distributed, core/distributed.h):
/// initialize() called twice or after this process used its devices, arguments that disagree with
/// the launcher, more than one process without a launcher or in a build without MPI.
class DistributedError : public Error { using Error::Error; };
/// An allocation that would exceed a configured memory limit (config().device_memory_bytes /
/// host_memory_bytes) or that the system cannot satisfy (JAX's RESOURCE_EXHAUSTED). The message
/// names the memory kind, the device, the requested bytes, the bytes in use and the limit.
class ResourceExhaustedError : public Error { using Error::Error; };
/// A NaN or ±Inf produced while config().debug_nans / debug_infs is on (JAX's
/// FloatingPointError): the message names the primitive, its operands' shapes and the user's line.
class FloatingPointError : public Error { using Error::Error; };

/// "file:line (function)" of a call site.
std::string format_location(const std::source_location& loc);

namespace detail {

/// Throws `e` again as its own type (Error or a class above) with `prefix` before its message,
/// at `loc`: for an error raised deep inside the library (an allocator, a kernel) on behalf of
/// the user's call at `loc`, which the message should name. Returns (throwing nothing) for a
/// class declared elsewhere, which the caller rethrows unchanged (`throw;`).
void rethrow_at(const Error& e, const std::string& prefix, std::source_location loc);

/// Whether `loc` is a line of the library's own sources (core/, autodiff/, sharding/, memory/,
/// jit/, io/ as this build compiled them) or of its installed headers
/// (`.../include/minijax/<folder>/`), not of a user's program.
bool is_library_location(const std::source_location& loc);

}  // namespace detail

}  // namespace minijax
