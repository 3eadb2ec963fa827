// minijax ORC wrapper: one process-wide LLJIT; each executable's object file in its own JITDylib
// with the runtime's symbols defined in it, its memory counted. The only file with ORC headers.
#include "jit/codegen/orc.h"

#include <atomic>
#include <map>
#include <mutex>

#include <llvm/ExecutionEngine/JITLink/JITLinkMemoryManager.h>
#include <llvm/ExecutionEngine/Orc/EPCEHFrameRegistrar.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <llvm/Support/Process.h>
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

namespace jl = llvm::jitlink;

// JITLink's in-process memory manager (one mapping per linked object: its standard segments, the
// code and data that stay while the object is loaded), counting the bytes of those mappings per
// JITDylib and in total. An allocation counts from its finalization to its deallocation (when
// its JITDylib is removed).
class CountingMemoryManager final : public jl::JITLinkMemoryManager {
 public:
  explicit CountingMemoryManager(std::unique_ptr<jl::InProcessMemoryManager> inner, uint64_t page)
      : inner_(std::move(inner)), page_(page) {}

  void allocate(const jl::JITLinkDylib* jd, jl::LinkGraph& g, OnAllocatedFunction on_allocated) override {
    uint64_t bytes = 0;
    jl::BasicLayout layout(g);
    if (auto sizes = layout.getContiguousPageBasedLayoutSizes(page_)) bytes = sizes->StandardSegs;
    else llvm::consumeError(sizes.takeError());
    inner_->allocate(jd, g, [this, jd, bytes, on_allocated = std::move(on_allocated)](AllocResult r) mutable {
      if (!r) return on_allocated(r.takeError());
      on_allocated(std::make_unique<Counted>(*this, std::move(*r), jd, bytes));
    });
  }

  void deallocate(std::vector<FinalizedAlloc> allocs, OnDeallocatedFunction on_deallocated) override {
    {
      std::lock_guard<std::mutex> g(mu_);
      for (auto& a : allocs) {
        auto it = live_.find(a.getAddress().getValue());
        if (it == live_.end()) continue;
        total_ -= it->second.second;
        auto d = per_dylib_.find(it->second.first);
        if (d != per_dylib_.end() && (d->second -= it->second.second) == 0) per_dylib_.erase(d);
        live_.erase(it);
      }
    }
    inner_->deallocate(std::move(allocs), std::move(on_deallocated));
  }

  size_t total() {
    std::lock_guard<std::mutex> g(mu_);
    return total_;
  }
  size_t of(const void* jd) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = per_dylib_.find(jd);
    return it == per_dylib_.end() ? 0 : it->second;
  }

 private:
  class Counted final : public InFlightAlloc {
   public:
    Counted(CountingMemoryManager& mm, std::unique_ptr<InFlightAlloc> inner, const void* jd, uint64_t bytes)
        : mm_(mm), inner_(std::move(inner)), jd_(jd), bytes_(bytes) {}
    void abandon(OnAbandonedFunction on_abandoned) override { inner_->abandon(std::move(on_abandoned)); }
    void finalize(OnFinalizedFunction on_finalized) override {
      inner_->finalize([this, on_finalized = std::move(on_finalized)](llvm::Expected<FinalizedAlloc> f) mutable {
        if (f) mm_.count(f->getAddress().getValue(), jd_, bytes_);
        on_finalized(std::move(f));
      });
    }

   private:
    CountingMemoryManager& mm_;
    std::unique_ptr<InFlightAlloc> inner_;
    const void* jd_;
    uint64_t bytes_;
  };

  void count(uint64_t addr, const void* jd, uint64_t bytes) {
    std::lock_guard<std::mutex> g(mu_);
    live_[addr] = {jd, bytes};
    per_dylib_[jd] += bytes;
    total_ += bytes;
  }

  std::unique_ptr<jl::InProcessMemoryManager> inner_;
  uint64_t page_;
  std::mutex mu_;
  std::map<uint64_t, std::pair<const void*, size_t>> live_;  // finalized allocation -> (dylib, bytes)
  std::map<const void*, size_t> per_dylib_;
  size_t total_ = 0;
};

// Never destroyed, like the LLJIT that allocates through it.
CountingMemoryManager& memory_manager() {
  static CountingMemoryManager* mm = [] {
    const uint64_t page = llvm::sys::Process::getPageSizeEstimate();
    return new CountingMemoryManager(std::make_unique<jl::InProcessMemoryManager>(page), page);
  }();
  return *mm;
}

// The process's LLJIT. Never destroyed: executables (and their JITDylibs) may outlive any other
// static object, e.g. in caches torn down at exit.
llvm::orc::LLJIT& process_jit() {
  static llvm::orc::LLJIT* jit = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // JITLink with the counting memory manager and eh-frame registration (what LLJIT sets up
    // by default on x86-64 ELF, with our memory manager).
    auto j = llvm::orc::LLJITBuilder()
                 .setObjectLinkingLayerCreator(
                     [](llvm::orc::ExecutionSession& es,
                        const llvm::Triple&) -> llvm::Expected<std::unique_ptr<llvm::orc::ObjectLayer>> {
                       auto registrar = llvm::orc::EPCEHFrameRegistrar::Create(es);
                       if (!registrar) return registrar.takeError();
                       auto* layer = new llvm::orc::ObjectLinkingLayer(es, memory_manager());
                       std::unique_ptr<llvm::orc::ObjectLayer> owned(layer);
                       layer->addPlugin(
                           std::make_unique<llvm::orc::EHFrameRegistrationPlugin>(es, std::move(*registrar)));
                       return owned;
                     })
                 .create();
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

size_t LoadedObject::code_bytes() const {
  if (!impl_ || !impl_->dylib) return 0;
  return memory_manager().of(static_cast<const jl::JITLinkDylib*>(impl_->dylib));
}

size_t loaded_code_bytes() { return memory_manager().total(); }

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
