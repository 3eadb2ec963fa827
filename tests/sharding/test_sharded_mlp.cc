// Tests of jit with in_shardings/out_shardings (jit/jit.h): grad through the samples' MLP sharded
// over a (4, 2) ("data", "model") mesh equals the unsharded gradient, collectives, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/collectives.h"
#include "core/dce.h"
#include "core/views/collectives.h"
#include "jit/jit.h"
#include "jit/sharded_call.h"
#include "samples/fashion_mnist_mlp_lib.h"
#include "sharding/boxes.h"
#include "sharding/partition_spmd.h"
#include "tests/sharding/spmd_helpers.h"

namespace {

using mj::Array;
using mj::None;
using mj::P;

// Mesh (4, 2) with the sample's axis names.
std::shared_ptr<const mj::Mesh> mesh42() { return mj::testing::mesh42({"data", "model"}); }

mj::NamedSharding ns(const std::shared_ptr<const mj::Mesh>& m, P spec) {
  return mj::NamedSharding{m, std::move(spec), mj::MemoryKind::device};
}

// |got - want| <= 1e-5 + 1e-4 |want| elementwise (sharding changes the order of the batch and
// hidden-dim sums, so the last bits of f32 may differ).
void expect_close(const Array& got, const Array& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const float* g = got.data<float>();
  const float* w = want.data<float>();
  for (int64_t i = 0; i < want.aval().size(); ++i)
    ASSERT_NEAR(g[i], w[i], 1e-5 + 1e-4 * std::fabs(w[i])) << what << " at " << i;
}

size_t count(const mj::SpmdStats& s, const mj::Jaxpr& program, const std::string& prim,
             const std::string& axis) {
  size_t n = 0;
  for (auto& c : s.collectives)
    n += c.primitive == prim &&
         mj::param_to_string(mj::axis_name_param(mj::collective_params(program.eqns[c.eqn_index]).axis_name)) == axis;
  return n;
}

auto loss_grad() {
  return mj::value_and_grad(
      [](const fmnist::MLP& p, const Array& x, const Array& y) { return fmnist::loss_fn(p, x, y); });
}

// Megatron-style shardings of the MLP 784-16-16-10: w1 column-parallel (hidden over "model"),
// w2 row-parallel (its input hidden dim over "model"), layer 3 replicated; the batch over "data".
std::vector<std::optional<mj::NamedSharding>> mlp_in_shardings(const std::shared_ptr<const mj::Mesh>& m) {
  return {ns(m, P(None{}, "model")), ns(m, P("model")), ns(m, P("model", None{})), ns(m, P()),
          ns(m, P()),                ns(m, P()),        ns(m, P("data", None{})),  ns(m, P("data"))};
}

struct Data {
  fmnist::MLP params;
  Array x, y;
};

Data small_data() {
  Data d{fmnist::init_mlp(7, 16),
         mj::random::uniform(mj::random::PRNGKey(3), {8, 784}, mj::f32, 0.0, 1.0),
         mj::astype(mj::random::randint(mj::random::PRNGKey(4), {8}, 0, 10), mj::i32)};
  return d;
}

// The equations of `j` none of whose outputs is read by a later equation or is an output of `j`
// (a use count over the program text; bodies in params are checked the same way, their outputs
// counting as read). Written independently of core/dce so it can judge it.
size_t dead_equations(const mj::Jaxpr& j) {
  size_t dead = 0;
  for (size_t i = 0; i < j.eqns.size(); ++i) {
    bool used = false;
    for (auto& v : j.eqns[i].outputs) {
      if (v.is_dropvar()) continue;
      for (size_t k = i + 1; k < j.eqns.size() && !used; ++k)
        for (auto& a : j.eqns[k].inputs) used = used || (std::holds_alternative<mj::Var>(a) && std::get<mj::Var>(a) == v);
      for (auto& a : j.outvars) used = used || (std::holds_alternative<mj::Var>(a) && std::get<mj::Var>(a) == v);
    }
    dead += !used;
    for (auto& [key, p] : j.eqns[i].params.items()) {
      if (auto* cj = std::get_if<mj::ClosedJaxprPtr>(&p)) dead += dead_equations(*(*cj)->jaxpr);
      if (auto* cjs = std::get_if<std::vector<mj::ClosedJaxprPtr>>(&p))
        for (auto& c : *cjs) dead += dead_equations(*c->jaxpr);
    }
  }
  return dead;
}

// The largest element count of any value an equation of `j` produces (bodies included).
int64_t largest_value(const mj::Jaxpr& j) {
  int64_t n = 0;
  for (auto& e : j.eqns) {
    for (auto& v : e.outputs) n = std::max(n, v.aval().size());
    for (auto& [key, p] : e.params.items()) {
      if (auto* cj = std::get_if<mj::ClosedJaxprPtr>(&p)) n = std::max(n, largest_value(*(*cj)->jaxpr));
      if (auto* cjs = std::get_if<std::vector<mj::ClosedJaxprPtr>>(&p))
        for (auto& c : *cjs) n = std::max(n, largest_value(*c->jaxpr));
    }
  }
  return n;
}

}  // namespace

