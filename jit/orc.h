// minijax ORC wrapper: loads object code into the process with LLVM ORC LLJIT, one JITDylib per
// executable, and resolves its symbols. The only file that includes ORC headers is orc.cc.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jit/emit_llvm.h"
#include "jit/runtime/abi.h"

namespace minijax {

/// Object code loaded into the process (one JITDylib of the process-wide LLJIT). Unloaded when
/// the last reference goes. Thread-safe: lookup may be called from any thread.
class LoadedObject {
 public:
  ~LoadedObject();
  LoadedObject(const LoadedObject&) = delete;
  LoadedObject& operator=(const LoadedObject&) = delete;
  /// The address of a function the object defines. CompileError if it does not define it.
  void* lookup(const std::string& name) const;

 private:
  friend std::shared_ptr<LoadedObject> load_object(const ObjectCode&, const std::vector<RuntimeSymbol>&,
                                                   const std::string&);
  LoadedObject() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Links `obj` into a fresh JITDylib named after `name` (made unique), resolving its external
/// references first against `symbols`, then against the process (libc's memcpy/memset). Throws
/// CompileError with LLVM's message when linking fails (a missing symbol, a corrupt object).
std::shared_ptr<LoadedObject> load_object(const ObjectCode& obj, const std::vector<RuntimeSymbol>& symbols,
                                          const std::string& name);

}  // namespace minijax
