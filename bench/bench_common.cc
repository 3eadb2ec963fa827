// minijax bench: the shared helpers of bench/bench_common.h — environment record, statistics,
// JSON, the memcpy and dnnl_sgemm floors, the GEMM list of a compiled program, argument parsing.
#include "core/lax_params.h"
#include "core/views/control_flow.h"
#include "core/bodies.h"
#include "bench/bench_common.h"

#include <sched.h>
#include <time.h>

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

#include "core/errors.h"
#include "core/lax.h"
#include "core/params.h"
#include "core/primitive.h"
#include "jit/runtime/gemm.h"

#ifndef MINIJAX_SOURCE_DIR
#define MINIJAX_SOURCE_DIR "."
#endif

namespace mjbench {

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  if (!(f >> a >> b >> c)) return "unknown";
  return a + " " + b + " " + c;
}

Stats stats(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.n = n;
  s.min = v.front();
  s.max = v.back();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  auto rank = [&](double q) { return v[std::min(n - 1, size_t(q * double(n - 1) + 0.5))]; };
  s.p10 = rank(0.1);
  s.p90 = rank(0.9);
  return s;
}

std::vector<double> time_calls(int warmup, int reps, const std::function<void()>& f) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  t.reserve(size_t(reps));
  for (int i = 0; i < reps; ++i) {
    auto t0 = clock_type::now();
    f();
    t.push_back(seconds_since(t0));
  }
  return t;
}

std::vector<Stats> interleaved(const std::vector<std::function<void()>>& fns, int warmup, int reps) {
  std::vector<std::vector<double>> s(fns.size());
  for (int rep = -warmup; rep < reps; ++rep)
    for (size_t f = 0; f < fns.size(); ++f) {
      const double t = time_calls(0, 1, fns[f])[0];
      if (rep >= 0) s[f].push_back(t);
    }
  std::vector<Stats> r;
  for (auto& x : s) r.push_back(stats(x));
  return r;
}


// ---- JSON ----------------------------------------------------------------------------------------

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
      o += buf;
    } else o += c;
  }
  return o + "\"";
}

void Json::key(const std::string& k) {
  if (!body_.empty()) body_ += ", ";
  body_ += json_string(k) + ": ";
}

Json& Json::num(const std::string& k, double v) {
  key(k);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  body_ += buf;
  return *this;
}

Json& Json::integer(const std::string& k, int64_t v) {
  key(k);
  body_ += std::to_string(v);
  return *this;
}

Json& Json::str(const std::string& k, const std::string& v) {
  key(k);
  body_ += json_string(v);
  return *this;
}

Json& Json::boolean(const std::string& k, bool v) {
  key(k);
  body_ += v ? "true" : "false";
  return *this;
}

Json& Json::raw(const std::string& k, const std::string& json) {
  key(k);
  body_ += json;
  return *this;
}

Json& Json::stats_ms(const std::string& k, const Stats& s) {
  Json o;
  o.num("median_ms", s.median * 1e3).num("min_ms", s.min * 1e3).num("max_ms", s.max * 1e3);
  o.num("p10_ms", s.p10 * 1e3).num("p90_ms", s.p90 * 1e3).integer("n", int64_t(s.n));
  return raw(k, o.text());
}

// ---- environment ---------------------------------------------------------------------------------

namespace {

std::string now_iso() {
  char buf[64];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
  return buf;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) return line.substr(line.find_first_not_of(" \t", p + 1));
    }
  return "unknown";
}

