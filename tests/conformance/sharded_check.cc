// minijax conformance suite, sharded: every case traced, propagated and partitioned under random
// input shardings on meshes (2), (4), (2,2), (4,2), run by run_spmd and compared with eager; on
// (4,2) also compiled and run by the multi-device executor, compared with run_spmd.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <sstream>

#include "conformance.h"
#include "jit/pipeline.h"
#include "jit/runtime/execute_spmd.h"
#include "sharding/partition_spmd.h"
#include "sharding/propagate_shardings.h"
#include "sharding/sharded_array.h"

namespace conformance {
namespace {

using mj::Sharding;

struct MeshSpec {
  mj::Shape shape;
  std::vector<std::string> names;
};

// The meshes every case runs on (8 virtual devices; smaller meshes use the first ones).
const std::vector<MeshSpec>& mesh_specs() {
  static const std::vector<MeshSpec> m = {
      {{2}, {"x"}}, {{4}, {"x"}}, {{2, 2}, {"x", "y"}}, {{4, 2}, {"x", "y"}}};
  return m;
}

// Draws 0..2 fix the inputs only; draw 3 also fixes every output to a random sharding.
constexpr int kDrawsPerMesh = 4;
constexpr int kOutputDraw = 3;

std::shared_ptr<const mj::Mesh> make_mesh(const MeshSpec& spec) {
  static const bool once = [] {
    mj::set_num_devices(8);
    return true;
  }();
  (void)once;
  std::vector<int> all = mj::devices();
  int64_t n = mj::shape_size(spec.shape);
  std::vector<int> ids(all.begin(), all.begin() + n);
  return std::make_shared<const mj::Mesh>(ids, spec.shape, spec.names);
}

// A random closed sharding of `shape`: each mesh axis (in random order) goes, with probability
// 2/3, minor to a random dim whose size its shard count still divides. With `force` the first
// axis that divides some dim is always placed, so the draw shards the array when it can.
Sharding draw_sharding(const std::shared_ptr<const mj::Mesh>& mesh, const mj::Shape& shape,
                       std::mt19937& g, bool force, mj::MemoryKind kind = mj::MemoryKind::device) {
  Sharding s = Sharding::replicated_on(mesh, int64_t(shape.size()), kind);
  std::vector<size_t> axes(mesh->ndim());
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = i;
  std::shuffle(axes.begin(), axes.end(), g);
  bool placed = false;
  for (size_t a : axes) {
    int64_t n = mesh->shape[a];
    std::vector<size_t> fits;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] % (s.dims[d].num_shards(*mesh) * n) == 0) fits.push_back(d);
    if (fits.empty()) continue;
    bool take = (force && !placed) || std::uniform_int_distribution<int>(0, 2)(g) != 0;
    if (!take) continue;
    size_t d = fits[std::uniform_int_distribution<size_t>(0, fits.size() - 1)(g)];
    s.dims[d].axes.push_back(mj::AxisRef::axis(mesh->axis_names[a]));
    placed = true;
  }
  return s;
}

bool float_dtype(mj::DType d) { return mj::is_floating(d); }

std::vector<double> as_f64(const Array& a) {
  Array f = mj::astype(a, mj::f64);
  const double* p = f.data<double>();
  return std::vector<double>(p, p + f.size());
}

// Tolerances: exact for integers and bools; for floats, relative to the dtype's epsilon (a
// sharded reduction sums in another order: partial sums per device, then across devices).
std::pair<double, double> tolerance(mj::DType d) {
  if (!float_dtype(d)) return {0, 0};
  if (d == mj::f64) return {1e-12, 1e-12};
  if (d == mj::f32) return {1e-5, 1e-5};
  return {1e-2, 1e-2};  // bf16 / f16
}

struct Draw {
  std::string mesh;
  std::vector<Sharding> in;
  std::vector<std::optional<Sharding>> out;  ///< empty: outputs left to propagation
};

std::string describe(const Draw& d) {
  std::string s = d.mesh + " inputs:";
  for (auto& x : d.in) s += " " + x.str();
  if (!d.out.empty()) s += " outputs:";
  for (auto& x : d.out) s += " " + x->str();
  return s;
}

