// minijax bench: the chain case of minijax_bench_compile — cold compile time of fused chains of
// transcendental links, each compiled in a fresh process with the persistent cache off.
#pragma once
#include <string>

#include "bench/bench_common.h"

namespace mjbench {

/// `minijax_bench_compile chain`: runs every chain case `runs` times, each in a new process (this
/// program with `chain-one`), and prints one JSON line: per case the median cold time (trace +
/// compile) with its stages, the sin chain's marginal cost per link (least-squares slope over 5..400
/// links), T(400)/T(50), the mixed chain's marginal cost, and the targets. Cases above `max_links`
/// links are skipped. Returns the process exit status.
int run_chain(int runs, int max_links, Environment& env);

/// `minijax_bench_compile chain-one --chain sin|mixed --links N`: in this (fresh) process, with
/// config().compilation_cache_dir empty, traces and compiles the chain of N links over f32[4096],
/// runs it once, and prints one JSON line (trace_ms, compile_ms, cold_ms, the compile stages, the
/// number of top-level fusions). ValueError for an unknown chain or N < 1.
int run_chain_one(const std::string& chain, int links, Environment& env);

}  // namespace mjbench