TEST(ShardedMlp, ValueAndGradEqualsTheUnshardedRun) {
  auto m = mesh42();
  Data d = small_data();
  auto step = mj::jit(loss_grad(), mj::JitOptions{"train_step", mlp_in_shardings(m), {}});
  auto [loss, g] = step(d.params, d.x, d.y);
  auto [loss_ref, g_ref] = loss_grad()(d.params, d.x, d.y);  // eager, unsharded
  expect_close(loss, loss_ref, "loss");
  expect_close(g.w1, g_ref.w1, "dw1");
  expect_close(g.b1, g_ref.b1, "db1");
  expect_close(g.w2, g_ref.w2, "dw2");
  expect_close(g.b2, g_ref.b2, "db2");
  expect_close(g.w3, g_ref.w3, "dw3");
  expect_close(g.b3, g_ref.b3, "db3");
  // A loss near ln(10): the check is not vacuous (the gradients are not all zero either).
  EXPECT_NEAR(loss.item<double>(), std::log(10.0), 0.5);
  float gmax = 0;
  for (int64_t i = 0; i < g_ref.w1.aval().size(); ++i) gmax = std::max(gmax, std::fabs(g_ref.w1.data<float>()[i]));
  EXPECT_GT(gmax, 1e-4f);
  // The outputs are sharded Arrays: dw1 in w1's column-parallel sharding, the loss replicated.
  EXPECT_TRUE(g.w1.is_sharded());
  EXPECT_TRUE(g.w1.sharding().spec().equivalent(P(None{}, "model"))) << g.w1.sharding().str();
  EXPECT_TRUE(loss.sharding().sharding.is_fully_replicated());
  EXPECT_EQ(g.w1.addressable_shards().size(), 8u);
  EXPECT_EQ(step.trace_count(), 1);
  step(d.params, d.x, d.y);  // same signature: no retrace, the partitioned program is reused
  EXPECT_EQ(step.trace_count(), 1);
}

TEST(ShardedJit, ShardedArgumentsKeepTheirShardingsWithoutOptions) {
  auto m = mesh42();
  Array x = mj::random::uniform(mj::random::PRNGKey(8), {8, 4}, mj::f32, -1.0, 1.0);
  Array xs = mj::device_put(x, ns(m, P("data", "model")));
  auto f = [](const Array& a) { return mj::tanh(a) * 3.0f; };
  auto g = mj::jit(f, mj::JitOptions{});
  Array out = g(xs);
  expect_close(out, f(x), "tanh(x)*3");
  ASSERT_NE(g.last_run(), nullptr);  // partitioned: the argument's sharding gave the mesh
  EXPECT_TRUE(g.last_run()->stats.collectives.empty());
  EXPECT_TRUE(out.sharding().spec().equivalent(P("data", "model"))) << out.sharding().str();
  // Fed back in: the same program (one lowering for one argument sharding), no collective.
  Array again = g(out);
  expect_close(again, f(f(x)), "f(f(x))");
  EXPECT_EQ(g.trace_count(), 1);
}

