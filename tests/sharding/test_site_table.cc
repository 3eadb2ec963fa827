// minijax tests of the collective-site table: the stable site ids number_collective_sites gives
// after partitioning reach the compiled program's table, which is all the runtime reads of a site.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "core/bodies.h"
#include "core/views/collectives.h"
#include "jit/codegen/lower/program.h"
#include "jit/jit.h"
#include "jit/runtime/execute_spmd.h"
#include "sharding/number_collective_sites.h"
#include "sharding/sharded_array.h"
#include "tests/sharding/spmd_helpers.h"

namespace {

using mj::Array;
using mj::None;
using mj::P;

mj::NamedSharding ns(const std::shared_ptr<const mj::Mesh>& m, P spec) {
  return mj::NamedSharding{m, std::move(spec), mj::MemoryKind::device};
}

// One collective equation of a program as an independent walk finds it: its site id, the index
// of the top-level equation holding it, and the equation.
struct Found {
  size_t top = 0;
  const mj::Eqn* eqn = nullptr;
};

void walk(const mj::Jaxpr& j, bool top, size_t top_index, std::multimap<int32_t, Found>& out) {
  for (size_t i = 0; i < j.eqns.size(); ++i) {
    const mj::Eqn& e = j.eqns[i];
    const size_t at = top ? i : top_index;
    if (mj::CollectiveParams::kind_of(e)) out.insert({e.site, Found{at, &e}});
    for (const mj::SubJaxpr& s : mj::subjaxprs(e)) walk(*s.jaxpr->jaxpr, false, at, out);
  }
}

// x_t sharded on "x" contracted with W (rows on "x"): partial sums inside the scan body, reduced
// there by an all_reduce, once per iteration (tests/sharding/test_bodies.cc's case).
auto scan_with_collective() {
  return [](Array w, Array c0, Array xs) {
    return mj::scan(
        [&w](const Array& c, const Array& x) {
          Array y = mj::lax::dot_general(x, w, mj::lax::DotDimensionNumbers{{0}, {0}, {}, {}});
          return std::pair{mj::lax::add(c, mj::lax::tanh(y)), None{}};
        },
        c0, xs);
  };
}

}  // namespace

// Every collective of the partitioned program has its own id (0..n-1, each once), and the
// lowering's table maps each id to the top-level equation holding it; the compiled program's
// site table names those ids and describes each site as its equation does (kind, dtype, axes,
// group size, bytes); the compiled run's statistics place the loop's all_reduce in the scan, once
// per iteration.
TEST(SiteTable, EveryCompiledSiteCarriesTheIdOfItsPartitionedEquation) {
  auto m = mj::testing::mesh42();
  auto f = mj::jit(scan_with_collective(),
                   mj::JitOptions{"scan_sites",
                                  {ns(m, P("x", None{})), ns(m, P(None{})), ns(m, P(None{}, "x"))},
                                  {ns(m, P(None{}))}});
  Array w = mj::testing::ramp({8, 4}, 0.01f), c0 = mj::testing::ramp({4}, 0.1f), xs = mj::testing::ramp({3, 8}, 0.02f);
  auto lowered = f.lower(w, c0, xs);
  ASSERT_NE(lowered.spmd, nullptr);
  const mj::LoweredProgram& low = *lowered.spmd;
  std::multimap<int32_t, Found> found;
  walk(low.program, true, 0, found);
  ASSERT_FALSE(found.empty()) << mj::to_string(low.program);
  ASSERT_EQ(low.site_eqn_index.size(), found.size());
  size_t scan_index = low.program.eqns.size(), in_scan = 0;
  for (size_t i = 0; i < low.program.eqns.size(); ++i)
    if (!mj::subjaxprs(low.program.eqns[i]).empty()) scan_index = i;
  for (int32_t id = 0; id < int32_t(found.size()); ++id) {
    ASSERT_EQ(found.count(id), 1u) << "site id " << id << " in " << mj::to_string(low.program);
    const Found& at = found.find(id)->second;
    EXPECT_EQ(low.site_eqn_index[size_t(id)], at.top) << "site id " << id;
    in_scan += at.top == scan_index;
  }
  EXPECT_GE(in_scan, 1u) << "the all_reduce inside the scan body";

  auto compiled = lowered.compile();
  const auto& table = compiled.executable()->loaded.collective_sites;
  ASSERT_FALSE(table.empty());
  for (const mj::CollectiveSiteSpec& s : table) {
    ASSERT_EQ(found.count(s.site_id), 1u) << "table names site id " << s.site_id;
    const mj::Eqn& e = *found.find(s.site_id)->second.eqn;
    const mj::CollectiveParams c = mj::collective_params(e);
    EXPECT_EQ(s.primitive, e.primitive->name);
    EXPECT_EQ(s.axes, c.axis_name);
    EXPECT_EQ(s.axis_size, c.axis_size);
    if (s.is_axis_index) continue;
    EXPECT_EQ(s.op.dtype, mj::atom_aval(e.inputs.at(0)).dtype);
    EXPECT_EQ(s.op.shape, mj::atom_aval(e.inputs.at(0)).shape);
    ASSERT_EQ(s.operand_bytes.size(), e.inputs.size());
    for (size_t k = 0; k < e.inputs.size(); ++k) EXPECT_EQ(s.operand_bytes[k], mj::atom_aval(e.inputs[k]).nbytes());
    EXPECT_EQ(s.result_bytes, e.outputs.at(0).aval().nbytes());
    if (s.op.kind == mj::CollectiveKind::all_reduce) EXPECT_EQ(s.op.reduction, c.reduction);
  }

  auto [carry, ys] = f(w, c0, xs);
  mj::block_until_ready(carry);
  ASSERT_NE(f.last_run(), nullptr);
  size_t in_loop = 0;
  for (const mj::CollectiveStats& c : f.last_run()->stats.collectives) {
    ASSERT_LT(c.eqn_index, low.program.eqns.size()) << c.primitive;
    in_loop += c.eqn_index == scan_index && c.primitive == "all_reduce";
  }
  EXPECT_EQ(in_loop, 3u);  // xs has 3 rows: one all_reduce per iteration
}

