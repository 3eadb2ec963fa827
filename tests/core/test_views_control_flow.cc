// minijax tests of the control-flow and call typed views (core/views/control_flow.h) and of the
// body facts (core/bodies.h): round trips over traced and parsed jaxprs, errors, subjaxprs.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "core/bodies.h"
#include "core/parser.h"
#include "core/views/control_flow.h"
#include "jit/passes/fuse.h"

namespace {
using mj::Array;
using mj::ClosedJaxpr;
using mj::Eqn;
using mj::Jaxpr;
using mj::Params;

// Every equation of `j`, nested bodies included (depth first).
void each_eqn(const Jaxpr& j, const std::function<void(const Eqn&)>& f) {
  for (const Eqn& e : j.eqns) {
    f(e);
    for (const mj::SubJaxpr& s : mj::subjaxprs(e)) each_eqn(*s.jaxpr->jaxpr, f);
  }
}

// Round-trips every control-flow or call equation of `j` through its view; returns how many
// equations of each kind were seen (scan, while, cond, call, name).
std::vector<int> round_trip_all(const Jaxpr& j) {
  std::vector<int> seen(5, 0);
  each_eqn(j, [&](const Eqn& e) {
    const std::string what = e.primitive->name;
    if (mj::ScanParams::is(e)) {
      ++seen[0];
      EXPECT_TRUE(mj::ScanParams::from(e.params).to_params() == e.params) << what;
    } else if (mj::WhileParams::is(e)) {
      ++seen[1];
      EXPECT_TRUE(mj::WhileParams::from(e.params).to_params() == e.params) << what;
    } else if (mj::CondParams::is(e)) {
      ++seen[2];
      EXPECT_TRUE(mj::CondParams::from(e.params).to_params() == e.params) << what;
    } else if (mj::CallParams::is(e)) {
      ++seen[3];
      EXPECT_TRUE(mj::call_params(e).to_params() == e.params) << what;
    } else if (mj::CheckpointNameParams::is(e)) {
      ++seen[4];
      EXPECT_TRUE(mj::checkpoint_name_params(e).to_params() == e.params) << what;
    }
  });
  return seen;
}

// One program with every control-flow and call primitive the user API binds.
Array program(const Array& x) {
  auto cj = mj::custom_jvp([](const Array& v) { return mj::sin(v); },
                           [](const auto& p, const auto& t) {
                             auto [v] = p;
                             auto [dv] = t;
                             return std::pair{mj::sin(v), mj::cos(v) * dv};
                           },
                           "csin");
  auto cv = mj::custom_vjp([](const Array& v) { return v * v; },
                           [](const Array& v) { return std::pair{v * v, v}; },
                           [](const Array& r, const Array& ct) { return std::tuple{2.0 * r * ct}; }, "sq");
  auto step = mj::checkpoint([](const Array& c, const Array& xi) {
    Array y = mj::checkpoint_name(mj::sin(c) * xi, "y");
    return std::pair{c + y, y};
  });
  Array s = mj::scan(step, mj::sum(x), x).first;
  // The loop's carry does not depend on x (its limit does): grad of the program needs no
  // transpose of while.
  Array w = s + mj::while_loop([&](const Array& v) { return v < s; }, [](const Array& v) { return v + 3.0; },
                               mj::scalar(1.0f));
  Array c = mj::cond(w > 0.0, [](const Array& v) { return v * 2.0; }, [](const Array& v) { return -v; }, w);
  Array f = mj::fori_loop(0, 3, [](const Array&, const Array& v) { return v * 0.5; }, c);
  Array j = mj::jit([](const Array& v) { return mj::exp(v); }, "inner")(f);
  Array k = mj::closed_call([](const Array& v) { return v + 1.0; }, "named")(j);
  return cv(cj(k));
}

TEST(ControlFlowViews, RoundTripTracedPrograms) {
  Array x = mj::array({0.5f, -1.0f, 1.5f});
  ClosedJaxpr j = mj::make_jaxpr(program)(x);
  std::vector<int> seen = round_trip_all(*j.jaxpr);
  EXPECT_GE(seen[0], 2);  // scan and fori_loop's scan
  EXPECT_GE(seen[1], 1);
  EXPECT_GE(seen[2], 1);
  EXPECT_GE(seen[3], 5);  // checkpoint, pjit, closed_call, custom_jvp_call, custom_vjp_call
  EXPECT_GE(seen[4], 1);
  // Under grad: the transposed and partially evaluated scans, calls and checkpoints.
  ClosedJaxpr g = mj::make_jaxpr(mj::grad([](const Array& v) { return program(v); }))(x);
  std::vector<int> gseen = round_trip_all(*g.jaxpr);
  EXPECT_GE(gseen[0], 2);
  EXPECT_GE(gseen[3], 2);
  // Fusion equations (plain calls with kind and name).
  Jaxpr fused = mj::fuse(*mj::make_jaxpr([](const Array& v) { return mj::exp(mj::sin(v) * 2.0); })(x).jaxpr);
  int fusions = 0;
  each_eqn(fused, [&](const Eqn& e) {
    if (!mj::CallParams::is(e)) return;
    ++fusions;
    mj::CallParams c = mj::call_params(e);
    EXPECT_TRUE(c.kind.has_value());
    EXPECT_TRUE(c.to_params() == e.params);
  });
  EXPECT_GE(fusions, 1);
}

// Printed by minijax (JAX's form) and parsed back: every view round-trips the parsed params.
const char* kGolden = R"({ lambda ; a:f32[3] b:f32[]. let
    c:f32[] d:f32[3] = scan[
      _split_transpose=False
      jaxpr={ lambda ; e:f32[] f:f32[]. let g:f32[] = add e f in (g, g) }
      length=3
      linear=(0, 0)
      num_carry=1
      num_consts=0
      reverse=False
      unroll=1
    ] b a
    h:f32[] = while[
      body_jaxpr={ lambda ; i:f32[]. let j:f32[] = add i 3.0:f32[] in (j,) }
      body_nconsts=0
      cond_jaxpr={ lambda ; k:f32[]. let l:bool[] = lt k 10.0:f32[] in (l,) }
      cond_nconsts=0
    ] c
    m:bool[] = gt h 0.0:f32[]
    n:i32[] = convert_element_type[new_dtype=int32 weak_type=False] m
    o:f32[] = cond[
      branches=(
        { lambda ; p:f32[]. let q:f32[] = neg p in (q,) }
        { lambda ; r:f32[]. let s:f32[] = mul r 2.0:f32[] in (s,) }
      )
    ] n h
    t:f32[] = pjit[name=inner jaxpr={ lambda ; u:f32[]. let v:f32[] = exp u in (v,) }] o
    w:f32[] = closed_call[call_jaxpr={ lambda ; x:f32[]. let y:f32[] = sin x in (y,) } name=named] t
    z:f32[] = checkpoint[
      differentiated=False
      jaxpr={ lambda ; ba:f32[]. let bb:f32[] = name[name=y] ba in (bb,) }
      policy=None
      prevent_cse=True
    ] w
  in (z, d) })";

