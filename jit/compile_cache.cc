// minijax compile caches: the in-process map from program text to executable (one generation per
// key, concurrent callers wait on it; bounded by the cache budget) and the on-disk cache of object
// code with integrity checks and a least-recently-used bound.
#include "jit/compile_cache.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "core/config.h"
#include "core/errors.h"
#include "core/views/control_flow.h"
#include "jit/pipeline.h"

namespace minijax {

namespace {

struct Slot;
using SlotMap = std::map<std::string, std::shared_ptr<Slot>>;

struct Slot {
  std::shared_ptr<const Executable> exe;
  bool ready = false;
  std::exception_ptr error;
  SlotMap::iterator at;  // its place in Cache::slots while `in_map`
  bool in_map = false;
};

struct Counters {
  size_t hits = 0, misses = 0, generated = 0, persistent_hits = 0, persistent_rejected = 0,
         persistent_evictions = 0;
};

struct Cache {
  std::mutex mu;
  std::condition_variable cv;
  SlotMap slots;
  Counters stats;
};

// Never destroyed: executables the cache still holds at exit stay loaded (their code may run
// from any static destructor, and tearing down JIT code at exit buys nothing).
Cache& cache() {
  static Cache* c = new Cache;
  return *c;
}

// The options that change the object code (part of both keys).
std::string options_key(const CompileOptions& opts) {
  std::string k = "donated:";
  for (bool d : opts.donated) k += d ? '1' : '0';
  if (opts.spmd) k += " spmd";  // collectives and axis_index call the runtime
  k += " " + opts.offload.key();  // the offload stages' tunables
  return k;
}

// Constants held by nested ClosedJaxprs are not printed with the program: a program holding any
// is keyed by their identities too (never shared with another program's constants, never stored
// on disk).
void body_const_ids(const Jaxpr& j, std::string& out) {
  auto one = [&](const ClosedJaxprPtr& cj) {
    if (!cj || !cj->jaxpr) return;
    for (const Array& c : cj->consts) out += std::to_string(reinterpret_cast<uintptr_t>(c.impl())) + ",";
    body_const_ids(*cj->jaxpr, out);
  };
  for (const Eqn& e : j.eqns)
    for (auto& [k, v] : e.params.items()) {
      if (auto* cj = std::get_if<ClosedJaxprPtr>(&v)) one(*cj);
      else if (auto* cjs = std::get_if<std::vector<ClosedJaxprPtr>>(&v))
        for (auto& c : *cjs) one(c);
    }
}

// The stable site ids of an SPMD program's collectives (Eqn::site, not printed), in pre-order: the
// executable's site table holds them, so two programs printed alike but numbered differently
// (a collective the passes removed from one) do not share it.
void site_ids(const Jaxpr& j, std::string& out) {
  for (const Eqn& e : j.eqns) {
    if (e.site >= 0) out += std::to_string(e.site) + ",";
    for (auto& [k, v] : e.params.items()) {
      if (auto* cj = std::get_if<ClosedJaxprPtr>(&v)) {
        if (*cj && (*cj)->jaxpr) site_ids(*(*cj)->jaxpr, out);
      } else if (auto* cjs = std::get_if<std::vector<ClosedJaxprPtr>>(&v)) {
        for (auto& c : *cjs)
          if (c && c->jaxpr) site_ids(*c->jaxpr, out);
      }
    }
  }
}

// The GNU build id the linker wrote into the loaded ELF object that contains address `inside`
// (hex), or "". The object is found by its PT_LOAD segments (dladdr's dli_fbase is the lowest
// mapped address, which differs from dl_iterate_phdr's load bias).
std::string elf_build_id(const void* inside) {
  struct Query {
    uintptr_t addr;
    std::string id;
  } q{reinterpret_cast<uintptr_t>(inside), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* q = static_cast<Query*>(data);
        bool contains = false;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && q->addr >= lo && q->addr < lo + ph.p_memsz) contains = true;
        }
        if (!contains) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
          const char* end = p + ph.p_memsz;
          while (p + sizeof(ElfW(Nhdr)) <= end) {
            auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
            const char* name = p + sizeof(ElfW(Nhdr));
            const char* desc = name + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
              static const char* hex = "0123456789abcdef";
              for (unsigned k = 0; k < nh->n_descsz; ++k) {
                q->id += hex[(unsigned char)desc[k] >> 4];
                q->id += hex[(unsigned char)desc[k] & 15];
              }
              return 1;
            }
            p = desc + ((nh->n_descsz + 3) & ~3u);
          }
        }
        return 1;
      },
      &q);
  return q.id;
}

