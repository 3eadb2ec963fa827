// minijax ORC wrapper: one process-wide LLJIT; each executable's object file in its own JITDylib
// with the runtime's symbols defined in it. The only translation unit that includes ORC headers.
#include "jit/orc.h"

#include <atomic>
#include <mutex>

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>

namespace minijax {

namespace {

std::string message(llvm::Error e) {
  std::string s;
  llvm::handleAllErrors(std::move(e), [&](const llvm::ErrorInfoBase& info) { s += info.message(); });
  return s;
}

// The process's LLJIT. Never destroyed: executables (and their JITDylibs) may outlive any other
// static object, e.g. in caches torn down at exit.
llvm::orc::LLJIT& process_jit() {
  static llvm::orc::LLJIT* jit = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto j = llvm::orc::LLJITBuilder().create();
    if (!j) throw CompileError("LLVM ORC could not start: " + message(j.takeError()));
    // Errors reach the caller as CompileError; do not also print them.
    (*j)->getExecutionSession().setErrorReporter([](llvm::Error e) { llvm::consumeError(std::move(e)); });
    return j->release();
  }();
  return *jit;
}

std::mutex& jit_mutex() {
  static std::mutex mu;
  return mu;
}

}  // namespace

struct LoadedObject::Impl {
  llvm::orc::JITDylib* dylib = nullptr;
};

LoadedObject::~LoadedObject() {
  if (!impl_ || !impl_->dylib) return;
  std::lock_guard<std::mutex> g(jit_mutex());
  llvm::Error e = process_jit().getExecutionSession().removeJITDylib(*impl_->dylib);
  llvm::consumeError(std::move(e));  // nothing useful to do in a destructor
}

void* LoadedObject::lookup(const std::string& name) const {
  auto sym = process_jit().lookup(*impl_->dylib, name);
  if (!sym) throw CompileError("compiled object has no symbol " + name + ": " + message(sym.takeError()));
  return sym->toPtr<void*>();
}

std::shared_ptr<LoadedObject> load_object(const ObjectCode& obj, const std::vector<RuntimeSymbol>& symbols,
                                          const std::string& name) {
  static std::atomic<uint64_t> counter{0};
  llvm::orc::LLJIT& jit = process_jit();
  std::shared_ptr<LoadedObject> lo(new LoadedObject());
  lo->impl_ = std::make_unique<LoadedObject::Impl>();
  std::string dylib_name = name + "." + std::to_string(counter.fetch_add(1));
  std::lock_guard<std::mutex> g(jit_mutex());
  auto dl = jit.createJITDylib(dylib_name);
  if (!dl) throw CompileError("LLVM ORC: cannot create " + dylib_name + ": " + message(dl.takeError()));
  llvm::orc::JITDylib& jd = *dl;
  llvm::orc::SymbolMap map;
  for (auto& s : symbols)
    map[jit.mangleAndIntern(s.name)] = {llvm::orc::ExecutorAddr::fromPtr(s.address),
                                         llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  if (auto e = jd.define(llvm::orc::absoluteSymbols(std::move(map))))
    throw CompileError("LLVM ORC: cannot define runtime symbols: " + message(std::move(e)));
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit.getDataLayout().getGlobalPrefix());
  if (!gen) throw CompileError("LLVM ORC: " + message(gen.takeError()));
  jd.addGenerator(std::move(*gen));
  auto buf = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(obj.bytes.data(), obj.bytes.size()), dylib_name);
  if (auto e = jit.addObjectFile(jd, std::move(buf))) {
    llvm::consumeError(jit.getExecutionSession().removeJITDylib(jd));
    throw CompileError("LLVM ORC: cannot load the object of " + name + ": " + message(std::move(e)));
  }
  lo->impl_->dylib = &jd;
  return lo;
}

}  // namespace minijax
