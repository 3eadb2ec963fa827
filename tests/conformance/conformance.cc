// minijax conformance suite: case registry and deterministic input generators.
// Owns the registry storage, the exemption lists (conformance and sharded conformance) and a case's traced forms.
#include "conformance.h"

namespace conformance {

std::vector<Case>& registry() {
  static std::vector<Case> r;
  return r;
}

Array rnd(const mj::Shape& shape, uint32_t seed, double lo, double hi, mj::DType dt) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(size_t(mj::shape_size(shape)));
  for (auto& x : v) x = u(g);
  return mj::array(v, shape, dt);
}

Array rnd_int(const mj::Shape& shape, uint32_t seed, int lo, int hi) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> u(lo, hi - 1);
  std::vector<double> v(size_t(mj::shape_size(shape)));
  for (auto& x : v) x = u(g);
  return mj::array(v, shape, mj::i32);
}

bool all_float(const std::vector<Array>& xs) {
  for (auto& x : xs)
    if (!mj::is_floating(x.dtype())) return false;
  return true;
}

std::vector<std::pair<std::string, mj::ClosedJaxpr>> traced_jaxprs(const Case& k) {
  std::vector<std::pair<std::string, mj::ClosedJaxpr>> out;
  mj::FlatFn f = [&](const std::vector<Array>& a) { return k.fn(a); };
  out.emplace_back("", mj::make_jaxpr(f)(k.args));
  mj::FlatFn jf = [&](const std::vector<Array>& a) { return mj::jit(k.fn, std::string(k.prim))(a); };
  out.emplace_back("jit", mj::make_jaxpr(jf)(k.args));
  if (!k.differentiable || !all_float(k.args)) return out;
  const long n = long(k.args.size());
  mj::FlatFn jvp = [&](const std::vector<Array>& a) {
    auto [po, to] = mj::jvp_flat(k.fn, {a.begin(), a.begin() + n}, {a.begin() + n, a.end()});
    for (auto& t : to)
      if (t.defined()) po.push_back(t);
    return po;
  };
  std::vector<Array> pt = k.args;
  pt.insert(pt.end(), k.args.begin(), k.args.end());
  out.emplace_back("jvp", mj::make_jaxpr(jvp)(pt));
  const std::vector<Array> outs = k.fn(k.args);
  if (!all_float(outs)) return out;
  mj::FlatFn vjp = [&](const std::vector<Array>& a) {
    std::vector<Array> cts(a.begin() + n, a.end()), grads;
    for (auto& g : mj::vjp_flat(k.fn, {a.begin(), a.begin() + n}).pullback(cts))
      if (g.defined()) grads.push_back(g);
    return grads;
  };
  std::vector<Array> pc = k.args;
  pc.insert(pc.end(), outs.begin(), outs.end());
  out.emplace_back("vjp", mj::make_jaxpr(vjp)(pc));
  return out;
}

const std::vector<std::pair<std::string, std::string>>& exemptions() {
  static const std::vector<std::pair<std::string, std::string>> e = {
      {"pjit", "takes a jaxpr: tests/core (jit) and tests/autodiff (grad of jit)"},
      {"closed_call", "takes a jaxpr: tests/core (closed_call)"},
      {"custom_jvp_call", "takes functions: tests/autodiff/test_custom_derivatives.cc"},
      {"custom_vjp_call", "takes functions: tests/autodiff/test_custom_derivatives.cc"},
      {"custom_lin", "internal to custom_vjp: tests/autodiff/test_custom_derivatives.cc"},
      {"all_gather", "collective: runs only under run_spmd; tests/sharding/test_collectives_executor.cc"},
      {"all_reduce", "collective: runs only under run_spmd; tests/sharding/test_collectives_executor.cc"},
      {"reduce_scatter", "collective: runs only under run_spmd; tests/sharding/test_collectives_executor.cc"},
      {"all_to_all", "collective: runs only under run_spmd; tests/sharding/test_collectives_executor.cc"},
      {"collective_permute", "collective: runs only under run_spmd; tests/sharding/test_collectives_executor.cc"},
      {"ragged_all_to_all", "collective: runs only under run_spmd; tests/sharding/test_collectives_executor.cc"},
      {"axis_index", "device coordinate: runs only under run_spmd; tests/sharding/test_collectives_executor.cc"},
      {"fusion", "compiler-internal kernel made by jit/passes/fuse after autodiff (takes a jaxpr; no JVP, "
                 "transpose or batching by design): tests/jit/test_fuse.cc"},
      {"copy_start", "compiler-internal half of device_put made by the offload stages (memory/) after "
                     "fusion: tests/memory/test_schedule_offloads.cc"},
      {"copy_done", "compiler-internal half of device_put made by the offload stages (memory/) after "
                    "fusion: tests/memory/test_schedule_offloads.cc"},
      {"copy_slice_start", "compiler-internal slice copy made by the offload stages (memory/) after "
                           "fusion: tests/memory/test_schedule_offloads.cc"},
      {"copy_update_start", "compiler-internal slice copy made by the offload stages (memory/) after "
                            "fusion: tests/memory/test_schedule_offloads.cc"},
      {"allocate_buffer", "compiler-internal loop buffer made by the offload stages (memory/) after "
                          "fusion: tests/memory/test_schedule_offloads.cc"},
      {"debug_callback", "takes a host function and has no results (an effect): eager, jit, scan, vmap, "
                         "grad and sharded jit in tests/jit/test_debug.cc"},
  };
  return e;
}

const std::vector<std::pair<std::string, std::string>>& sharded_exemptions() {
  static const std::vector<std::pair<std::string, std::string>> e = [] {
    std::vector<std::pair<std::string, std::string>> v;
    for (const char* n : {"pjit", "closed_call", "custom_jvp_call", "custom_vjp_call"})
      v.emplace_back(n,
                     "takes a jaxpr or functions, so no conformance case binds it (exempt from "
                     "the unsharded suite too); checked sharded vs eager in "
                     "tests/sharding/test_bodies.cc");
    v.emplace_back("custom_lin",
                   "autodiff-internal placeholder that exists only while linearize runs; no "
                   "conformance case binds it (exempt from the unsharded suite too)");
    const std::string coll =
        "collective: needs a mesh context (runs only under run_spmd); checked sharded in "
        "tests/sharding/test_collectives_executor.cc and test_partition_spmd.cc";
    for (const char* n : {"all_gather", "all_reduce", "reduce_scatter", "all_to_all",
                          "collective_permute", "ragged_all_to_all", "axis_index"})
      v.emplace_back(n, coll);
    v.emplace_back("debug_callback", "takes a host function and has no results (exempt from the unsharded suite "
                                     "too); a sharded jit calling it in tests/jit/test_debug.cc");
    for (const char* n : {"copy_start", "copy_done", "copy_slice_start", "copy_update_start", "allocate_buffer"})
      v.emplace_back(n, "compiler-internal copy (or loop buffer) of the offload stages (memory/), made after partitioning and fusion "
                        "(exempt from the unsharded suite too); tests/memory/test_schedule_offloads.cc");
    v.emplace_back("fusion",
                   "compiler-internal kernel made by jit/passes/fuse after partitioning, so propagation "
                   "never meets it (exempt from the unsharded suite too); tests/jit/test_fuse.cc");
    v.emplace_back("sharding_constraint",
                   "its sharding names its own mesh, so on the suite's other meshes the program is "
                   "rightly rejected (shardings on two meshes); checked sharded on its own mesh in "
                   "tests/sharding/test_sharded_arrays.cc (propagation keeps it, run_spmd == eager)");
    return v;
  }();
  return e;
}

}  // namespace conformance