TEST(ShardedJit, UnderGradTheShardingsBecomeConstraintsOfThePjitBody) {
  auto m = mesh42();
  Array x = mj::random::uniform(mj::random::PRNGKey(9), {8, 4}, mj::f32, -1.0, 1.0);
  auto f = [](const Array& a) { return mj::sum(mj::sin(a) * a); };
  auto fj = mj::jit(f, mj::JitOptions{"f", {ns(m, P("data", None{}))}, {}});
  // d/dx sum(sin(x) x) = cos(x) x + sin(x), elementwise.
  Array g = mj::grad(fj)(x);
  const float* xp = x.data<float>();
  const float* gp = g.data<float>();
  for (int64_t i = 0; i < 32; ++i)
    ASSERT_NEAR(gp[i], std::cos(xp[i]) * xp[i] + std::sin(xp[i]), 1e-5) << i;
  // The traced gradient holds the constraint on the input (forward) and on its cotangent
  // (the transpose of sharding_constraint), both inside pjit bodies.
  std::string text = mj::to_string(mj::make_jaxpr(mj::grad(fj))(x));
  size_t n = 0;
  for (size_t at = text.find("sharding_constraint"); at != std::string::npos;
       at = text.find("sharding_constraint", at + 1))
    ++n;
  EXPECT_GE(n, 2u) << text;
  EXPECT_NE(text.find("pjit"), std::string::npos) << text;
}

TEST(ShardedMlp, CollectivesAreWhatTheShardingImplies) {
  auto m = mesh42();
  Data d = small_data();
  auto step = mj::jit(loss_grad(), mj::JitOptions{"train_step", mlp_in_shardings(m), {}});
  mj::SpmdRun run = step.run_spmd_shards(d.params, d.x, d.y);
  const mj::Jaxpr& prog = run.lowered->program;
  // Row-parallel w2: the forward matmul contracts the "model"-sharded hidden dim, so its partial
  // sums are all-reduced over "model".
  EXPECT_GE(count(run.stats, prog, "all_reduce", "model"), 1u);
  // Every weight gradient sums over the batch, which is split over "data": partial sums are
  // reduced over "data" (the loss too, a mean over the batch).
  EXPECT_GE(count(run.stats, prog, "all_reduce", "data"), 3u);
  // Nothing needs the whole batch or a whole hidden dim on one device.
  EXPECT_EQ(count(run.stats, prog, "all_gather", "data"), 0u);
  EXPECT_EQ(count(run.stats, prog, "all_gather", "model"), 0u);
  // dw1's local partial sum is f32[16/2, 784] (hidden over "model") = 8*784*4 = 25088 bytes;
  // an all_reduce over the 4 "data" devices in run_spmd's two-phase model (reduce-scatter of 4
  // pieces of 2 rows, then all-gather of the reduced pieces) moves 2(4-1)/4 of it each way:
  // 3*6272 + 3*6272 = 37632 bytes per device.
  bool found = false;
  for (auto& c : run.stats.collectives)
    if (c.primitive == "all_reduce" && c.bytes_received[0] == 37632) {
      found = true;
      for (size_t p = 0; p < 8; ++p) EXPECT_EQ(c.bytes_received[p], 37632) << "device " << p;
      for (size_t p = 0; p < 8; ++p) EXPECT_EQ(c.bytes_sent[p], 37632) << "device " << p;
    }
  EXPECT_TRUE(found) << mj::collectives_text(run.stats, prog);
  // dw1 comes back in its input sharding (column-parallel): each device holds its block of the
  // unsharded gradient, [784, 8] at columns 8*model_coord.
  auto [loss_ref, g_ref] = loss_grad()(d.params, d.x, d.y);
  const mj::Sharding& s = run.lowered->out_shardings[1];
  EXPECT_EQ(s.str(), "[{}, {\"model\"}]");
  auto boxes = mj::device_boxes(s, g_ref.w1.shape());
  for (size_t p = 0; p < 8; ++p) {
    const Array& shard = run.outputs[p][1];
    ASSERT_EQ(shard.shape(), (mj::Shape{784, 8}));
    expect_close(shard, mj::lax::slice(g_ref.w1, boxes[p].lo, boxes[p].hi), "dw1 shard");
  }
  // The lowered text shows the SPMD program and its collectives with bytes per device.
  std::string text = run.lowered->as_text();
  EXPECT_NE(text.find("all_reduce over data: 37632 B sent, 37632 B received per device"),
            std::string::npos)
      << text;
}