// The SPMD program compiled and run on every device of `mesh` by the multi-device executor
// (jit/runtime/execute_spmd.h), its inputs the devices' shards of `globals` under `in`: each
// device's outputs equal run_spmd's `ref` (within the dtype's tolerance: the compiled kernels
// round transcendentals and sums differently from eager's), and each collective it ran moved, per
// device, the bytes run_spmd's traffic model gives (`ref_stats`, in execution order), as the
// communicator counted them. Returns an error message (empty when all match).
std::string run_compiled_draw(const mj::Jaxpr& program, const std::shared_ptr<const mj::Mesh>& mesh,
                              const std::vector<Array>& globals, const std::vector<Sharding>& in,
                              const std::vector<std::vector<Array>>& ref, const mj::SpmdStats& ref_stats) {
  std::ostringstream err;
  std::shared_ptr<mj::SpmdCall> call;
  try {
    mj::CompileOptions co;
    co.name = "sharded_conformance";
    co.spmd = true;
    auto spmd = mj::bind_spmd_executable(mj::loaded_of(mj::compile_executable(program, co)), mesh, {}, std::source_location::current());
    std::vector<std::vector<Array>> dev(mesh->num_devices());
    for (size_t a = 0; a < globals.size(); ++a) {
      auto shards = mj::local_shards(globals[a], in[a]);
      for (size_t p = 0; p < dev.size(); ++p) dev[p].push_back(shards[p]);
    }
    call = mj::execute_spmd(spmd, dev, std::source_location::current(), mj::InputNames{});
    call->done.wait();
  } catch (const std::exception& e) {
    return std::string("compiled: threw: ") + e.what() + "\n" + mj::to_string(program);
  }
  for (size_t p = 0; p < ref.size(); ++p)
    for (size_t o = 0; o < ref[p].size(); ++o) {
      const Array& want = ref[p][o];
      Array got = Array::from_buffer(want.aval(), call->outputs[p][o]);
      auto [atol, rtol] = tolerance(want.dtype());
      if (want.dtype() == mj::f32) atol = rtol = 2e-5;
      std::vector<double> g = as_f64(got), w = as_f64(want);
      for (size_t i = 0; i < w.size(); ++i) {
        const bool ok = (std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i] ||
                        std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i]);
        if (!ok) {
          err << "compiled: output " << o << " device " << p << " element " << i << ": " << g[i]
              << " vs run_spmd " << w[i] << "\n";
          break;
        }
      }
    }
  if (call->collectives.size() != ref_stats.collectives.size())
    err << "compiled: " << call->collectives.size() << " collectives ran, run_spmd ran "
        << ref_stats.collectives.size() << "\n";
  for (size_t c = 0; c < std::min(call->collectives.size(), ref_stats.collectives.size()); ++c) {
    const mj::CollectiveStats &got = call->collectives[c], &want = ref_stats.collectives[c];
    if (got.primitive != want.primitive || got.bytes_sent != want.bytes_sent ||
        got.bytes_received != want.bytes_received)
      err << "compiled: collective " << c << " " << got.primitive << " moved other bytes than run_spmd's "
          << want.primitive << " (the traffic model)\n";
  }
  if (!err.str().empty()) err << mj::to_string(program);
  return err.str();
}