std::string run_command(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    if (pclose(p) != 0) return "";
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string git_commit() {
  if (const char* g = std::getenv("MINIJAX_BENCH_GIT")) return g;
  const std::string dir = MINIJAX_SOURCE_DIR;
  std::string h = run_command("git -C '" + dir + "' rev-parse --short HEAD 2>/dev/null");
  if (h.empty()) return "unknown";
  if (!run_command("git -C '" + dir + "' status --porcelain --untracked-files=no 2>/dev/null").empty())
    h += "-dirty";
  return h;
}

// This process's scheduling policy: "SCHED_OTHER nice 0", "SCHED_FIFO 10", ...
std::string sched_policy() {
  const int p = sched_getscheduler(0);
  sched_param sp{};
  sched_getparam(0, &sp);
  switch (p) {
    case SCHED_FIFO: return "SCHED_FIFO " + std::to_string(sp.sched_priority);
    case SCHED_RR: return "SCHED_RR " + std::to_string(sp.sched_priority);
    case SCHED_OTHER: return "SCHED_OTHER";
    case SCHED_BATCH: return "SCHED_BATCH";
    case SCHED_IDLE: return "SCHED_IDLE";
    default: return "policy " + std::to_string(p);
  }
}

void env_or_null(Json& j, const char* name) {
  if (const char* v = std::getenv(name)) j.str(name, v);
  else j.raw(name, "null");
}

}  // namespace

Environment::Environment() : date_(now_iso()), load_before_(loadavg()) {}

void Environment::add_to(Json& j) const {
  Json e;
  e.str("date", date_).str("cpu", cpu_model());
  cpu_set_t set;
  CPU_ZERO(&set);
  int affinity = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
  e.integer("cpus_online", int64_t(std::thread::hardware_concurrency())).integer("cpus_affinity", affinity);
  e.str("loadavg_before", load_before_).str("loadavg_after", loadavg());
  env_or_null(e, "OMP_WAIT_POLICY");
  env_or_null(e, "OMP_NUM_THREADS");
  env_or_null(e, "OPENBLAS_CORETYPE");
  env_or_null(e, "MINIJAX_BENCH_LABEL");
  e.str("sched", sched_policy());
  e.str("git", git_commit());
  j.raw("env", e.text());
}

// ---- memcpy floor --------------------------------------------------------------------------------

std::vector<double> time_memcpy_2threads(size_t bytes, int warmup, int reps, bool evict) {
  std::vector<char> src(bytes), dst(bytes), flush(evict ? size_t(96) << 20 : 0);
  std::memset(src.data(), 1, bytes);  // fault every page of both before timing
  std::memset(dst.data(), 2, bytes);
  const size_t half = bytes / 2;
  std::mutex mu;
  std::condition_variable cv;
  int64_t issued = 0, done = 0;
  bool quit = false;
  std::thread helper([&] {
    int64_t seen = 0;
    for (;;) {
      std::unique_lock<std::mutex> g(mu);
      cv.wait(g, [&] { return quit || issued > seen; });
      if (quit) return;
      seen = issued;
      g.unlock();
      std::memcpy(dst.data() + half, src.data() + half, bytes - half);
      g.lock();
      ++done;
      cv.notify_all();
    }
  });
  auto one = [&] {
    {
      std::lock_guard<std::mutex> g(mu);
      ++issued;
    }
    cv.notify_all();
    std::memcpy(dst.data(), src.data(), half);
    std::unique_lock<std::mutex> g(mu);
    cv.wait(g, [&] { return done == issued; });
  };
  std::vector<double> t;
  for (int i = 0; i < warmup; ++i) one();
  for (int i = 0; i < reps; ++i) {
    if (evict) std::memset(flush.data(), i & 0xff, flush.size());  // pushes src and dst out of the caches
    auto t0 = clock_type::now();
    one();
    t.push_back(seconds_since(t0));
  }
  {
    std::lock_guard<std::mutex> g(mu);
    quit = true;
  }
  cv.notify_all();
  helper.join();
  return t;
}

// ---- GEMM floor ----------------------------------------------------------------------------------

