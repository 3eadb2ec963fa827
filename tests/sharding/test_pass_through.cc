// Registry-wide pass-through test of the sharding rules: for every rule-bearing primitive, each
// pass-through factor sharded on a (2) mesh keeps its axis through propagation with zero collectives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "core/views/memory_ops.h"
#include "core/collectives.h"
#include "core/lax.h"
#include "core/primitive.h"
#include "core/staging.h"
#include "jit/reference/reference_executor.h"
#include "rule_samples.h"
#include "sharding/boxes.h"
#include "sharding/partition_spmd.h"
#include "sharding/propagate_shardings.h"
#include "sharding/sharded_array.h"
#include "sharding/sharding_rule.h"

namespace {

using mj::Array;
using mj::DType;
using mj::FactorRule;
using mj::Sharding;
namespace lax = mj::lax;

// Rule-bearing primitives none of whose factors is pass-through on their sample equations, and
// why. A new primitive with a rule must either get a pass-through factor checked below or be
// listed here with its reason, or PassThrough.EveryRuleKeepsEachPassThroughAxis fails.
const std::map<std::string, std::string>& without_pass_through() {
  static const std::map<std::string, std::string> m = {
      // Results are fresh (no operand): iota's and iota_2x32_shape's factors are held by results
      // only, so there is nothing to shard on an operand.
      {"iota", "no operand"},
      {"iota_2x32_shape", "no operand"},
      // No results, and its operands need replication (the host function sees whole values).
      {"debug_callback", "no result"},
  };
  return m;
}

bool contains(const std::vector<int>& v, int f) { return std::find(v.begin(), v.end(), f) != v.end(); }

// Deterministic inputs in every primitive's domain: floats in (0.1, 0.9) (log, sqrt, erf_inv
// defined), integers in 0..3 (valid shift amounts; in-range gather indices into the samples'
// dims of 5; dynamic_slice clamps its start), bools 0/1.
Array input_for(const mj::ShapedArray& aval, std::mt19937& g) {
  mj::ShapedArray f64{aval.shape, DType::f64, false, mj::MemoryKind::device};
  Array a = Array::allocate(f64);
  double* p = a.mutable_data<double>();
  const bool fl = mj::is_floating(aval.dtype);
  std::uniform_real_distribution<double> u(0.1, 0.9);
  std::uniform_int_distribution<int> k(0, aval.dtype == DType::bool_ ? 1 : 3);
  for (int64_t i = 0; i < a.aval().size(); ++i) p[i] = fl ? u(g) : double(k(g));
  Array r = lax::convert_element_type(a, aval.dtype);
  if (aval.memory_kind != mj::MemoryKind::device) r = lax::device_put(r, aval.memory_kind);
  return r;
}

std::vector<double> as_f64(const Array& a) {
  Array f = lax::convert_element_type(a.memory_kind() == mj::MemoryKind::device
                                          ? a
                                          : lax::device_put(a, mj::MemoryKind::device),
                                      DType::f64);
  const double* p = f.data<double>();
  return std::vector<double>(p, p + f.aval().size());
}

// The pass-through factors of a rule: held by at least one operand dim and one result dim, not a
// reduction or need-replication factor, size divisible by 2, and the major factor of every dim
// that holds it (so sharding such a dim on one axis of size 2 shards exactly this factor).
std::vector<int> pass_through_factors(const FactorRule& r) {
  std::vector<int> out;
  for (int f = 0; f < int(r.num_factors()); ++f) {
    if (r.factor_sizes[size_t(f)] % 2 != 0) continue;
    if (contains(r.reduction_factors, f) || contains(r.need_replication_factors, f)) continue;
    bool in_operand = false, in_result = false, major_everywhere = true;
    auto scan = [&](const std::vector<std::vector<std::vector<int>>>& vals, bool& held) {
      for (auto& dims : vals)
        for (auto& fs : dims)
          if (contains(fs, f)) {
            held = true;
            major_everywhere = major_everywhere && fs.front() == f;
          }
    };
    scan(r.operand_dims, in_operand);
    scan(r.result_dims, in_result);
    if (in_operand && in_result && major_everywhere) out.push_back(f);
  }
  return out;
}

std::string spec_text(const std::vector<Sharding>& s) {
  std::string t;
  for (auto& x : s) t += (t.empty() ? "" : " ") + x.str();
  return t;
}

TEST(PassThrough, EveryRuleKeepsEachPassThroughAxis) {
  auto mesh = std::make_shared<const mj::Mesh>(std::vector<int>{0, 1}, mj::Shape{2},
                                               std::vector<std::string>{"x"});
  const mj::AxisRef x = mj::AxisRef::axis("x");
  std::set<std::string> covered, checked;
  size_t pairs = 0;
  std::mt19937 g(1234);
  for (const rule_samples::Sample& smp : rule_samples::samples()) {
    mj::ClosedJaxpr cj = mj::make_jaxpr(smp.body)(smp.args);
    for (const mj::Eqn& e : cj.jaxpr->eqns) {
      const std::string& name = e.primitive->name;
      if (!mj::sharding_rules().count(name)) continue;
      covered.insert(name);
      const FactorRule r = mj::sharding_rule_of(e);
      // The one-equation program: its variable operands (first use order) are the invars.
      mj::Jaxpr one;
      for (const mj::Atom& a : e.inputs)
        if (std::holds_alternative<mj::Var>(a)) {
          const mj::Var& v = std::get<mj::Var>(a);
          if (std::find(one.invars.begin(), one.invars.end(), v) == one.invars.end()) one.invars.push_back(v);
        }
      one.eqns.push_back(e);
      for (const mj::Var& o : e.outputs) one.outvars.push_back(o);
      one.effects = e.effects;
      std::vector<Array> args;
      for (const mj::Var& v : one.invars) args.push_back(input_for(v.aval(), g));
      const std::vector<Array> eager = mj::eval_jaxpr(one, {}, args);
      for (int f : pass_through_factors(r)) {
        // sharding_constraint is strict (as JAX's): its result is the user's sharding, so a
        // factor is pass-through only where the constraint itself shards the dim on "x"; a
        // factor it leaves replicated is (rightly) resharded, not kept.
        if (name == "sharding_constraint") {
          const Sharding& c = mj::sharding_of_param(mj::sharding_constraint_params(e).sharding);
          bool on_x = true;
          for (size_t d = 0; d < r.result_dims[0].size(); ++d)
            if (contains(r.result_dims[0][d], f)) on_x = on_x && c.dims[d].axes == std::vector<mj::AxisRef>{x};
          if (!on_x) continue;
        }
        SCOPED_TRACE(smp.label + ": " + name + " " + r.str() + " factor #" + std::to_string(f));
        // Shard every operand dim holding f on "x" (the others replicated, closed).
        std::vector<std::optional<Sharding>> in;
        std::vector<Sharding> given;
        for (const mj::Var& v : one.invars) {
          Sharding s = Sharding::replicated_on(mesh, int64_t(v.aval().shape.size()), v.aval().memory_kind);
          for (size_t i = 0; i < e.inputs.size(); ++i)
            if (mj::atom_var(e.inputs[i]) == v)
              for (size_t d = 0; d < r.operand_dims[i].size(); ++d)
                if (contains(r.operand_dims[i][d], f) && s.dims[d].axes.empty()) s.dims[d].axes.push_back(x);
          in.push_back(s);
          given.push_back(s);
        }
        SCOPED_TRACE("inputs: " + spec_text(given));
        mj::PropagationResult prop;
        mj::Jaxpr program;
        std::vector<std::vector<Array>> out;
        mj::SpmdStats stats;
        try {
          prop = mj::propagate_shardings(one, in, {}, *mesh);
          program = mj::partition_spmd(one, prop, *mesh);
          std::vector<std::vector<Array>> dev(mesh->num_devices());
          for (size_t k = 0; k < args.size(); ++k) {
            auto boxes = mj::device_boxes(given[k], args[k].shape());
            for (size_t p = 0; p < dev.size(); ++p)
              dev[p].push_back(args[k].ndim() == 0 ? args[k] : lax::slice(args[k], boxes[p].lo, boxes[p].hi));
          }
          out = mj::run_spmd(program, *mesh, dev, &stats);
        } catch (const std::exception& ex) {
          ADD_FAILURE() << "threw: " << ex.what() << "\n" << prop.text;
          continue;
        }
        ++pairs;
        checked.insert(name);
        // Every result dim holding f keeps exactly "x"; no result is left unreduced.
        for (size_t o = 0; o < e.outputs.size(); ++o) {
          const Sharding& s = prop.of(e.outputs[o]);
          EXPECT_TRUE(s.unreduced.empty()) << "result " << o << " " << s.str();
          for (size_t d = 0; d < r.result_dims[o].size(); ++d)
            if (contains(r.result_dims[o][d], f))
              EXPECT_EQ(s.dims[d].axes, std::vector<mj::AxisRef>{x})
                  << "result " << o << " dim " << d << " lost the axis: " << s.str() << "\n" << prop.text;
        }
        // Zero collectives: none in the program, none executed.
        for (const mj::Eqn& pe : program.eqns)
          EXPECT_FALSE(mj::is_collective(pe.primitive->name) && pe.primitive->name != "axis_index")
              << pe.primitive->name << " in\n" << mj::to_string(program);
        EXPECT_TRUE(stats.collectives.empty()) << stats.collectives.size() << " collectives executed";
        // Each device's result block equals its block of the eager result (exactly: no
        // reduction is reordered when only pass-through factors are sharded).
        for (size_t o = 0; o < eager.size(); ++o) {
          const Sharding& s = prop.of(e.outputs[o]);
          auto boxes = mj::device_boxes(s, eager[o].shape());
          for (size_t p = 0; p < out.size(); ++p) {
            const Array& got = out[p][o];
            ASSERT_EQ(got.dtype(), eager[o].dtype());
            Array want = eager[o].ndim() == 0 ? eager[o] : lax::slice(eager[o], boxes[p].lo, boxes[p].hi);
            ASSERT_EQ(got.shape(), want.shape()) << "result " << o << " device " << p;
            auto a = as_f64(got), b = as_f64(want);
            for (size_t i = 0; i < a.size(); ++i)
              if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) {
                ADD_FAILURE() << "result " << o << " device " << p << " element " << i << ": " << a[i]
                              << " vs eager " << b[i];
                break;
              }
          }
        }
      }
    }
  }
  // Every primitive with a rule has a sample, and has a pass-through factor checked or a reason.
  std::vector<std::string> uncovered, unchecked, listed_but_checked;
  for (const auto& n : mj::primitive_names()) {
    if (!mj::sharding_rules().count(n)) continue;
    if (!covered.count(n)) uncovered.push_back(n);
    const bool listed = without_pass_through().count(n) != 0;
    if (!checked.count(n) && !listed) unchecked.push_back(n);
    if (checked.count(n) && listed) listed_but_checked.push_back(n);
  }
  EXPECT_TRUE(uncovered.empty()) << "rules without a sample: " << testing::PrintToString(uncovered);
  EXPECT_TRUE(unchecked.empty()) << "no pass-through factor checked: " << testing::PrintToString(unchecked);
  EXPECT_TRUE(listed_but_checked.empty()) << "listed without one, yet checked: "
                                          << testing::PrintToString(listed_but_checked);
  std::printf("pass-through: %zu (primitive, factor) pairs checked over %zu primitives\n", pairs,
              checked.size());
  // Expected count, by hand from the samples (rule_samples.h) and the factor rules (a factor
  // counts when even, shared by an operand and a result, not reduction/need-replication, major
  // in each of its dims):
  //   unary: 33 equations on [4,6] (28 + round, integer_pow, convert, the mul and erf_inv of
  //     erf_inv's argument), factors 4 and 6 each: 66;
  //   special: is_finite, nextafter, population_count, clz on [4,6]: 8;
  //   gamma: abs and floor (polygamma's order), lgamma, digamma, polygamma on [4,6]: 10;
  //   igamma: igamma, igamma_grad_a on [4,6]: 4;
  //   binary: 17 on [4,6] (16 + the mul by the broadcast scalar): 34; bits: 7 on [4,6]: 14;
  //   random: threefry2x32 on [2,3]: the 2 only: 1; iota_2x32_shape: none (no operand);
  //   sharding_constraint P("x") on [4,6]: dim 0 only (see above): 1;
  //   select/clamp: select_n, clamp, device_put, name, optimization_barrier on [4,6]: 10;
  //   shape ops: reshape [8,2048]->[2,4,2048] (2 and 2048; the 4 is minor in [8]): 2,
  //     ->[16384] (8; 2048 minor): 1, [2,3,8]->[3,2,8] (8): 1, ->[6,4,2] (2 and 4; the 2 is
  //     minor in [8]): 2, [1,3]->[3]: 0, the broadcasts/squeeze/expand_dims of [1,3]: 0 (odd),
  //     transpose [2,3,8] (8 and 2): 2, rev dim 1 of [2,3,8] (2 and 8): 2 -> 10;
  //   reductions of [4,6,2]: reduce_sum (4, 2), reduce_max (6), reduce_min (4, 6), reduce_prod
  //     (6, 2), argmax (4, 2), argmin (6, 2), cumsum (4, 6): 13;
  //   cumulative and bitwise reductions of [4,6,2]: cumprod (4, 2), cummax (6, 2), cummin (4, 6),
  //     cumlogsumexp (4, 2), reduce_and (4, 2), reduce_or (6), reduce_xor (4, 6): 13;
  //   sorting: sort of two [4,6,2] along dim 1 (4 and 2; the 6 needs replication): 2, top_k
  //     k=1 of [4,6,2] (4 and 6; the last dim is replaced): 2 -> 4;
  //   linalg: cholesky of [4,3,3] (the batch 4; the matrix dims need replication) and its
  //     symmetrization's transpose, add and mul (the 4 each): 4, the two adds of 2 I (the 4 and the
  //     2): 2, triangular_solve of [2,3,3] and [2,3,4] (the batch 2): 1, lu of [4,3,3] and its
  //     add of 2 I (the 4 each): 2, full qr of [2,3,4] (the 2): 1, eigh of [4,3,3] with its add of
  //     2 I and its symmetrization's transpose, add and mul (the 4 each): 5, reduced svd of
  //     [2,3,4] (the 2): 1 -> 16;
  //   dot_general: batched [3,4,5]x[3,5,6] (4 and 6; batch 3 odd): 2, [3,4,5]x[5,7] (4): 1 -> 3;
  //   slicing: slice, strided slice, dynamic_slice, dynamic_update_slice, concatenate, pad
  //     (the kept dim of 8 each): 6, gather [5,3] by [2,4,1] (2 and 4): 2, scatter_add (3): 0 -> 8;
  //   even sizes: broadcast, squeeze, expand_dims, scatter_add, bitcast (the 4 each): 5;
  //   windowed: reduce_window_sum/max/min, reduce_window, select_and_gather_add and
  //     select_and_scatter_add over [2,4,6,3] (the batch 2 each; the features 3 are odd): 6;
  //   convolution: NCHW [2,3,5,5]x[4,3,3,3] (batch 2, output features 4; the input features
  //     are a reduction): 2, grouped NHWC [2,5,5,4]x[3,3,2,4] (batch 2): 1 -> 3;
  //   gather/scatter batching: gather [2,8,6] by [2,4,1] (the batching pair 2, the index dim 4,
  //     the whole window 6): 3; scatter, scatter_add, scatter_mul, scatter_min, scatter_max (the
  //     batching pair 2 and the window 6 each; the index dim 4 needs replication): 10 -> 13.
  // Total 66 + 8 + 10 + 4 + 34 + 14 + 1 + 1 + 10 + 10 + 13 + 13 + 4 + 16 + 3 + 8 + 5 + 6 + 3 + 13 = 242.
  EXPECT_EQ(pairs, 242u);
}

}  // namespace