// The compiled code names site 0; a loaded executable whose table lacks it fails the call on
// every device with an internal error naming the site and the program (never a silent skip of
// the collective, never a crash).
TEST(SiteTable, ASiteMissingFromTheTableFailsTheCallNamingSiteAndProgram) {
  auto m = mj::testing::mesh42();
  auto f = mj::jit([](const Array& x) { return x * 2.0f; },
                   mj::JitOptions{"gather_rows", {ns(m, P("x", None{}))}, {ns(m, P())}});
  Array x = mj::testing::ramp({8, 4}, 0.5f);
  auto compiled = f.lower(x).compile();
  ASSERT_FALSE(compiled.executable()->loaded.collective_sites.empty());
  auto broken = std::make_shared<mj::LoadedExecutable>(compiled.executable()->loaded);
  broken->collective_sites.clear();
  auto spmd = mj::bind_spmd_executable(broken, m, {}, std::source_location::current());
  std::vector<std::vector<Array>> dev(m->num_devices());
  std::vector<Array> shards = mj::local_shards(x, mj::testing::named(m, P("x", None{}), 2));
  for (size_t p = 0; p < dev.size(); ++p) dev[p].push_back(shards[p]);
  auto call = mj::execute_spmd(spmd, dev, std::source_location::current(), mj::InputNames{"gather_rows"});
  try {
    call->done.wait();
    FAIL() << "the call ran without its collective site";
  } catch (const mj::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("internal error: collective site 0 is not in the site table"), std::string::npos) << msg;
    EXPECT_NE(msg.find("program 'gather_rows'"), std::string::npos) << msg;
  }
  // The communicator was reset: the intact executable still runs.
  const Array y = mj::astype(f(x), mj::f64), want = mj::astype(x * 2.0f, mj::f64);
  ASSERT_EQ(y.shape(), want.shape());
  for (int64_t i = 0; i < want.size(); ++i) ASSERT_EQ(y.data<double>()[i], want.data<double>()[i]) << i;
}

// A hand-written SPMD program (local shapes, collectives by hand): an all_gather at the top, a
// cond whose two branches each hold an all_reduce, and an axis_index after it. Numbering gives
// ids in pre-order (the cond's branches in their param's order, after the cond's own index), each
// with the index of the top-level equation holding it; the equations' printed text is unchanged.
TEST(SiteTable, NumberingIsPreOrderWithTheTopLevelEquationOfEachSite) {
  auto f = [](const Array& x, const Array& p) {
    Array g = mj::lax::all_gather(x, {"x"}, 2, 0);
    Array c = mj::cond(
        p, [](const Array& v) { return mj::lax::psum(v, {"x"}, 2); },
        [](const Array& v) { return mj::lax::all_reduce(v, {"x"}, 2, "max"); }, g);
    Array i = mj::astype(mj::lax::axis_index({"x"}), mj::f32);
    return c * i;
  };
  mj::ClosedJaxpr cj = mj::trace_to_jaxpr(
      [&](const std::vector<Array>& a) { return std::vector<Array>{f(a[0], a[1])}; },
      {mj::ShapedArray{{3}, mj::f32}, mj::ShapedArray{{}, mj::bool_}});
  mj::Jaxpr program = *cj.jaxpr;
  const std::string before = mj::to_string(program);
  const std::vector<size_t> top = mj::number_collective_sites(program);
  EXPECT_EQ(mj::to_string(program), before);
  std::multimap<int32_t, Found> found;
  walk(program, true, 0, found);
  ASSERT_EQ(found.size(), 4u) << before;  // all_gather, two all_reduces, axis_index
  ASSERT_EQ(top.size(), 4u);
  std::vector<std::string> order;
  for (int32_t id = 0; id < 4; ++id) {
    ASSERT_EQ(found.count(id), 1u) << "site id " << id;
    const Found& at = found.find(id)->second;
    EXPECT_EQ(top[size_t(id)], at.top) << "site id " << id;
    EXPECT_EQ(program.eqns[at.top].primitive->name, id == 0 ? "all_gather" : id == 3 ? "axis_index" : "cond");
    order.push_back(at.eqn->primitive->name);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"all_gather", "all_reduce", "all_reduce", "axis_index"}));
  // Lowering names the program when a collective reaches it without an id.
  const mj::Eqn& unnumbered = cj.jaxpr->eqns.at(0);
  ASSERT_EQ(unnumbered.site, -1);
  try {
    mj::lower::describe_collective_site(unnumbered, "hand_written");
    FAIL() << "an equation without a site id was described";
  } catch (const mj::ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("internal error: collective all_gather of SPMD program 'hand_written' has no site id"),
              std::string::npos) << msg;
  }
}
