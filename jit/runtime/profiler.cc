// minijax profiler recorder: per-thread event buffers, thread tracks and their names, the trace
// session (start_trace / stop_trace), the Chrome trace-event JSON writer and the kernel hooks.
#include "jit/runtime/profiler.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>

#include "core/errors.h"

namespace minijax::profiler {

namespace detail {
std::atomic<bool> g_tracing{false};
}  // namespace detail

namespace {

using detail::KernelSite;

constexpr int64_t kMaxEvents = 4'000'000;

struct Rec {
  int64_t begin = 0, end = 0;
  const char* cat = "";
  std::string name, args;
  uint64_t session = 0;
};

// One thread's track: its events (under its own mutex, so threads never contend while
// recording) and its name.
struct Track {
  std::mutex mu;
  std::vector<Rec> recs;
  int tid = 0;
  std::string name;  // under Recorder::mu
  int sort_index = 0;
};

struct Recorder {
  std::mutex mu;  // the tracks' list and names, the session's state, the file
  std::vector<std::shared_ptr<Track>> tracks;
  int unnamed = 0;
  std::atomic<uint64_t> session{0};
  std::atomic<int64_t> recorded{0}, dropped{0};
  int64_t t0 = 0;
  std::string path;
  std::FILE* file = nullptr;
};

Recorder& recorder() {
  static auto* r = new Recorder();  // leaked: threads may record while the process exits
  return *r;
}

thread_local std::shared_ptr<Track> tls_track;

Track& this_thread_track() {
  if (tls_track) return *tls_track;
  auto t = std::make_shared<Track>();
  Recorder& r = recorder();
  std::lock_guard<std::mutex> g(r.mu);
  t->tid = int(r.tracks.size()) + 1;
  if (gettid() == getpid()) {
    t->name = "main thread";
  } else {
    t->name = "host thread " + std::to_string(r.unnamed++);
    t->sort_index = 1;
  }
  r.tracks.push_back(t);
  tls_track = t;
  return *t;
}

// The kernel sites of the program this thread runs, and the begin of the kernel it is in.
thread_local const std::vector<KernelSite>* tls_sites = nullptr;
thread_local int64_t tls_kernel_begin = -1;

// Microseconds with three decimals, exactly, from integer nanoseconds.
void put_us(std::string& out, int64_t ns) {
  char buf[32];
  if (ns < 0) {
    out += '-';
    ns = -ns;
  }
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
  out += buf;
}

void put_metadata(std::vector<std::string>& items, int pid, const Track& t) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "\"pid\":%d,\"tid\":%d", pid, t.tid);
  items.push_back("{\"ph\":\"M\",\"name\":\"thread_name\"," + std::string(buf) + ",\"args\":{\"name\":" +
                  detail::json_string(t.name) + "}}");
  items.push_back("{\"ph\":\"M\",\"name\":\"thread_sort_index\"," + std::string(buf) +
                  ",\"args\":{\"sort_index\":" + std::to_string(t.sort_index) + "}}");
}

std::string event_json(int pid, int tid, int64_t t0, const Rec& e) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":", pid, tid);
  std::string out = buf;
  put_us(out, e.begin - t0);
  out += ",\"dur\":";
  put_us(out, e.end - e.begin);
  out += ",\"cat\":" + detail::json_string(e.cat) + ",\"name\":" + detail::json_string(e.name) + ",\"args\":{" +
         e.args + "}}";
  return out;
}

struct Collected {
  int tid;
  Rec rec;
};

// The session's events of every track (taken out of the buffers), ordered by begin, enclosing
// events before the events they contain; and the tracks to name. Under Recorder::mu.
std::vector<Collected> collect(Recorder& r, uint64_t session, std::vector<std::shared_ptr<Track>>& named) {
  std::vector<Collected> all;
  for (auto& t : r.tracks) {
    std::vector<Rec> recs;
    {
      std::lock_guard<std::mutex> g(t->mu);
      recs.swap(t->recs);
    }
    bool any = false;
    for (Rec& e : recs)
      if (e.session == session && e.begin >= r.t0 && e.end >= e.begin) {
        all.push_back({t->tid, std::move(e)});
        any = true;
      }
    // Runtime threads (named, sort index >= 10) get a track even when idle: one per device,
    // copy engine and communicator that exists.
    if (any || t->sort_index >= 10) named.push_back(t);
  }
  std::stable_sort(all.begin(), all.end(), [](const Collected& a, const Collected& b) {
    if (a.rec.begin != b.rec.begin) return a.rec.begin < b.rec.begin;
    return a.rec.end > b.rec.end;
  });
  return all;
}

std::string trace_json(Recorder& r, uint64_t session) {
  std::vector<std::shared_ptr<Track>> named;
  std::vector<Collected> events = collect(r, session, named);
  const int pid = int(getpid());
  std::vector<std::string> items;
  items.push_back("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid) +
                  ",\"args\":{\"name\":\"minijax\"}}");
  for (auto& t : named) put_metadata(items, pid, *t);
  for (auto& e : events) items.push_back(event_json(pid, e.tid, r.t0, e.rec));
  std::string out = "{\"traceEvents\":[\n";
  for (size_t i = 0; i < items.size(); ++i) out += items[i] + (i + 1 < items.size() ? ",\n" : "\n");
  out += "],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"producer\":\"minijax profiler\",\"events\":" +
         std::to_string(events.size()) + ",\"dropped_events\":" + std::to_string(r.dropped.load()) + "}}\n";
  return out;
}

}  // namespace

