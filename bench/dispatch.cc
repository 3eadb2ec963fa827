// minijax bench: dispatch overhead — the caller-thread time of a cached jitted `x + y` on two f32
// scalars beyond the compiled code's own time; one JSON line.
//
// Usage: minijax_bench_dispatch [--calls C (2000)] [--batches B (100)]
// Times are per call, measured over batches of C calls (steady clock, median over B batches):
//   call          jf(x, y) and mj::block_until_ready on the result (signature lookup, argument
//                 checks, output buffer, the entry call, the result Array);
//   entry         the executable's entry function alone (LoadedExecutable::entry on ready pointers):
//                 the kernel's own time;
//   overhead      call - entry. Target ≤ 2 µs.
// The thread CPU time per call is reported next to each wall time.
#include <cstdio>

#include "bench/bench_common.h"
#include "core/lax.h"
#include "jit/jit.h"
#include "minijax/minijax.h"

namespace {

// Per-call seconds (wall, median over batches) and thread CPU seconds (total / calls) of f.
struct PerCall {
  mjbench::Stats wall;
  double cpu = 0;
};

template <class F>
PerCall per_call(int calls, int batches, F&& f) {
  for (int i = 0; i < calls; ++i) f();
  std::vector<double> t;
  const double c0 = mjbench::thread_cpu_seconds();
  for (int b = 0; b < batches; ++b) {
    auto t0 = mjbench::clock_type::now();
    for (int i = 0; i < calls; ++i) f();
    t.push_back(mjbench::seconds_since(t0) / calls);
  }
  return {mjbench::stats(t), (mjbench::thread_cpu_seconds() - c0) / (double(calls) * batches)};
}

void put(mjbench::Json& j, const std::string& key, const PerCall& p) {
  j.num(key + "_us", p.wall.median * 1e6).num(key + "_us_min", p.wall.min * 1e6);
  j.num(key + "_us_max", p.wall.max * 1e6).num(key + "_thread_cpu_us", p.cpu * 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  mjbench::Args args(argc, argv, "usage: minijax_bench_dispatch [--calls C] [--batches B]");
  const int calls = args.integer("calls", 2000), batches = args.integer("batches", 100);
  args.check();
  mjbench::Environment env;
  try {
    mjbench::Json j;
    j.str("name", "dispatch").integer("calls_per_batch", calls).integer("batches", batches);
    // x + y on scalars.
    auto jadd = mj::jit([](const mj::Array& x, const mj::Array& y) { return x + y; }, "add_scalars");
    mj::Array x = mj::lax::scalar(1.5, mj::f32), y = mj::lax::scalar(2.25, mj::f32);
    auto call = per_call(calls, batches, [&] { mj::block_until_ready(jadd(x, y)); });
    auto compiled = jadd.lower(x, y).compile();
    const minijax::Executable& exe = *compiled.executable();
    std::vector<void*> ins = {const_cast<float*>(x.data<float>()), const_cast<float*>(y.data<float>())};
    float out_value = 0;
    std::vector<void*> outs = {&out_value};
    std::vector<std::vector<char>> arena_mem(3);
    std::vector<void*> arenas(3, nullptr);
    for (size_t k = 0; k < 3; ++k)
      if (exe.plan.arena_bytes[k] > 0) {
        arena_mem[k].resize(size_t(exe.plan.arena_bytes[k]));
        arenas[k] = arena_mem[k].data();
      }
    auto entry = per_call(calls, batches, [&] { exe.loaded.entry(ins.data(), outs.data(), arenas.data()); });
    const double overhead = call.wall.median - entry.wall.median;
    put(j, "add_call", call);
    put(j, "add_entry", entry);
    j.num("add_overhead_us", overhead * 1e6).num("add_target_us", 2).boolean("add_target_met", overhead <= 2e-6);
    j.num("add_result", double(out_value));

    env.add_to(j);
    std::printf("%s\n", j.text().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minijax_bench_dispatch: %s\n", e.what());
    return 1;
  }
  return 0;
}
