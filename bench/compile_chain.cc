// minijax bench: the chain case of minijax_bench_compile — per chain of
// transcendental links, the cold compile time in a fresh process with the persistent cache off.
//
// Chains (one fused loop kernel over f32[4096] each): "sin": N links y = sin(y) * 0.999 + 0.001;
// "mixed": N links y = f(y) * 0.999 + 0.001 with f cycling through sin, cos, tan, exp, log, log1p,
// expm1, tanh, logistic, erf and issue 29's sinh, cosh, asin, acos, atan, asinh, acosh, atanh, cbrt,
// erfc, lgamma, digamma, polygamma(1, .), igamma(y, y), igamma_grad_a(y, y) (50 links: two or three of each; only compile time
// counts, so values need not stay finite); `chain-one --chain F` with F one of those names chains F alone
// (a diagnostic: the compile time one function costs). Cases: (a) sin 50, (b) mixed 50, (c) sin 5, 25, 50, 100, 200, 400, and mixed 100 for
// the mixed chain's marginal cost. Each case runs `--runs` times (3), rounds interleaved,
// every run a new process `minijax_bench_compile chain-one --chain C --links N` that traces
// (jit.lower) and compiles (Lowered::compile) once: cold = trace + compile, nothing cached.
// Targets (bench/README.md): (a), (b) <= 200 ms; marginal cost of a link <= 3 ms (sin: the
// least-squares slope of the medians over (c); mixed: (T(100) - T(50)) / 50); T(400)/T(50) <= 9.
#include "bench/compile_chain.h"

#include <unistd.h>

#include <time.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <vector>

#include "core/config.h"
#include "core/errors.h"
#include "core/lax.h"
#include "jit/jit.h"
#include "minijax/minijax.h"

namespace mjbench {

namespace {

namespace lax = mj::lax;

using Fn1 = mj::Array (*)(const mj::Array&, std::source_location);

// polygamma(1, y) (trigamma) as a one-operand link.
mj::Array polygamma1(const mj::Array& x, std::source_location loc) { return lax::polygamma(1, x, loc); }
// igamma and igamma_grad_a as links: f(y) = igamma(y, y) (binary; only compile time counts).
mj::Array igamma_link(const mj::Array& y, std::source_location loc) { return lax::igamma(y, y, loc); }
mj::Array igamma_grad_a_link(const mj::Array& y, std::source_location loc) {
  return lax::igamma_grad_a(y, y, loc);
}

// The mixed chain's functions, in their cycling order.
const std::vector<std::pair<const char*, Fn1>>& mixed_fns() {
  static const std::vector<std::pair<const char*, Fn1>> fs = {
      {"sin", &lax::sin},           {"cos", &lax::cos},     {"tan", &lax::tan},     {"exp", &lax::exp},
      {"log", &lax::log},           {"log1p", &lax::log1p}, {"expm1", &lax::expm1}, {"tanh", &lax::tanh},
      {"logistic", &lax::logistic}, {"erf", &lax::erf},     {"sinh", &lax::sinh},   {"cosh", &lax::cosh},
      {"asin", &lax::asin},         {"acos", &lax::acos},   {"atan", &lax::atan},   {"asinh", &lax::asinh},
      {"acosh", &lax::acosh},       {"atanh", &lax::atanh}, {"cbrt", &lax::cbrt},   {"erfc", &lax::erfc},
      {"lgamma", &lax::lgamma},     {"digamma", &lax::digamma}, {"polygamma1", &polygamma1},
      {"igamma", &igamma_link},     {"igamma_grad_a", &igamma_grad_a_link}};
  return fs;
}

// The function of a one-function chain ("sin", or any name of the mixed list); nullptr for none.
Fn1 one_fn(const std::string& name) {
  for (const auto& [n, f] : mixed_fns())
    if (name == n) return f;
  return nullptr;
}

mj::Array chain_fn(const std::string& chain, int links, const mj::Array& x) {
  const mj::Array a = lax::scalar(0.999, mj::f32), c = lax::scalar(0.001, mj::f32);
  mj::Array y = x;
  for (int i = 0; i < links; ++i) {
    Fn1 f = chain == "mixed" ? mixed_fns()[size_t(i) % mixed_fns().size()].second : one_fn(chain);
    y = lax::add(lax::mul(f(y, std::source_location::current()), a), c);
  }
  return y;
}

std::string self_path() {
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) throw minijax::ValueError("cannot find this program's path (/proc/self/exe)");
  self[len] = 0;
  return self;
}

// The number after "key": in a one-line JSON object (NaN when absent).
double field(const std::string& json, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  size_t p = json.find(k);
  return p == std::string::npos ? NAN : std::strtod(json.c_str() + p + k.size(), nullptr);
}

struct Case {
  std::string chain;
  int links;
  std::vector<std::string> runs;  // each child's JSON line
};

// Runs one child process and returns its JSON line (ValueError when it fails).
std::string run_child(const std::string& self, const Case& c) {
  const std::string cmd = "'" + self + "' chain-one --chain " + c.chain + " --links " + std::to_string(c.links);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw minijax::ValueError("cannot run " + cmd);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int rc = pclose(p);
  if (rc != 0 || out.find("\"cold_ms\":") == std::string::npos)
    throw minijax::ValueError("chain child failed (status " + std::to_string(rc) + "): " + cmd);
  return out.substr(0, out.find('\n'));
}

double median_of(const Case& c, const std::string& key) {
  std::vector<double> v;
  for (auto& r : c.runs) v.push_back(field(r, key) * 1e-3);
  return stats(v).median * 1e3;
}

// The least-squares slope of y over x.
double slope(const std::vector<double>& x, const std::vector<double>& y) {
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i], my += y[i];
  mx /= double(x.size());
  my /= double(y.size());
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < x.size(); ++i) sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx);
  return sxx > 0 ? sxy / sxx : NAN;
}

}  // namespace