// This library's build: the linker's GNU build id (a hash of the linked file, changing with every
// build of the code that generates code), else SHA-256 of the file's bytes.
const std::string& build_id() {
  static const std::string id = [] {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&build_id), &info) || !info.dli_fname) return std::string("unknown");
    if (std::string gnu = elf_build_id(reinterpret_cast<void*>(&build_id)); !gnu.empty()) return "gnu-build-id:" + gnu;
    std::ifstream in(info.dli_fname, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return "sha256:" + sha256_hex(ss.str());
  }();
  return id;
}

constexpr const char* kMagic = "minijax-executable-v1";

std::filesystem::path entry_path(const std::string& key) {
  return std::filesystem::path(config().compilation_cache_dir) / (key + ".mjx");
}

// Sets `path`'s modification time to now: the persistent cache's recency. The time is read from
// the fine-grained real-time clock, not the kernel's file-time clock (a timer tick coarse: uses
// within a few ms would tie), and is strictly increasing within this process. Errors (a
// read-only directory, a file removed meanwhile) are ignored.
void mark_used(const std::filesystem::path& path) {
  static std::mutex mu;
  static int64_t last_ns = 0;
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  int64_t ns = int64_t(now.tv_sec) * 1000000000 + now.tv_nsec;
  {
    std::lock_guard<std::mutex> g(mu);
    ns = std::max(ns, last_ns + 1);
    last_ns = ns;
  }
  const timespec t{time_t(ns / 1000000000), long(ns % 1000000000)};
  const timespec times[2] = {t, t};
  ::utimensat(AT_FDCWD, path.c_str(), times, 0);
}

// Makes room for an entry of `incoming` bytes that will replace `replaced` (when it exists): the
// least recently modified entry files of the cache directory are removed until the entries' total
// plus `incoming` is within `bound`. Returns false when `incoming` alone exceeds the bound (the
// entry is not written). Files vanishing meanwhile (another process's removal) are skipped.
bool make_room(const std::filesystem::path& dir, const std::filesystem::path& replaced, uintmax_t incoming,
               uintmax_t bound) {
  namespace fs = std::filesystem;
  if (incoming > bound) return false;
  struct File {
    fs::file_time_type used;
    uintmax_t size;
    fs::path path;
  };
  std::vector<File> files;
  uintmax_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.extension() != ".mjx" || p == replaced) continue;
    std::error_code e1, e2;
    const uintmax_t size = fs::file_size(p, e1);
    const fs::file_time_type t = fs::last_write_time(p, e2);
    if (e1 || e2) continue;  // removed meanwhile
    files.push_back({t, size, p});
    total += size;
  }
  if (total + incoming <= bound) return true;
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) { return a.used < b.used; });
  size_t removed = 0;
  for (const File& f : files) {
    if (total + incoming <= bound) break;
    std::error_code e;
    if (fs::remove(f.path, e)) ++removed;
    total -= f.size;  // gone either way (or removed by another process)
  }
  std::lock_guard<std::mutex> g(cache().mu);
  cache().stats.persistent_evictions += removed;
  return true;
}

void count_rejected() {
  std::lock_guard<std::mutex> g(cache().mu);
  ++cache().stats.persistent_rejected;
}

// The object code stored under `key`, when the file is intact and belongs to that key: the
// header (magic, the key, the size and SHA-256 of the object code) must match and the file must
// end right after the object code. A corrupt or foreign entry is counted as rejected; it is
// recompiled and overwritten.
bool load_persistent(const std::string& key, ObjectCode& obj) {
  std::ifstream in(entry_path(key), std::ios::binary);
  if (!in) return false;
  std::string magic, file_key, digest;
  size_t size = 0;
  if (!std::getline(in, magic) || magic != kMagic || !std::getline(in, file_key) || file_key != key ||
      !(in >> size) || !(in >> digest) || in.get() != '\n' || size > (size_t(1) << 34)) {
    count_rejected();
    return false;
  }
  std::string bytes(size, '\0');
  in.read(bytes.data(), std::streamsize(size));
  if (size_t(in.gcount()) != size || sha256_hex(bytes) != digest || in.peek() != std::char_traits<char>::eof()) {
    count_rejected();
    return false;
  }
  obj.bytes.assign(bytes.begin(), bytes.end());
  mark_used(entry_path(key));
  return true;
}

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