namespace {

void collect(const minijax::Jaxpr& j, int64_t repeat, const std::string& where, std::vector<GemmCall>& out) {
  for (const minijax::Eqn& e : j.eqns) {
    const std::string& name = e.primitive->name;
    if (name == "dot_general") {
      const auto& ls = minijax::atom_aval(e.inputs[0]).shape;
      const auto& rs = minijax::atom_aval(e.inputs[1]).shape;
      auto g = minijax::gemm_layout(ls, rs, minijax::lax::dot_dimension_numbers(e.params));
      if (!g) throw minijax::ValueError("program_gemms: a dot_general without a GEMM layout");
      out.push_back({*g, repeat, where});
      continue;
    }
    if (name == "scan") {
      const int64_t length = minijax::scan_params(e).length;
      collect(*minijax::subjaxprs(e).at(0).jaxpr->jaxpr, repeat * length,
              where + (where.empty() ? "" : " > ") + "scan(" + std::to_string(length) + ")", out);
      continue;
    }
    const std::string inner = where + (where.empty() ? "" : " > ") + name;
    for (const auto& [k, v] : e.params.items()) {
      if (auto* one = std::get_if<minijax::ClosedJaxprPtr>(&v)) collect(*(*one)->jaxpr, repeat, inner, out);
      else if (auto* many = std::get_if<std::vector<minijax::ClosedJaxprPtr>>(&v))
        for (const auto& b : *many) collect(*b->jaxpr, repeat, inner, out);
    }
  }
}

}  // namespace

std::vector<GemmCall> program_gemms(const minijax::Jaxpr& program) {
  std::vector<GemmCall> out;
  collect(program, 1, "", out);
  for (auto& c : out)
    if (c.where.empty()) c.where = "top level";
  return out;
}

std::string gemms_json(const std::vector<GemmCall>& calls) {
  std::string s = "[";
  for (size_t i = 0; i < calls.size(); ++i) {
    const auto& g = calls[i].layout;
    Json o;
    o.integer("m", g.m).integer("n", g.n).integer("k", g.k).integer("batch", g.batch);
    o.str("ta", g.trans_a ? "T" : "N").str("tb", g.trans_b ? "T" : "N").integer("repeat", calls[i].repeat);
    o.str("where", calls[i].where);
    s += (i ? ", " : "") + o.text();
  }
  return s + "]";
}

namespace {

// Operand buffers of one GEMM call, sized from its layout.
struct GemmBufs {
  std::vector<float> a, b, c;
  int64_t sa = 0, sb = 0;
  explicit GemmBufs(const minijax::GemmLayout& g) {
    const int64_t a_rows = g.trans_a ? g.k : g.m, b_rows = g.trans_b ? g.n : g.k;
    sa = std::max(g.stride_a, a_rows * g.lda);
    sb = std::max(g.stride_b, b_rows * g.ldb);
    auto fill = [](std::vector<float>& v, int64_t n) {
      v.resize(size_t(n));
      for (size_t i = 0; i < v.size(); ++i) v[i] = float(i % 13) * 0.01f;
    };
    fill(a, sa * g.batch);
    fill(b, sb * g.batch);
    fill(c, g.m * g.n * g.batch);
  }
};

void run_gemm(const GemmCall& call, GemmBufs& m, GemmImpl impl) {
  const auto& g = call.layout;
  const char ta = g.trans_a ? 'T' : 'N', tb = g.trans_b ? 'T' : 'N';
  for (int64_t r = 0; r < call.repeat; ++r)
    for (int64_t bi = 0; bi < g.batch; ++bi) {
      const float* a = m.a.data() + bi * m.sa;
      const float* b = m.b.data() + bi * m.sb;
      float* c = m.c.data() + bi * g.m * g.n;
      if (impl == GemmImpl::minijax_runtime) {
        minijax::runtime_gemm(ta, tb, g.m, g.n, g.k, a, g.lda, b, g.ldb, c, g.n);
      } else if (dnnl_sgemm(ta, tb, g.m, g.n, g.k, 1.0f, a, g.lda, b, g.ldb, 0.0f, c, g.n) != dnnl_success) {
        throw minijax::ValueError("time_gemms: dnnl_sgemm failed");
      }
    }
}

// Runs f with OpenMP limited to one thread when impl says so.
template <class F>
auto with_threads(GemmImpl impl, F&& f) {
  const int prev = omp_get_max_threads();
  if (impl == GemmImpl::dnnl_one_thread) omp_set_num_threads(1);
  auto r = f();
  if (impl == GemmImpl::dnnl_one_thread) omp_set_num_threads(prev);
  return r;
}

}  // namespace