int run_chain_one(const std::string& chain, int links, Environment& env) {
  if (chain != "mixed" && !one_fn(chain))
    throw minijax::ValueError("chain-one: unknown chain '" + chain + "' (mixed, or one function of the mixed list)");
  if (links < 1) throw minijax::ValueError("chain-one: --links must be >= 1, got " + std::to_string(links));
  mj::config().compilation_cache_dir.clear();  // cold: no disk hit
  mj::Array x = mj::full({4096}, 0.5, mj::f32);
  auto jf = mj::jit([chain, links](const mj::Array& v) { return chain_fn(chain, links, v); },
                    mj::JitOptions{.name = chain + "_chain"});
  timespec c0{}, c1{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  auto t0 = clock_type::now();
  auto lowered = jf.lower(x);
  const double trace = seconds_since(t0);
  t0 = clock_type::now();
  auto compiled = lowered.compile();
  const double compile = seconds_since(t0);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  const double cpu = double(c1.tv_sec - c0.tv_sec) + 1e-9 * double(c1.tv_nsec - c0.tv_nsec);
  const auto& exe = *compiled.executable();
  int64_t fusions = 0;
  for (const auto& e : exe.program.eqns) fusions += e.primitive->name == "fusion";
  t0 = clock_type::now();
  mj::Array y = compiled(x);
  mj::block_until_ready(y);
  const double run = seconds_since(t0);
  std::vector<double> again;  // the compiled code's own speed: 10 more calls
  for (int r = 0; r < 10; ++r) {
    t0 = clock_type::now();
    mj::block_until_ready(compiled(x));
    again.push_back(seconds_since(t0));
  }
  const auto& t = exe.times;
  Json j;
  j.str("name", "compile").str("mode", "chain-one").str("chain", chain).integer("links", links);
  j.num("trace_ms", trace * 1e3).num("compile_ms", compile * 1e3).num("cold_ms", (trace + compile) * 1e3);
  j.num("cold_cpu_ms", cpu * 1e3);
  j.num("passes_ms", t.passes * 1e3).num("lower_ms", t.lower * 1e3).num("translate_ms", t.translate * 1e3);
  j.num("optimize_ms", t.optimize * 1e3).num("codegen_ms", t.codegen * 1e3).num("load_ms", t.load * 1e3);
  j.integer("top_level_fusions", fusions).integer("kernel_ir_chars", int64_t(exe.kernels.size()));
  j.num("first_run_ms", run * 1e3).num("run_ms_median", stats(again).median * 1e3);
  const double y0 = double(y.data<float>()[0]);  // the mixed chain's value may be NaN: null
  if (std::isfinite(y0)) j.num("y0", y0);
  else j.raw("y0", "null");
  env.add_to(j);
  std::printf("%s\n", j.text().c_str());
  return 0;
}

int run_chain(int runs, int max_links, Environment& env) {
  if (runs < 1) throw minijax::ValueError("chain: --runs must be >= 1, got " + std::to_string(runs));
  std::vector<Case> cases;
  for (int n : {5, 25, 50, 100, 200, 400})
    if (n <= max_links) cases.push_back({"sin", n, {}});
  for (int n : {50, 100})
    if (n <= max_links) cases.push_back({"mixed", n, {}});
  const std::string self = self_path();
  for (int r = 0; r < runs; ++r)  // rounds interleaved: a burst of load spreads over the cases
    for (auto& c : cases) c.runs.push_back(run_child(self, c));
  Json j;
  j.str("name", "compile").str("mode", "chain").integer("runs", runs);
  // A figure whose case was skipped (--max-links) is null.
  auto num = [&j](const std::string& k, double v) -> Json& { return std::isnan(v) ? j.raw(k, "null") : j.num(k, v); };
  std::string arr = "[";
  std::map<std::pair<std::string, int>, double> med;
  std::vector<double> sx, sy;
  std::map<std::string, double> cpu_med;  // chain -> median CPU ms of its 50-link case
  for (auto& c : cases) {
    Json e;
    e.str("chain", c.chain).integer("links", c.links);
    std::vector<double> cold;
    for (auto& r : c.runs) cold.push_back(field(r, "cold_ms") * 1e-3);
    Stats s = stats(cold);
    e.stats_ms("cold", s);
    for (const char* k : {"cold_cpu_ms", "trace_ms", "passes_ms", "lower_ms", "translate_ms", "optimize_ms", "codegen_ms", "load_ms"})
      e.num(std::string("median_") + k, median_of(c, k));
    e.num("top_level_fusions", field(c.runs[0], "top_level_fusions"));
    arr += (arr.size() > 1 ? "," : "") + e.text();
    med[{c.chain, c.links}] = s.median * 1e3;
    if (c.chain == "sin") sx.push_back(c.links), sy.push_back(s.median * 1e3);
    if (c.links == 50) cpu_med[c.chain] = median_of(c, "cold_cpu_ms");
  }
  j.raw("cases", arr + "]");
  auto get = [&](const std::string& ch, int n) { auto it = med.find({ch, n}); return it == med.end() ? NAN : it->second; };
  const double a = get("sin", 50), b = get("mixed", 50);
  const double sin_slope = sx.size() >= 2 ? slope(sx, sy) : NAN;
  const double mixed_slope = (get("mixed", 100) - b) / 50.0;
  const double ratio = get("sin", 400) / a;
  num("a_sin50_cold_ms", a);
  num("b_mixed50_cold_ms", b).num("chain_target_ms", 200);
  num("a_sin50_cold_cpu_ms", cpu_med.count("sin") ? cpu_med["sin"] : NAN);
  num("b_mixed50_cold_cpu_ms", cpu_med.count("mixed") ? cpu_med["mixed"] : NAN);
  num("sin_marginal_ms_per_link", sin_slope);
  num("mixed_marginal_ms_per_link", mixed_slope).num("marginal_target_ms", 3);
  num("sin_T400_over_T50", ratio).num("ratio_target", 9);
  j.boolean("a_target_met", a <= 200).boolean("b_target_met", b <= 200);
  j.boolean("marginal_target_met", sin_slope <= 3 && mixed_slope <= 3).boolean("ratio_target_met", ratio <= 9);
  env.add_to(j);
  std::printf("%s\n", j.text().c_str());
  return 0;
}

}  // namespace mjbench
