// minijax bench: compile time of the MLP train step — cold (a fresh process), in-memory cache hit
// (a second call of the same jit), persistent-cache hit in a new process; one JSON line.
//
// Usage: minijax_bench_compile [cold | persistent | chain] [--cache-dir DIR] [--verify] [--as-text FILE]
//                              [--runs R] [--max-links N]
//   --as-text   (cold) writes the compiled step's Compiled::as_text(true) (program, KIR, optimized LLVM
//               IR) to FILE: what the compile time is spent on.
//   --verify    turns config().verify_jaxprs on (release builds default it off): its cost on
//               trace and compile is the difference between a run with and one without.
//   cold        this process compiles the step for the first time (persistent cache off unless
//               --cache-dir is given, then it is filled): trace (jit.lower), compile
//               (Lowered::compile: passes, KIR, LLVM O2, codegen, load, each stage reported), the
//               first call (trace + compile + run, through a second, fresh jit of the same function
//               — the executable cache then makes it trace + cache hit + run), and the in-memory hit.
//               Target: trace + compile ≤ 250 ms.
//   persistent  runs `<this program> cold --cache-dir DIR` (DIR: --cache-dir, else a new temporary
//               directory) to fill the persistent cache, then, in this new process, traces and
//               compiles the same step with config().compilation_cache_dir = DIR. Target ≤ 30 ms.
//   chain       fused chains of transcendental links, each compiled cold in a new process
//               (bench/compile_chain.cc: cases, targets; --runs R per case (3), --max-links N skips
//               the longer chains); `chain-one --chain mixed|F --links N` is one such process
//               (F: one function of the mixed list, chained alone).
// In-memory hit (cold mode): a cached call of the step's 21-leaf signature (TrainState: 6
// parameters, 12 moments, the step count; x, y) costs the signature lookup before the code runs.
// Measured on a function of the same signature that returns its first argument (no kernel), as
// the median per-call time of the jitted call minus that of detail::run_compiled on its
// executable (batches of 500 calls). Target ≤ 10 µs. Also reported: lower().compile() on the
// compiled signature (signature cache, the passes again, then the process-wide executable cache).
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "bench/bench_common.h"
#include "bench/compile_chain.h"
#include "core/config.h"
#include "jit/compile_cache.h"
#include "jit/jit.h"
#include "jit/sharded_call.h"
#include "samples/fashion_mnist_mlp_lib.h"