TEST(ShardedJit, OneShardingForAllLeavesAndAnOutShardingThatMovesTheAxis) {
  auto m = mesh42();
  Array x = mj::random::uniform(mj::random::PRNGKey(1), {8, 6}, mj::f32, -1.0, 1.0);
  Array y = mj::random::uniform(mj::random::PRNGKey(2), {8, 6}, mj::f32, -1.0, 1.0);
  auto f = [](const Array& a, const Array& b) { return mj::sin(a) * b; };
  // One entry applies to both arguments (JAX's prefix rule); the output also asks for "model" on
  // dim 1: an axis only acquired, which each device takes by a local slice, no communication.
  auto g = mj::jit(f, mj::JitOptions{"f", {ns(m, P("data", None{}))}, {ns(m, P("data", "model"))}});
  Array out = g(x, y);
  expect_close(out, f(x, y), "sin(x)*y");
  auto run = g.last_run();
  ASSERT_NE(run, nullptr);
  EXPECT_TRUE(run->stats.collectives.empty()) << mj::collectives_text(run->stats, run->lowered->program);
  EXPECT_EQ(run->lowered->in_shardings[1].str(), "[{\"data\"}, {}]");
  EXPECT_EQ(run->outputs[0][0].shape(), (mj::Shape{2, 3}));
}