// Runs one draw; returns an error message (empty when every output matches).
std::string run_draw(const Case& k, const mj::ClosedJaxpr& cj, const std::vector<Array>& eager,
                     const std::shared_ptr<const mj::Mesh>& mesh, const Draw& draw, bool compiled) {
  const mj::Jaxpr& j = *cj.jaxpr;
  std::vector<std::optional<Sharding>> in;
  for (auto& s : draw.in) in.push_back(s);
  std::vector<Array> globals = cj.consts;
  globals.insert(globals.end(), k.args.begin(), k.args.end());
  mj::PropagationResult prop;
  mj::Jaxpr program;
  std::vector<std::vector<Array>> out;
  mj::SpmdStats stats;
  std::vector<mj::Var> inputs = j.constvars;
  inputs.insert(inputs.end(), j.invars.begin(), j.invars.end());
  try {
    prop = mj::propagate_shardings(j, in, draw.out, *mesh);
    program = mj::partition_spmd(j, prop, *mesh);
    std::vector<std::vector<Array>> dev(mesh->num_devices());
    for (size_t a = 0; a < globals.size(); ++a) {
      auto boxes = mj::device_boxes(prop.of(inputs[a]), globals[a].shape());
      for (size_t p = 0; p < dev.size(); ++p)
        dev[p].push_back(globals[a].ndim() == 0 ? globals[a]
                                                : mj::lax::slice(globals[a], boxes[p].lo, boxes[p].hi));
    }
    out = mj::run_spmd(program, *mesh, dev, &stats);
  } catch (const std::exception& e) {
    return std::string("threw: ") + e.what() + "\n" + (prop.text.empty() ? mj::to_string(cj) : prop.text);
  }
  std::ostringstream err;
  for (size_t o = 0; o < eager.size(); ++o) {
    const mj::Atom& atom = j.outvars[o];
    Sharding s = !draw.out.empty()                       ? *draw.out[o]
                 : std::holds_alternative<mj::Var>(atom) ? prop.of(std::get<mj::Var>(atom))
                                                         : Sharding::replicated_on(mesh, int64_t(eager[o].ndim()));
    for (auto& u : s.unreduced)
      if (u.is_sub_axis()) return "output " + std::to_string(o) + " unreduced over a sub-axis " + s.str();
    // Assemble: each device's block (summed over the devices that differ only in the output's
    // unreduced axes, which hold partial sums of the same block) equals the eager block; the
    // blocks together cover the array.
    auto boxes = mj::device_boxes(s, eager[o].shape());
    std::vector<double> want = as_f64(eager[o]);
    std::vector<bool> covered(want.size(), false);
    auto [atol, rtol] = tolerance(eager[o].dtype());
    const mj::Shape& shape = eager[o].shape();
    bool mismatch = false;
    for (size_t p = 0; p < mesh->num_devices(); ++p) {
      const Array& got = out[p][o];
      if (got.dtype() != eager[o].dtype()) {
        err << "output " << o << " device " << p << ": dtype " << got.aval().str() << " vs eager "
            << eager[o].aval().str() << "\n";
        mismatch = true;
        continue;
      }
      std::vector<double> v(size_t(got.size()), 0.0);
      auto pc = mesh->coords_of(p);
      for (size_t q = 0; q < mesh->num_devices(); ++q) {
        auto qc = mesh->coords_of(q);
        bool same = true;
        for (size_t a = 0; a < mesh->ndim(); ++a) {
          bool unred = std::any_of(s.unreduced.begin(), s.unreduced.end(),
                                   [&](const mj::AxisRef& u) { return u.name == mesh->axis_names[a]; });
          same = same && (unred || pc[a] == qc[a]);
        }
        if (!same) continue;
        auto w = as_f64(out[q][o]);
        for (size_t i = 0; i < v.size() && i < w.size(); ++i) v[i] += w[i];
      }
      const mj::Box& b = boxes[p];
      if (got.size() != b.volume()) {
        err << "output " << o << " device " << p << ": local " << got.aval().str() << " vs box " << b.str()
            << "\n";
        mismatch = true;
        continue;
      }
      // Walk the box in row-major order.
      std::vector<int64_t> idx = b.lo;
      for (size_t i = 0; i < v.size(); ++i) {
        size_t flat = 0;
        for (size_t d = 0; d < shape.size(); ++d) flat = flat * size_t(shape[d]) + size_t(idx[d]);
        covered[flat] = true;
        double x = v[i], y = want[flat];
        bool ok = (std::isnan(x) && std::isnan(y)) || x == y ||
                  std::fabs(x - y) <= atol + rtol * std::fabs(y);
        if (!ok) {
          err << "output " << o << " device " << p << " element " << flat << ": " << x << " vs eager " << y
              << "\n";
          mismatch = true;
          break;
        }
        for (size_t d = shape.size(); d-- > 0;) {
          if (++idx[d] < b.hi[d]) break;
          idx[d] = b.lo[d];
        }
      }
    }
    if (!mismatch && std::find(covered.begin(), covered.end(), false) != covered.end())
      err << "output " << o << ": the device blocks of " << s.str() << " do not cover the array\n";
  }
  if (!err.str().empty()) return err.str() + prop.text + "\n" + mj::to_string(program);
  if (!compiled) return "";
  std::vector<Sharding> in_shardings;
  for (auto& v : inputs) in_shardings.push_back(prop.of(v));
  return run_compiled_draw(program, mesh, globals, in_shardings, out, stats);
}