// ---- hooks (core/profiler_hooks.h) --------------------------------------------------------------

namespace detail {

void Args::key(std::string_view k) {
  if (!s_.empty()) s_ += ',';
  s_ += json_string(k);
  s_ += ':';
}
Args& Args::add(std::string_view k, int64_t v) {
  key(k);
  s_ += std::to_string(v);
  return *this;
}
Args& Args::add(std::string_view k, double v) {
  key(k);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  s_ += std::isfinite(v) ? buf : "null";
  return *this;
}
Args& Args::add(std::string_view k, bool v) {
  key(k);
  s_ += v ? "true" : "false";
  return *this;
}
Args& Args::add(std::string_view k, std::string_view v) {
  key(k);
  s_ += json_string(v);
  return *this;
}
Args& Args::add_raw(std::string_view k, std::string_view json) {
  key(k);
  s_ += json;
  return *this;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void record(const char* cat, std::string name, int64_t begin_ns, int64_t end_ns, std::string args) noexcept {
  if (!tracing()) return;
  Recorder& r = recorder();
  try {
    if (r.recorded.fetch_add(1, std::memory_order_relaxed) >= kMaxEvents) {
      r.dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    Track& t = this_thread_track();
    Rec e{begin_ns, end_ns, cat, std::move(name), std::move(args), r.session.load(std::memory_order_acquire)};
    std::lock_guard<std::mutex> g(t.mu);
    t.recs.push_back(std::move(e));
  } catch (...) {
    r.dropped.fetch_add(1, std::memory_order_relaxed);
  }
}

int this_track() noexcept {
  try {
    return this_thread_track().tid;
  } catch (...) {
    return 0;
  }
}

void name_this_thread(std::string name, int sort_index) noexcept {
  try {
    Track& t = this_thread_track();
    std::lock_guard<std::mutex> g(recorder().mu);
    t.name = std::move(name);
    t.sort_index = sort_index;
  } catch (...) {
  }
}

KernelSitesScope::KernelSitesScope(const std::vector<KernelSite>* sites) noexcept : previous_(tls_sites) {
  tls_sites = sites;
}
KernelSitesScope::~KernelSitesScope() { tls_sites = previous_; }

}  // namespace detail

// ---- the public API ---------------------------------------------------------------------------

void start_trace(const std::string& path, std::source_location loc) {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> g(r.mu);
  if (detail::tracing())
    throw ValueError("profiler::start_trace('" + path + "'): a trace to '" + r.path +
                     "' is already being recorded (call profiler::stop_trace first)",
                     loc);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f)
    throw IOError("profiler::start_trace: cannot open the trace file '" + path + "' for writing: " +
                      std::strerror(errno),
                  loc);
  r.file = f;
  r.path = path;
  for (auto& t : r.tracks) {
    std::lock_guard<std::mutex> tg(t->mu);
    t->recs.clear();
  }
  r.recorded = 0;
  r.dropped = 0;
  r.session.fetch_add(1, std::memory_order_acq_rel);
  r.t0 = detail::now_ns();
  detail::g_tracing.store(true, std::memory_order_release);
}

void stop_trace(std::source_location loc) {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> g(r.mu);
  if (!detail::tracing())
    throw ValueError("profiler::stop_trace: no trace is being recorded (profiler::start_trace was not called, or "
                     "this trace was stopped already)",
                     loc);
  detail::g_tracing.store(false, std::memory_order_release);
  std::FILE* f = r.file;
  r.file = nullptr;
  std::string json;
  try {
    json = trace_json(r, r.session.load());
  } catch (...) {
    std::fclose(f);
    throw;
  }
  const bool wrote = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  const int err = errno;
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed)
    throw IOError("profiler::stop_trace: cannot write the trace file '" + r.path + "' (" +
                      std::to_string(json.size()) + " B): " + std::strerror(wrote ? errno : err),
                  loc);
}

bool is_tracing() { return detail::tracing(); }

TraceAnnotation::TraceAnnotation(std::string_view name) {
  if (!detail::tracing()) return;
  name_ = name;
  begin_ns_ = detail::now_ns();
}

TraceAnnotation::~TraceAnnotation() {
  if (begin_ns_ >= 0) detail::record("user", std::move(name_), begin_ns_, detail::now_ns());
}

}  // namespace minijax::profiler

// ---- kernel hooks (compiled code) ---------------------------------------------------------------

extern "C" void mj_rt_kernel_begin(int32_t site) {
  using namespace minijax::profiler;
  if (!detail::tracing()) return;
  tls_kernel_begin = detail::now_ns();
}

// With no trace active neither hook touches thread-local state (in a shared library that is a
// __tls_get_addr call): each is one relaxed atomic load. A begin left from an earlier trace is
// older than the current trace's start, so its event is dropped when the trace is written.
extern "C" void mj_rt_kernel_end(int32_t site) {
  using namespace minijax::profiler;
  if (!detail::tracing() || tls_kernel_begin < 0) return;
  const int64_t begin = tls_kernel_begin, end = detail::now_ns();
  tls_kernel_begin = -1;
  try {
    const auto* sites = tls_sites;
    if (sites && site >= 0 && size_t(site) < sites->size()) {
      const detail::KernelSite& s = (*sites)[size_t(site)];
      detail::record("kernel", s.name, begin, end, s.args);
    } else {
      detail::record("kernel", "kernel " + std::to_string(site), begin, end, "\"site\":" + std::to_string(site));
    }
  } catch (...) {
  }
}