// The fusion equation (at any depth) whose kernel function `message` names (`@fusion_3`), printed
// with its scope's variable names; empty when none is named.
std::string failing_equation(const Jaxpr& j, const std::string& message) {
  for (size_t i = 0; i < j.eqns.size(); ++i) {
    const Eqn& e = j.eqns[i];
    if (CallParams::is(e) && is_fusion(*e.primitive) && call_params(e).name) {
      std::string kname = "@" + *call_params(e).name;
      for (char& c : kname)
        if (c == '.') c = '_';
      for (size_t at = message.find(kname); at != std::string::npos; at = message.find(kname, at + 1))
        if (at + kname.size() >= message.size() || !is_ident_char(message[at + kname.size()]))
          return eqn_to_string(j, i);
    }
    for (auto& [k, v] : e.params.items()) {
      std::vector<ClosedJaxprPtr> bodies;
      if (auto* cj = std::get_if<ClosedJaxprPtr>(&v)) bodies.push_back(*cj);
      else if (auto* cjs = std::get_if<std::vector<ClosedJaxprPtr>>(&v)) bodies = *cjs;
      for (auto& b : bodies)
        if (b && b->jaxpr)
          if (std::string r = failing_equation(*b->jaxpr, message); !r.empty()) return r;
    }
  }
  return "";
}

// A code generation failure with its stage and equation: `what` is what KIR translation, LLVM's
// verifier or the code generator reported.
CompileError codegen_error(const std::string& what, const Executable& exe) {
  const char* stage = what.rfind("LLVM verification", 0) == 0 ? "LLVM verification of the lowered module"
                      : what.rfind("kir:", 0) == 0            ? "lower (KIR to LLVM IR)"
                                                              : "LLVM code generation and loading";
  std::string eqn = failing_equation(exe.program, what);
  std::string after;  // the stages that ran before LLVM's: jit/pipeline.cc's table up to `lower`
  for (const Stage& s : pipeline_stages()) {
    if (s.phase == StagePhase::codegen && std::string(s.name) != "lower") break;
    after += (after.empty() ? "" : ", ") + std::string(s.name);
  }
  return CompileError("jit '" + exe.name + "': compiling failed in pass '" + stage + "' (after " + after + ")" +
                      (eqn.empty() ? std::string() : ", equation `" + eqn + "`") + ": " + what);
}

}  // namespace

std::string persistent_key(const Jaxpr& program, const CompileOptions& opts) {
  return sha256_hex(std::string(kMagic) + "\n" + to_string(program) + "\n" + options_key(opts) + "\n" +
                    build_id() + "\n" + host_target().str());
}

void store_persistent(const Executable& exe, const CompileOptions& opts, const ObjectCode& obj) {
  if (config().compilation_cache_dir.empty()) return;
  std::string const_ids;
  body_const_ids(exe.program, const_ids);
  if (!const_ids.empty()) return;  // the code belongs to these constants (see body_const_ids)
  std::error_code ec;
  std::filesystem::create_directories(config().compilation_cache_dir, ec);
  const std::string key = persistent_key(exe.program, opts);
  const std::string bytes(obj.bytes.begin(), obj.bytes.end());
  auto final_path = entry_path(key);
  auto tmp = final_path;
  // Unique per process and executable: concurrent writers never share a temporary file.
  tmp += ".tmp" + std::to_string(::getpid()) + "." + std::to_string(reinterpret_cast<uintptr_t>(&exe));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    out << kMagic << "\n" << key << "\n" << bytes.size() << " " << sha256_hex(bytes) << "\n";
    out.write(bytes.data(), std::streamsize(bytes.size()));
    if (!out) return;
  }
  if (const int64_t bound = config().compilation_cache_dir_max_bytes; bound > 0) {
    const uintmax_t size = std::filesystem::file_size(tmp, ec);
    if (ec || !make_room(config().compilation_cache_dir, final_path, size, uintmax_t(bound))) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, final_path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  else mark_used(final_path);
}

namespace {

// The bytes an executable counts toward config().compilation_cache_max_bytes: its code and data
// in ORC, its hoisted constants, its kernels' text, its LLVM IR (keep_llvm_ir) and its key.
size_t executable_bytes(const Executable& exe, const std::string& key) {
  size_t n = key.size() + exe.kernels.size() + exe.llvm_ir.size();
  if (exe.object) n += exe.object->code_bytes();
  for (const Array& c : exe.loaded.hoisted_consts) n += size_t(c.aval().nbytes());
  return n;
}

// Keeps `made` in `slot` (ready) and puts it in the cache budget; the budget's eviction takes the
// slot out of the map. Called holding c.mu.
void keep_locked(Cache& c, const std::shared_ptr<Slot>& slot, std::shared_ptr<Executable> made) {
  std::weak_ptr<Slot> weak = slot;
  made->cache_node.join("executable", executable_bytes(*made, slot->at->first), [weak] {
    std::shared_ptr<Slot> s = weak.lock();
    if (!s) return;
    std::shared_ptr<const Executable> gone;  // freed after the lock is released
    Cache& c = cache();
    std::lock_guard<std::mutex> g(c.mu);
    if (!s->in_map) return;
    c.slots.erase(s->at);
    s->in_map = false;
    gone = std::move(s->exe);
  });
  slot->exe = std::move(made);
  slot->ready = true;
}

}  // namespace