bool sharded_exempt(const std::string& prim) {
  for (auto& [n, why] : sharded_exemptions())
    if (n == prim) return true;
  return false;
}

class ShardedConformance : public ::testing::TestWithParam<size_t> {};

TEST_P(ShardedConformance, MatchesUnshardedUnderRandomInputShardings) {
  const Case& k = registry()[GetParam()];
  for (auto& [n, why] : sharded_exemptions())
    if (n == k.prim) GTEST_SKIP() << why;
  auto cj = mj::make_jaxpr([&](const std::vector<Array>& a) { return k.fn(a); })(k.args);
  auto eager = k.fn(k.args);
  ASSERT_EQ(eager.size(), cj.jaxpr->outvars.size());
  std::vector<mj::Var> inputs = cj.jaxpr->constvars;
  inputs.insert(inputs.end(), cj.jaxpr->invars.begin(), cj.jaxpr->invars.end());
  int sharded_draws = 0;
  for (size_t mi = 0; mi < mesh_specs().size(); ++mi) {
    auto mesh = make_mesh(mesh_specs()[mi]);
    for (int draw = 0; draw < kDrawsPerMesh; ++draw) {
      std::mt19937 g(uint32_t(GetParam() * 1000 + mi * 10 + size_t(draw)));
      Draw d{mesh->str(), {}};
      // The first case argument is inputs[consts]; draw 0 forces a sharded dim on it.
      for (size_t a = 0; a < inputs.size(); ++a)
        d.in.push_back(draw_sharding(mesh, inputs[a].aval().shape, g,
                                     draw == 0 && a == cj.jaxpr->constvars.size()));
      if (draw == kOutputDraw)
        for (auto& o : cj.out_avals()) d.out.push_back(draw_sharding(mesh, o.shape, g, false, o.memory_kind));
      if (!k.args.empty() && !d.in[cj.jaxpr->constvars.size()].is_fully_replicated()) ++sharded_draws;
      // Compiled on the seed mesh (4,2), each draw (compiling costs more than running).
      std::string e = run_draw(k, cj, eager, mesh, d, mesh->shape == mj::Shape{4, 2});
      EXPECT_TRUE(e.empty()) << describe(d) << "\n" << e;
    }
  }
  // The check can fail: when some dim of the first argument divides 2, some draw shards it.
  bool divisible = false;
  if (!k.args.empty())
    for (int64_t n : k.args[0].shape()) divisible = divisible || n % 2 == 0;
  if (divisible) EXPECT_GT(sharded_draws, 0);
}

std::string sharded_case_name(const ::testing::TestParamInfo<size_t>& info) {
  const Case& k = registry()[info.param];
  std::string n = k.prim + (k.label.empty() ? "" : "_" + k.label);
  for (auto& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n + "_" + std::to_string(info.param);
}

INSTANTIATE_TEST_SUITE_P(AllPrimitives, ShardedConformance,
                         ::testing::Range(size_t(0), registry().size()), sharded_case_name);

// Every registered primitive is checked sharded by some case, or exempt with a reason; every
// exemption names a registered primitive.
TEST(ShardedRegistry, EveryPrimitiveHasAShardedCaseOrAnExemption) {
  std::set<std::string> checked;
  for (auto& k : registry())
    if (!sharded_exempt(k.prim)) checked.insert(k.prim);
  auto names = mj::primitive_names();
  std::set<std::string> registered(names.begin(), names.end());
  for (auto& name : names)
    EXPECT_TRUE(checked.count(name) || sharded_exempt(name))
        << "primitive '" << name << "' has no sharded conformance case and no sharded exemption";
  for (auto& [n, why] : sharded_exemptions()) {
    EXPECT_TRUE(registered.count(n)) << "sharded exemption of unknown primitive '" << n << "'";
    EXPECT_FALSE(why.empty()) << n;
  }
}

}  // namespace
}  // namespace conformance