TEST(ShardedJit, OutShardingOnAnotherDimIsOneAllToAll) {
  auto m = mesh42();
  Array x = mj::random::uniform(mj::random::PRNGKey(5), {8, 16}, mj::f32, -1.0, 1.0);
  auto f = [](const Array& a) { return mj::exp(a); };
  auto g = mj::jit(f, mj::JitOptions{"f", {ns(m, P("data", None{}))}, {ns(m, P(None{}, "data"))}});
  expect_close(g(x), f(x), "exp");
  auto run = g.last_run();
  ASSERT_EQ(run->stats.collectives.size(), 1u);
  EXPECT_EQ(run->stats.collectives[0].primitive, "all_to_all");
  // Each device holds [2,16] and keeps the quarter it still owns: 3 of its 4 [2,4] blocks
  // (3*8 f32 = 96 bytes) leave it, and 3 arrive.
  EXPECT_EQ(run->stats.collectives[0].bytes_received[0], 96);
  // collectives_text prints the measured bytes: 96 each way on every device (one line).
  const std::string text = mj::collectives_text(run->stats, run->lowered->program);
  EXPECT_NE(text.find("all_to_all over data: 96 B sent, 96 B received per device\n"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
}

// Every jit overload returns one type, mj::Jit<F>: jit(f, {}) (braced options), a name, options.
TEST(ShardedJit, EveryOverloadReturnsJit) {
  auto f = [](const Array& a) { return a + 1.0f; };
  using F = decltype(f);
  static_assert(std::is_same_v<decltype(mj::jit(f, {})), mj::Jit<F>>);
  static_assert(std::is_same_v<decltype(mj::jit(f, {"named"})), mj::Jit<F>>);
  static_assert(std::is_same_v<decltype(mj::jit(f)), mj::Jit<F>>);
  static_assert(std::is_same_v<decltype(mj::jit(f, "named")), mj::Jit<F>>);
  static_assert(std::is_same_v<decltype(mj::jit(f, std::string("named"))), mj::Jit<F>>);
  auto g = mj::jit(f, {});
  Array x = mj::arange(4, mj::f32);
  expect_close(g(x), f(x), "x+1");
  EXPECT_EQ(g.last_run(), nullptr);  // no sharding given: the plain jit, no SPMD run
}

TEST(ShardedJit, NoShardingIsPlainJit) {
  auto f = [](const Array& a) { return a * 2.0f; };
  auto g = mj::jit(f, mj::JitOptions{});
  Array x = mj::arange(6, mj::f32);
  expect_close(g(x), f(x), "2x");
  EXPECT_EQ(g.last_run(), nullptr);
  // lower() always works (as JAX's): the traced program, unpartitioned, on one device.
  auto low = g.lower(x);  // by value, as JAX's Lowered
  EXPECT_EQ(low.mesh, nullptr);
  EXPECT_TRUE(low.in_shardings.empty());
  const std::string text = low.as_text();
  EXPECT_NE(text.find("unpartitioned"), std::string::npos) << text;
  EXPECT_NE(text.find("mul"), std::string::npos) << text;
  EXPECT_EQ(text.find("all_"), std::string::npos) << text;
  // The program is f's: one input, one output, one equation (a * 2).
  EXPECT_EQ(low.program.invars.size(), 1u);
  EXPECT_EQ(low.program.outvars.size(), 1u);
  ASSERT_EQ(low.program.eqns.size(), 1u);
  EXPECT_EQ(low.program.eqns[0].primitive->name, "mul");
  EXPECT_THROW(mj::detail::run_lowered(std::make_shared<mj::LoweredProgram>(low), {x}, std::source_location::current()),
               mj::ShardingError);
}

TEST(ShardedJit, BadShardingsAreShardingErrors) {
  auto m = mesh42();
  auto other = std::make_shared<const mj::Mesh>(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, mj::Shape{8},
                                                std::vector<std::string>{"data"});
  Array x = mj::ones({8, 4}, mj::f32);
  auto f = [](const Array& a, const Array& b) { return a + b; };
  // Three entries for two leaves.
  auto g1 = mj::jit(f, mj::JitOptions{"f", {ns(m, P()), ns(m, P()), ns(m, P())}, {}});
  EXPECT_THROW(g1(x, x), mj::ShardingError);
  // Two meshes in one program.
  auto g2 = mj::jit(f, mj::JitOptions{"f", {ns(m, P("data")), ns(other, P("data"))}, {}});
  try {
    g2(x, x);
    FAIL() << "expected ShardingError";
  } catch (const mj::ShardingError& e) {
    EXPECT_NE(std::string(e.what()).find("one mesh"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test_sharded_mlp.cc"), std::string::npos) << e.what();
  }
  // A spec longer than the rank, and an axis used twice.
  auto g3 = mj::jit(f, mj::JitOptions{"f", {ns(m, P("data", None{}, None{}))}, {}});
  EXPECT_THROW(g3(x, x), mj::ShardingError);
  auto g4 = mj::jit(f, mj::JitOptions{"f", {ns(m, P("data", "data"))}, {}});
  EXPECT_THROW(g4(x, x), mj::ShardingError);
  // Uneven: 6 rows over 4 "data" devices is refused by the partitioner, not run replicated.
  Array z = mj::ones({6, 4}, mj::f32);
  auto g5 = mj::jit(f, mj::JitOptions{"f", {ns(m, P("data"))}, {}});
  EXPECT_THROW(g5(z, z), mj::ShardingError);
}

TEST(ShardedJit, VmapOfAShardedJitEqualsVmapOfTheFunction) {
  auto m = mesh42();
  Array xs = mj::random::uniform(mj::random::PRNGKey(10), {3, 8, 4}, mj::f32, -1.0, 1.0);
  auto f = [](const Array& a) { return mj::exp(a) - a; };
  auto fj = mj::jit(f, mj::JitOptions{"f", {ns(m, P("data", None{}))}, {ns(m, P("data", None{}))}});
  // Batching sharding_constraint inserts the vmapped dim as an open dim: values unchanged.
  expect_close(mj::vmap(fj)(xs), mj::vmap(f)(xs), "vmap");
}

TEST(ShardedJit, AnInnerShardedJitConstrainsTheOuterPartitionedProgram) {
  auto m = mesh42();
  Array x = mj::random::uniform(mj::random::PRNGKey(11), {8, 4}, mj::f32, -1.0, 1.0);
  auto inner_f = [](const Array& a) { return mj::sin(a); };
  // The inner jit returns its result on "model" along dim 1 (dim 0 unsharded); the outer program
  // takes x on "data" along dim 0 and returns it there: the inner constraint holds inside the
  // pjit body of the outer program.
  auto inner = mj::jit(inner_f, mj::JitOptions{"inner", {}, {ns(m, P(None{}, "model"))}});
  auto outer_f = [inner](const Array& a) { return inner(a) * 2.0f; };
  auto outer = mj::jit(outer_f, mj::JitOptions{"outer", {ns(m, P("data", None{}))},
                                                {ns(m, P("data", None{}))}});
  Array out = outer(x);
  expect_close(out, mj::sin(x) * 2.0f, "2 sin(x)");
  auto run = outer.last_run();
  ASSERT_NE(run, nullptr);
  EXPECT_NE(mj::to_string(*run->lowered->jaxpr).find("sharding_constraint"), std::string::npos);
  // The constraint is strict: P(None, "model") closes dim 0 unsharded, so inside the inner body
  // the "data"-sharded rows are all-gathered: each device's [2, 2] block (16 B) goes to its 3
  // "data" peers and theirs come in: 48 B per device.
  bool gathered = false;
  for (auto& c : run->stats.collectives)
    gathered |= c.primitive == "all_gather" && c.bytes_received[0] == 48;
  EXPECT_TRUE(gathered) << run->lowered->as_text();
}

// relu's derivative builds zeros it never reads (`_:f32[8,16] = broadcast_in_dim 0.0`, at the
// global batch x hidden shape): the traced program has such dead equations, the lowered global
// program and the SPMD program have none, so no device allocates them. Every value of the SPMD
// program is at most the largest local shard of an argument or output: w1 / dw1 in
// P(None, "model") are [784, 16/2] = 6272 elements per device.
TEST(ShardedMlp, ThePartitionedProgramHasNoDeadEquations) {
  auto m = mesh42();
  Data d = small_data();
  mj::ClosedJaxpr traced = mj::make_jaxpr(loss_grad())(d.params, d.x, d.y);
  ASSERT_GE(dead_equations(*traced.jaxpr), 2u) << mj::to_string(traced);  // one per relu layer
  auto step = mj::jit(loss_grad(), mj::JitOptions{"train_step", mlp_in_shardings(m), {}});
  mj::SpmdRun run = step.run_spmd_shards(d.params, d.x, d.y);
  EXPECT_EQ(dead_equations(*run.lowered->jaxpr->jaxpr), 0u) << mj::to_string(*run.lowered->jaxpr);
  EXPECT_EQ(dead_equations(run.lowered->program), 0u) << mj::to_string(run.lowered->program);
  EXPECT_LE(largest_value(run.lowered->program), 784 * 8) << mj::to_string(run.lowered->program);
  EXPECT_EQ(run.lowered->program.invars.size(), 8u);  // every argument stays an input

  // partition_spmd alone (no DCE before propagation): the dead equations are propagated and
  // traced, and still leave the SPMD program.
  std::vector<std::optional<mj::Sharding>> in(traced.jaxpr->constvars.size());
  auto given = mlp_in_shardings(m);
  for (size_t i = 0; i < traced.jaxpr->invars.size(); ++i)
    in.push_back(mj::to_sharding(*given[i], int64_t(traced.jaxpr->invars[i].aval().shape.size())));
  mj::PropagationResult prop = mj::propagate_shardings(*traced.jaxpr, in, {}, *m);
  mj::Jaxpr prog = mj::partition_spmd(*traced.jaxpr, prop, *m);
  EXPECT_EQ(dead_equations(prog), 0u) << mj::to_string(prog);
  EXPECT_EQ(prog.invars.size(), in.size());
}