namespace {

struct Setup {
  minijax::optim::Adam opt;
  fmnist::TrainState state;
  mj::Array x, y;
  Setup() {
    fmnist::MLP p = fmnist::init_mlp(0);
    state = fmnist::TrainState{p, opt.init(p)};
    x = mj::Array::allocate(mj::ShapedArray{{128, 784}, mj::f32});
    y = mj::Array::allocate(mj::ShapedArray{{128}, mj::i32});
  }
};

// CPU seconds of this process (all threads): on a loaded machine, close to what the wall time of
// the same work is on an idle one (the wall time also counts the waits for a CPU).
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

void stage_times(mjbench::Json& j, const minijax::CompileTimes& t) {
  mjbench::Json ct;
  ct.num("passes", t.passes * 1e3).num("lower", t.lower * 1e3).num("translate", t.translate * 1e3);
  ct.num("optimize", t.optimize * 1e3).num("codegen", t.codegen * 1e3).num("load", t.load * 1e3);
  ct.boolean("persistent_cache_hit", t.cache_hit);
  j.raw("compile_stages_ms", ct.text());
}

// Median seconds per call of f over 100 batches of `calls` calls.
template <class F>
double per_call(int calls, F&& f) {
  for (int i = 0; i < calls; ++i) f();
  std::vector<double> t;
  for (int b = 0; b < 100; ++b) {
    auto t0 = mjbench::clock_type::now();
    for (int i = 0; i < calls; ++i) f();
    t.push_back(mjbench::seconds_since(t0) / calls);
  }
  return mjbench::stats(t).median;
}

// The in-memory (signature cache) hit of the 21-leaf signature (see the header comment).
void signature_hit(mjbench::Json& j, Setup& s) {
  auto jid = mj::jit([](const fmnist::TrainState& st, const mj::Array&, const mj::Array&) { return st; },
                     "identity_21_leaves");
  const double call = per_call(500, [&] { mj::block_until_ready(jid(s.state, s.x, s.y)); });
  auto cid = jid.lower(s.state, s.x, s.y).compile();
  std::vector<mj::Array> flat = mj::tree_flatten(s.state);
  flat.push_back(s.x);
  flat.push_back(s.y);
  const minijax::Executable& exe = *cid.executable();
  const std::vector<mj::Array> consts;
  // The first leaf of each positional argument (state, x, y), then the end.
  const uint32_t first_leaf[4] = {0, uint32_t(flat.size() - 2), uint32_t(flat.size() - 1), uint32_t(flat.size())};
  const double run = per_call(500, [&] {
    mj::block_until_ready(minijax::detail::run_compiled(exe, consts, flat, "identity_21_leaves", first_leaf, 3,
                                                        std::source_location::current()));
  });
  j.integer("in_memory_hit_leaves", int64_t(flat.size()));
  j.num("in_memory_hit_call_us", call * 1e6).num("in_memory_hit_run_compiled_us", run * 1e6);
  j.num("in_memory_hit_us", (call - run) * 1e6).num("in_memory_hit_target_us", 10);
  j.boolean("in_memory_hit_target_met", call - run <= 10e-6);
}

int run_cold(const std::string& cache_dir, const std::string& as_text, mjbench::Environment& env) {
  if (!cache_dir.empty()) mj::config().compilation_cache_dir = cache_dir;
  Setup s;
  auto step = [&s](const fmnist::TrainState& st, const mj::Array& x, const mj::Array& y) {
    return fmnist::train_step(s.opt, st, x, y);
  };
  auto jstep = mj::jit(step, mj::JitOptions{.name = "train_step", .donate_argnums = {0},
                                            .keep_llvm_ir = !as_text.empty()});
  const double cpu0 = process_cpu_seconds();
  auto t0 = mjbench::clock_type::now();
  auto lowered = jstep.lower(s.state, s.x, s.y);
  const double trace = mjbench::seconds_since(t0);
  t0 = mjbench::clock_type::now();
  auto compiled = lowered.compile();
  const double compile = mjbench::seconds_since(t0);
  const double cpu = process_cpu_seconds() - cpu0;
  const auto& exe = *compiled.executable();
  if (!as_text.empty()) std::ofstream(as_text) << compiled.as_text(true);
  int64_t kernels = 0;
  for (const auto& e : exe.program.eqns) kernels += e.primitive->name == "fusion";
  // A second jit of the same function: trace + executable-cache hit + run.
  auto jstep2 = mj::jit(step, mj::JitOptions{.name = "train_step", .donate_argnums = {0}});
  t0 = mjbench::clock_type::now();
  auto [next, loss] = jstep2(s.state, s.x, s.y);
  mj::block_until_ready(next);
  const double second_jit_first_call = mjbench::seconds_since(t0);
  s.state = next;
  // In-memory hit: lower + compile of the signature compiled above.
  auto hits = mjbench::stats(mjbench::time_calls(3, 50, [&] { (void)jstep2.lower(s.state, s.x, s.y).compile(); }));
  mjbench::Json j;
  j.str("name", "compile").str("mode", "cold").str("program", "mlp train_step");
  j.boolean("verify_jaxprs", mj::config().verify_jaxprs);
  j.boolean("persistent_cache_on", !cache_dir.empty());
  j.num("trace_ms", trace * 1e3).num("compile_ms", compile * 1e3).num("cold_ms", (trace + compile) * 1e3);
  j.num("cold_cpu_ms", cpu * 1e3);
  j.num("cold_target_ms", 250).boolean("cold_target_met", trace + compile <= 0.25);
  stage_times(j, exe.times);
  j.integer("top_level_fusions", kernels).integer("kernel_ir_chars", int64_t(exe.kernels.size()));
  j.num("second_jit_first_call_ms", second_jit_first_call * 1e3);
  j.stats_ms("in_memory_hit_lower_compile", hits);
  signature_hit(j, s);
  auto cs = minijax::compilation_cache_stats();
  j.integer("cache_entries", int64_t(cs.entries)).integer("code_generations", int64_t(cs.generated));
  env.add_to(j);
  std::printf("%s\n", j.text().c_str());
  return 0;
}

int run_persistent(std::string cache_dir, mjbench::Environment& env) {
  bool made_dir = false;
  if (cache_dir.empty()) {
    char tmpl[] = "/tmp/minijax_bench_cache_XXXXXX";
    if (!mkdtemp(tmpl)) throw minijax::ValueError("cannot create a temporary cache directory");
    cache_dir = tmpl;
    made_dir = true;
  }
  // Fill the cache in another process.
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) throw minijax::ValueError("cannot find this program's path (/proc/self/exe)");
  self[len] = 0;
  const std::string cmd = std::string("'") + self + "' cold --cache-dir '" + cache_dir + "' > /dev/null";
  if (std::system(cmd.c_str()) != 0) throw minijax::ValueError("filling the cache failed: " + cmd);
  mj::config().compilation_cache_dir = cache_dir;
  Setup s;
  auto step = [&s](const fmnist::TrainState& st, const mj::Array& x, const mj::Array& y) {
    return fmnist::train_step(s.opt, st, x, y);
  };
  auto jstep = mj::jit(step, mj::JitOptions{.name = "train_step", .donate_argnums = {0}});
  auto t0 = mjbench::clock_type::now();
  auto lowered = jstep.lower(s.state, s.x, s.y);
  const double trace = mjbench::seconds_since(t0);
  t0 = mjbench::clock_type::now();
  auto compiled = lowered.compile();
  const double compile = mjbench::seconds_since(t0);
  const auto& exe = *compiled.executable();
  mjbench::Json j;
  j.str("name", "compile").str("mode", "persistent").str("program", "mlp train_step");
  j.num("trace_ms", trace * 1e3).num("compile_ms", compile * 1e3).num("total_ms", (trace + compile) * 1e3);
  j.num("target_ms", 30).boolean("target_met", trace + compile <= 0.03);
  stage_times(j, exe.times);
  auto cs = minijax::compilation_cache_stats();
  j.integer("persistent_hits", int64_t(cs.persistent_hits)).integer("persistent_rejected", int64_t(cs.persistent_rejected));
  env.add_to(j);
  std::printf("%s\n", j.text().c_str());
  if (made_dir) std::filesystem::remove_all(cache_dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  mjbench::Args args(argc, argv,
                     "usage: minijax_bench_compile [cold | persistent | chain] [--cache-dir DIR] [--verify] [--as-text FILE] "
                     "[--runs R] [--max-links N]\n       minijax_bench_compile chain-one --chain mixed|sin|cos|...|igamma_grad_a --links N");
  const std::string mode = args.positional("cold");
  const std::string dir = args.string("cache-dir", "");
  const std::string as_text = args.string("as-text", "");
  if (args.flag("verify")) mj::config().verify_jaxprs = true;
  const int runs = args.integer("runs", 3), max_links = args.integer("max-links", 400);
  const std::string chain = args.string("chain", "sin");
  const int links = args.integer("links", 50);
  args.check();
  mjbench::Environment env;
  try {
    if (mode == "cold") return run_cold(dir, as_text, env);
    if (mode == "persistent") return run_persistent(dir, env);
    if (mode == "chain") return mjbench::run_chain(runs, max_links, env);
    if (mode == "chain-one") return mjbench::run_chain_one(chain, links, env);
    std::fprintf(stderr, "unknown mode '%s' (cold, persistent, chain or chain-one)\n", mode.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minijax_bench_compile: %s\n", e.what());
    return 1;
  }
}