std::vector<double> time_gemms(const std::vector<GemmCall>& calls, int warmup, int reps, GemmImpl impl) {
  std::vector<GemmBufs> bufs;
  for (const auto& c : calls) bufs.emplace_back(c.layout);
  return with_threads(impl, [&] {
    return time_calls(warmup, reps, [&] {
      for (size_t i = 0; i < calls.size(); ++i) run_gemm(calls[i], bufs[i], impl);
    });
  });
}

std::string gemm_breakdown_json(const std::vector<GemmCall>& calls, int warmup, int reps) {
  std::string s = "[";
  for (size_t i = 0; i < calls.size(); ++i) {
    const auto& g = calls[i].layout;
    GemmBufs bufs(g);
    Json o;
    o.integer("m", g.m).integer("n", g.n).integer("k", g.k).integer("batch", g.batch);
    o.str("ta", g.trans_a ? "T" : "N").str("tb", g.trans_b ? "T" : "N").integer("repeat", calls[i].repeat);
    const std::pair<const char*, GemmImpl> impls[] = {{"dnnl_threads_ms", GemmImpl::dnnl_library_threads},
                                                       {"dnnl_1thread_ms", GemmImpl::dnnl_one_thread},
                                                       {"minijax_runtime_ms", GemmImpl::minijax_runtime}};
    for (const auto& [key, impl] : impls) {
      auto t = with_threads(impl, [&] {
        return time_calls(warmup, reps, [&] { run_gemm(calls[i], bufs, impl); });
      });
      o.num(key, stats(t).median * 1e3);
    }
    s += (i ? ", " : "") + o.text();
  }
  return s + "]";
}

// ---- arguments -----------------------------------------------------------------------------------

Args::Args(int argc, char** argv, std::string usage) : usage_(std::move(usage)) {
  for (int i = 1; i < argc; ++i) args_.push_back(argv[i]);
  used_.assign(args_.size(), false);
  for (auto& a : args_)
    if (a == "-h" || a == "--help") {
      std::printf("%s\n", usage_.c_str());
      std::exit(0);
    }
}

std::string Args::string(const std::string& name, const std::string& def) {
  for (size_t i = 0; i + 1 < args_.size(); ++i)
    if (!used_[i] && args_[i] == "--" + name) {
      used_[i] = used_[i + 1] = true;
      return args_[i + 1];
    }
  return def;
}

int Args::integer(const std::string& name, int def) {
  std::string v = string(name, "");
  if (v.empty()) return def;
  char* end = nullptr;
  long x = std::strtol(v.c_str(), &end, 10);
  if (*end) {
    std::fprintf(stderr, "--%s takes an integer, got '%s'\n%s\n", name.c_str(), v.c_str(), usage_.c_str());
    std::exit(2);
  }
  return int(x);
}

bool Args::flag(const std::string& name) {
  for (size_t i = 0; i < args_.size(); ++i)
    if (!used_[i] && args_[i] == "--" + name) return used_[i] = true;
  return false;
}

std::string Args::positional(const std::string& def) {
  for (size_t i = 0; i < args_.size(); ++i)
    if (!used_[i] && args_[i].rfind("--", 0) != 0) {
      used_[i] = true;
      return args_[i];
    }
  return def;
}

void Args::check() {
  for (size_t i = 0; i < args_.size(); ++i)
    if (!used_[i]) {
      std::fprintf(stderr, "unknown argument '%s'\n%s\n", args_[i].c_str(), usage_.c_str());
      std::exit(2);
    }
}

}  // namespace mjbench
