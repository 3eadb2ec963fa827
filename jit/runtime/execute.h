// minijax executor (one device): runs a compiled program on concrete arguments — buffers for the
// outputs and the arenas from the allocator, donation, the call of the entry function.
#pragma once
#include <cstdint>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/array.h"
#include "jit/runtime/loaded_executable.h"

namespace minijax {

/// The device every unsharded compiled program runs on (its outputs and arenas live there).
inline constexpr int kExecuteDevice = 0;

/// How execute names a program input in its error messages: the jit function, how many leading
/// inputs are its closed-over constants and, per positional argument, its first leaf.
/// The donated input buffers one call has claimed (Buffer::claim_donation), shared by both
/// executors: the claims are released when this object is destroyed unless commit() was called,
/// so a call that fails before its program may overwrite anything leaves the caller's Arrays
/// readable. Not thread-safe (one per call).
class DonationClaims {
 public:
  DonationClaims() = default;
  DonationClaims(const DonationClaims&) = delete;
  DonationClaims& operator=(const DonationClaims&) = delete;
  ~DonationClaims();
  /// Claims `b` for this call; false (nothing claimed) when another call holds it.
  bool claim(Buffer* b);
  /// From here on the program may overwrite the claimed buffers: they are not released.
  void commit() { committed_ = true; }

 private:
  std::vector<Buffer*> bufs_;
  bool committed_ = false;
};

struct InputNames {
  std::string_view function;             ///< the jit's name (the executable's name when empty)
  size_t num_consts = 0;                 ///< leading inputs that are closed-over constants
  const uint32_t* first_leaf = nullptr;  ///< [nargs + 1]: argument p's leaves are [first_leaf[p], first_leaf[p+1])
  size_t nargs = 0;
  /// "argument 1 (leaf 2 of 3)", "argument 0", "closed-over constant 0", or "input 4" when no
  /// argument layout is given.
  std::string operator()(size_t input) const;
};

/// The bytes of hoisted constant `c` (LoadedExecutable::hoisted_consts: a concrete Array), which the
/// executors pass after the caller's inputs; the program only reads them.
void* hoisted_data(const Array& c);

/// Runs `exe` on its inputs: `consts` then `leaves` (concrete Arrays, one per program input,
/// matching exe.in_avals in shape, dtype and memory kind; weak types may differ), on device
/// kExecuteDevice, and returns its outputs. Donated inputs (CompileOptions::donated) are
/// consumed: their buffers may hold outputs, and reading them afterwards throws ValueError.
/// Throws at `loc`, naming the input as `names` does: TypeError for a wrong count, an abstract or
/// traced input, or an input of another type; ValueError for an input on another device (naming
/// both devices), a donated input that is also passed as another input, or an input donated to
/// an earlier call. Nothing runs when a check fails. Runs on the calling thread; large kernels
/// use the oneTBB pool.
std::vector<Array> execute(const LoadedExecutable& exe, std::span<const Array> consts, std::span<const Array> leaves,
                           std::source_location loc, const InputNames& names);

/// execute with every input in `args` (inputs named "input i").
std::vector<Array> execute(const LoadedExecutable& exe, const std::vector<Array>& args,
                           std::source_location loc = std::source_location::current());

}  // namespace minijax