std::shared_ptr<const Executable> cached_executable(Executable exe, const CompileOptions& opts,
                                                    const CodeGenerator& generate) {
  detail::check_cache_bounds(std::source_location::current());
  Cache& c = cache();
  std::string const_ids;
  body_const_ids(exe.program, const_ids);
  // Hoisted constants are inputs (the code does not hold them), but the executable this slot
  // keeps does: keyed by their identities too.
  std::string hoisted_ids;
  for (const Array& c : exe.loaded.hoisted_consts) hoisted_ids += std::to_string(reinterpret_cast<uintptr_t>(c.impl())) + ",";
  std::string key = to_string(exe.program) + "\n" + options_key(opts) + (opts.keep_llvm_ir ? "\nir" : "") +
                    (const_ids.empty() ? "" : "\nconsts:" + const_ids) +
                    (hoisted_ids.empty() ? "" : "\nhoisted:" + hoisted_ids);
  if (opts.spmd) {
    key += "\nsites:";
    site_ids(exe.program, key);
  }
  // The disk holds object code only: no LLVM IR to show (keep_llvm_ir) and no body constants.
  const bool use_disk = !config().compilation_cache_dir.empty() && !opts.keep_llvm_ir && const_ids.empty();
  std::shared_ptr<Slot> slot;
  {
    std::unique_lock<std::mutex> g(c.mu);
    for (;;) {
      auto it = c.slots.find(key);
      if (it == c.slots.end()) {
        ++c.stats.misses;
        slot = std::make_shared<Slot>();
        slot->at = c.slots.emplace(std::move(key), slot).first;
        slot->in_map = true;
        break;
      }
      std::shared_ptr<Slot> other = it->second;
      c.cv.wait(g, [&] { return other->ready; });
      if (other->error) std::rethrow_exception(other->error);
      // Evicted (a bound, clear_caches) between being made and this waiter waking: look again,
      // which generates it anew.
      if (!other->exe) continue;
      ++c.stats.hits;
      std::shared_ptr<const Executable> found = other->exe;
      found->cache_node.touch();
      return found;
    }
  }
  std::shared_ptr<Executable> made_for_errors;
  std::shared_ptr<const Executable> result;
  try {
    auto made = std::make_shared<Executable>(std::move(exe));
    made_for_errors = made;
    ObjectCode obj;
    bool hit = use_disk && load_persistent(persistent_key(made->program, opts), obj);
    if (hit) {
      try {
        generate(*made, opts, &obj);
        std::lock_guard<std::mutex> g(c.mu);
        ++c.stats.persistent_hits;
      } catch (const std::exception&) {
        // Intact but unloadable (e.g. written by a foreign toolchain under a colliding name):
        // rejected, compiled anew and overwritten.
        count_rejected();
        hit = false;
        made->times.cache_hit = false;
      }
    }
    if (!hit) generate(*made, opts, nullptr);
    result = made;
    std::lock_guard<std::mutex> g(c.mu);
    keep_locked(c, slot, std::move(made));
    ++c.stats.generated;
  } catch (...) {
    std::exception_ptr err = std::current_exception();
    try {
      throw;
    } catch (const CompileError& e) {
      if (made_for_errors) err = std::make_exception_ptr(codegen_error(e.message(), *made_for_errors));
    } catch (...) {
    }
    std::lock_guard<std::mutex> g(c.mu);
    slot->error = err;
    slot->ready = true;
    if (slot->in_map) c.slots.erase(slot->at);  // a later call may try again
    slot->in_map = false;
    c.cv.notify_all();
    std::rethrow_exception(err);
  }
  c.cv.notify_all();
  detail::enforce_cache_budget();
  return result;
}

CompilationCacheStats compilation_cache_stats() {
  const detail::CacheBudgetTotals t = detail::cache_budget_totals();
  CompilationCacheStats s;
  {
    Cache& c = cache();
    std::lock_guard<std::mutex> g(c.mu);
    s.hits = c.stats.hits;
    s.misses = c.stats.misses;
    s.generated = c.stats.generated;
    s.persistent_hits = c.stats.persistent_hits;
    s.persistent_rejected = c.stats.persistent_rejected;
    s.persistent_evictions = c.stats.persistent_evictions;
  }
  s.entries = t.executables;
  s.bytes = t.executable_bytes;
  s.trace_entries = t.entries - t.executables;
  s.evictions = t.executable_evictions;
  s.all_evictions = t.evictions;
  s.code_bytes = loaded_code_bytes();
  return s;
}

void clear_caches() { detail::evict_all_cache_entries(); }

}  // namespace minijax