TEST(ControlFlowViews, RoundTripParsedGolden) {
  ClosedJaxpr j = mj::parse_jaxpr(kGolden);
  std::vector<int> seen = round_trip_all(*j.jaxpr);
  EXPECT_EQ(seen, (std::vector<int>{1, 1, 1, 3, 1}));
  // And the printed form of a traced program, parsed back.
  Array x = mj::array({0.5f, -1.0f, 1.5f});
  auto noncustom = [](const Array& v) {
    Array s = mj::scan([](const Array& c, const Array& xi) { return std::pair{c + xi, c * xi}; }, mj::sum(v), v).first;
    return mj::jit([](const Array& a) { return mj::fori_loop(0, 2, [](const Array&, const Array& b) { return b + 1.0; }, a); })(s);
  };
  ClosedJaxpr p = mj::parse_jaxpr(mj::to_string(mj::make_jaxpr(noncustom)(x)));
  std::vector<int> pseen = round_trip_all(*p.jaxpr);
  EXPECT_GE(pseen[0], 2);
  EXPECT_GE(pseen[3], 1);
}

// A missing or wrong-typed param is a ValueError naming the primitive and the param.
void expect_value_error(const std::function<void()>& f, const std::string& prim, const std::string& param) {
  try {
    f();
    ADD_FAILURE() << "expected ValueError for " << prim << "." << param;
  } catch (const mj::ValueError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(prim + ":"), std::string::npos) << m;
    EXPECT_NE(m.find("'" + param + "'"), std::string::npos) << m;
  }
}

