// minijax ORC wrapper: loads object code into the process with LLVM ORC LLJIT, one JITDylib per
// executable, and resolves its symbols. The only file that includes ORC headers is orc.cc.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jit/codegen/emit_llvm.h"
#include "jit/runtime/abi.h"

namespace minijax {

/// Object code loaded into the process (one JITDylib of the process-wide LLJIT). Unloaded when
/// the last reference goes: its JITDylib is removed and its memory unmapped. Code of a removed
/// object must not run any more; the executables that hold a LoadedObject keep it alive while a
/// call runs (every caller holds the executable). Thread-safe: lookup may be called from any
/// thread, and loading and removal are serialized.
class LoadedObject {
 public:
  ~LoadedObject();
  LoadedObject(const LoadedObject&) = delete;
  LoadedObject& operator=(const LoadedObject&) = delete;
  /// The address of a function the object defines. CompileError if it does not define it.
  void* lookup(const std::string& name) const;
  /// The bytes of the code and data sections ORC mapped for this object (its JITLink standard
  /// segments, whole pages), once linked (after the first lookup); 0 before.
  size_t code_bytes() const;

 private:
  friend std::shared_ptr<LoadedObject> load_object(const ObjectCode&, const std::vector<RuntimeSymbol>&,
                                                   const std::string&);
  LoadedObject() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The bytes of code and data ORC holds for every loaded object of the process (the counting
/// memory manager's count): falls back as objects are unloaded, to 0 when none is loaded.
size_t loaded_code_bytes();

/// Links `obj` into a fresh JITDylib named after `name` (made unique), resolving its external
/// references first against `symbols`, then against the process (libc's memcpy/memset). Throws
/// CompileError with LLVM's message when linking fails (a missing symbol, a corrupt object).
std::shared_ptr<LoadedObject> load_object(const ObjectCode& obj, const std::vector<RuntimeSymbol>& symbols,
                                          const std::string& name);

}  // namespace minijax