TEST(ControlFlowViews, MissingOrWrongTypedParamNamesPrimitiveAndParam) {
  ClosedJaxpr j = mj::parse_jaxpr(kGolden);
  const Eqn& scan = j.jaxpr->eqns[0];
  const Eqn& wl = j.jaxpr->eqns[1];
  const Eqn& cond = j.jaxpr->eqns[4];
  const Eqn& pjit = j.jaxpr->eqns[5];
  auto without = [](Params p, const std::string& k) {
    Params q;
    for (auto& [key, v] : p.items())
      if (key != k) q.set(key, v);
    return q;
  };
  auto with = [](Params p, const std::string& k, mj::Param v) {
    p.set(k, std::move(v));
    return p;
  };
  expect_value_error([&] { (void)mj::ScanParams::from(without(scan.params, "num_carry")); }, "scan", "num_carry");
  expect_value_error([&] { (void)mj::ScanParams::from(with(scan.params, "reverse", int64_t(1))); }, "scan", "reverse");
  expect_value_error([&] { (void)mj::ScanParams::from(with(scan.params, "length", true)); }, "scan", "length");
  expect_value_error([&] { (void)mj::WhileParams::from(without(wl.params, "body_jaxpr")); }, "while", "body_jaxpr");
  expect_value_error([&] { (void)mj::WhileParams::from(with(wl.params, "cond_nconsts", std::string("x"))); }, "while",
                     "cond_nconsts");
  expect_value_error([&] { (void)mj::CondParams::from(with(cond.params, "branches", int64_t(2))); }, "cond", "branches");
  expect_value_error([&] { (void)mj::CallParams::from(*pjit.primitive, without(pjit.params, "jaxpr")); }, "pjit",
                     "jaxpr");
  expect_value_error([&] { (void)mj::CallParams::from(*pjit.primitive, with(pjit.params, "name", int64_t(3))); },
                     "pjit", "name");
  expect_value_error([&] { (void)mj::CheckpointNameParams::from(Params{}); }, "name", "name");
  // The check registered on each primitive is the view's.
  expect_value_error([&] { scan.primitive->check_params(without(scan.params, "length")); }, "scan", "length");
  expect_value_error([&] { mj::primitive("closed_call").check_params(Params{}); }, "closed_call", "call_jaxpr");
  // A view asked of another primitive's equation.
  EXPECT_THROW((void)mj::scan_params(wl), mj::ValueError);
  EXPECT_THROW((void)mj::call_params(scan), mj::ValueError);
}

TEST(ControlFlowViews, SubjaxprsAndLayoutOfEachKind) {
  ClosedJaxpr j = mj::parse_jaxpr(kGolden);
  const auto& eqns = j.jaxpr->eqns;
  auto labels = [](const Eqn& e) {
    std::vector<std::string> r;
    for (const mj::SubJaxpr& s : mj::subjaxprs(e)) r.push_back(s.label());
    return r;
  };
  EXPECT_EQ(labels(eqns[0]), (std::vector<std::string>{"jaxpr"}));
  EXPECT_EQ(labels(eqns[1]), (std::vector<std::string>{"cond_jaxpr", "body_jaxpr"}));
  EXPECT_EQ(labels(eqns[4]), (std::vector<std::string>{"branches[0]", "branches[1]"}));
  EXPECT_EQ(labels(eqns[5]), (std::vector<std::string>{"jaxpr"}));
  EXPECT_EQ(labels(eqns[6]), (std::vector<std::string>{"call_jaxpr"}));
  EXPECT_EQ(labels(eqns[7]), (std::vector<std::string>{"jaxpr"}));
  EXPECT_TRUE(labels(eqns[2]).empty());  // gt: no bodies
  // Layouts: scan consts | carry | xs; while cond_consts | body_consts | carry; cond index | operands.
  mj::BodyLayout s = mj::body_layout(eqns[0]);
  EXPECT_EQ(s.form, mj::BodyForm::scan);
  EXPECT_EQ(s.carry_begin(), 0u);
  EXPECT_EQ(s.xs_begin(), 1u);
  EXPECT_EQ(s.num_xs, 1u);
  EXPECT_EQ(s.loop_back(0), (std::vector<size_t>{0, mj::kNoSlot}));
  mj::BodyLayout w = mj::body_layout(eqns[1]);
  EXPECT_EQ(w.form, mj::BodyForm::while_loop);
  EXPECT_EQ(w.num_carry, 1u);
  EXPECT_EQ(w.body_results(0), (std::vector<size_t>{mj::kNoSlot}));  // the predicate
  mj::BodyLayout c = mj::body_layout(eqns[4]);
  EXPECT_EQ(c.num_index, 1u);
  EXPECT_EQ(c.body_inputs(1), (std::vector<size_t>{1}));
  for (size_t i : {5, 6, 7}) {
    EXPECT_TRUE(eqns[i].primitive->plain_call()) << eqns[i].primitive->name;
    EXPECT_EQ(mj::body_layout(eqns[i]).body_inputs(0), (std::vector<size_t>{0}));
  }
  for (const char* n : {"custom_jvp_call", "custom_vjp_call", "fusion"})
    EXPECT_TRUE(mj::primitive(n).plain_call()) << n;
  EXPECT_FALSE(mj::primitive("scan").plain_call());
}

}  // namespace
