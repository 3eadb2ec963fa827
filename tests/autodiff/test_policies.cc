// Tests of the remat policies: decisions, printing and identity, errors (a custom policy's at the
// user's line), a custom offloading policy's gradient against float64 central differences, and
// the structure of the linear jaxpr each one produces (what is saved, recomputed or offloaded).
#include <gtest/gtest.h>

#include <functional>
#include <minijax/minijax.h>
#include <string>

#include "finite_differences.h"

namespace {

namespace cp = mj::checkpoint_policies;
using mj::Array;
using fdtest::expect_close;
using fdtest::fd_grad;
using fdtest::rnd64;

const mj::Primitive& P(const char* n) { return mj::primitive(n); }
mj::Params named(const std::string& n) { return mj::Params{{"name", n}}; }
bool saves(const mj::PolicyPtr& p, const char* prim, const mj::Params& ps = {}) {
  return std::holds_alternative<mj::Saveable>((*p)(P(prim), {}, ps));
}

// The file name of a call site, without its directory.
std::string base_name(const char* path) {
  std::string s(path);
  return s.substr(s.find_last_of('/') + 1);
}

// A checkpointed sin(sin(x)) under `policy`, summed: grad asks the policy about both sins.
std::function<Array(const Array&)> checkpointed_loss(const mj::PolicyPtr& policy) {
  return [policy](const Array& x) {
    auto body = mj::checkpoint([](const Array& a) { return mj::sin(mj::sin(a)); },
                               {.policy = policy});
    return mj::sum(body(x));
  };
}

mj::PolicyDecision offload_to(mj::MemoryKind src, mj::MemoryKind dst) {
  return mj::Offloadable{src, dst};
}

TEST(Policies, Decisions) {
  mj::Params dot = mj::lax::dot_general_params({{1}, {0}, {}, {}}, mj::f32);
  mj::Params bdot = mj::lax::dot_general_params({{2}, {1}, {0}, {0}}, mj::f32);
  EXPECT_TRUE(saves(cp::everything_saveable(), "sin"));
  EXPECT_FALSE(saves(cp::nothing_saveable(), "dot_general", dot));
  EXPECT_TRUE(saves(cp::dots_saveable(), "dot_general", bdot));
  EXPECT_FALSE(saves(cp::dots_saveable(), "sin"));
  EXPECT_TRUE(saves(cp::dots_with_no_batch_dims_saveable(), "dot_general", dot));
  EXPECT_FALSE(saves(cp::dots_with_no_batch_dims_saveable(), "dot_general", bdot));
  auto off = cp::offload_dot_with_no_batch_dims("device", "pinned_host");
  EXPECT_TRUE(std::holds_alternative<mj::Offloadable>((*off)(P("dot_general"), {}, dot)));
  EXPECT_TRUE(std::holds_alternative<mj::Recompute>((*off)(P("dot_general"), {}, bdot)));
  EXPECT_TRUE(saves(cp::save_only_these_names({"a"}), "name", named("a")));
  EXPECT_FALSE(saves(cp::save_only_these_names({"a"}), "name", named("b")));
  EXPECT_FALSE(saves(cp::save_only_these_names({"a"}), "sin"));
  EXPECT_FALSE(saves(cp::save_any_names_but_these({"a"}), "name", named("a")));
  EXPECT_TRUE(saves(cp::save_any_names_but_these({"a"}), "name", named("b")));
  EXPECT_FALSE(saves(cp::save_any_names_but_these({"a"}), "sin"));
  EXPECT_FALSE(saves(cp::save_anything_except_these_names({"a"}), "name", named("a")));
  EXPECT_TRUE(saves(cp::save_anything_except_these_names({"a"}), "sin"));
  auto so = cp::save_and_offload_only_these_names({"s"}, {"o"}, mj::MemoryKind::device, "pinned_host");
  EXPECT_TRUE(saves(so, "name", named("s")));
  auto d = (*so)(P("name"), {}, named("o"));
  ASSERT_TRUE(std::holds_alternative<mj::Offloadable>(d));
  EXPECT_EQ(std::get<mj::Offloadable>(d).dst, mj::MemoryKind::pinned_host);
  EXPECT_TRUE(std::holds_alternative<mj::Recompute>((*so)(P("sin"), {}, {})));
  auto both = cp::save_from_both_policies(cp::dots_saveable(), cp::save_only_these_names({"a"}));
  EXPECT_TRUE(saves(both, "dot_general", dot));
  EXPECT_TRUE(saves(both, "name", named("a")));
  EXPECT_FALSE(saves(both, "sin"));
}

TEST(Policies, PrintingAndIdentity) {
  EXPECT_EQ(cp::save_only_these_names({"b", "a"})->str(), "save_only_these_names('a', 'b')");
  EXPECT_EQ(cp::save_and_offload_only_these_names({}, {"save_remat"}, "device", "pinned_host")->str(),
            "save_and_offload_only_these_names(names_which_can_be_saved=(), "
            "names_which_can_be_offloaded=('save_remat',), offload_src='device', offload_dst='pinned_host')");
  EXPECT_TRUE(cp::save_only_these_names({"a"})->equals(*cp::save_only_these_names({"a"})));
  EXPECT_FALSE(cp::save_only_these_names({"a"})->equals(*cp::save_only_these_names({"b"})));
  auto fn = [](const mj::Primitive&, const std::vector<mj::ShapedArray>&, const mj::Params&) -> mj::PolicyDecision {
    return mj::Saveable{};
  };
  auto c1 = cp::custom("my_policy", fn), c2 = cp::custom("my_policy", fn);
  EXPECT_EQ(c1->str(), "my_policy");
  EXPECT_TRUE(c1->equals(*c1));
  EXPECT_FALSE(c1->equals(*c2));  // callbacks compare by identity
  auto f = mj::checkpoint([](const Array& v) { return mj::sin(v); }, {.policy = c1});
  std::string s = mj::to_string(mj::make_jaxpr(f)(mj::ones({2}, mj::f32)));
  EXPECT_NE(s.find("policy=my_policy"), std::string::npos) << s;
}

TEST(Policies, Errors) {
  try {
    cp::save_and_offload_only_these_names({"a", "b"}, {"b", "c"}, "device", "pinned_host");
    FAIL();
  } catch (const mj::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("intersection ('b',)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cp::save_and_offload_only_these_names({}, {"a"}, "device", "pinned_hots"), mj::ValueError);
  EXPECT_THROW(cp::offload_dot_with_no_batch_dims("gpu", "pinned_host"), mj::ValueError);
  EXPECT_THROW(cp::save_from_both_policies(cp::offload_dot_with_no_batch_dims("device", "pinned_host"),
                                           cp::dots_saveable()),
               mj::ValueError);
  // A custom policy offloading to an unknown memory kind: a trace-time error naming the policy
  // and the equation.
  auto bad = cp::custom("to_nowhere", [](const mj::Primitive& p, const std::vector<mj::ShapedArray>&,
                                         const mj::Params&) -> mj::PolicyDecision {
    if (p.name == "sin") return mj::Offloadable{mj::MemoryKind::device, mj::MemoryKind(42)};
    return mj::Recompute{};
  });
  auto f = mj::checkpoint([](const Array& v) { return mj::sin(mj::sin(v)); }, {.policy = bad});
  try {
    mj::grad([&](const Array& v) { return mj::sum(f(v)); })(mj::ones({2}, mj::f32));
    FAIL();
  } catch (const mj::ValueError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("to_nowhere"), std::string::npos) << m;
    EXPECT_NE(m.find("sin(f32[2])"), std::string::npos) << m;
  }
  // save_from_both_policies with a callback that offloads: rejected when asked.
  auto offl = cp::custom("offl", [](const mj::Primitive&, const std::vector<mj::ShapedArray>&,
                                    const mj::Params&) -> mj::PolicyDecision { return mj::Offloadable{}; });
  auto both = cp::save_from_both_policies(offl, cp::dots_saveable());
  auto g = mj::checkpoint([](const Array& v) { return mj::sin(mj::sin(v)); }, {.policy = both});
  EXPECT_THROW(mj::grad([&](const Array& v) { return mj::sum(g(v)); })(mj::ones({2}, mj::f32)), mj::ValueError);
}

// A custom policy returning an invalid Offloadable is reported when grad asks it, naming the
// policy and the equation, at the user's line that made the policy (the equations of a body
// carry no source location).
TEST(Policies, InvalidCustomPolicyDecisionReportsTheUsersLine) {
  const int line = __LINE__ + 1;
  auto bad_kind = cp::custom("bad_kind", [](const mj::Primitive&, const std::vector<mj::ShapedArray>&, const mj::Params&) { return offload_to(mj::MemoryKind::device, mj::MemoryKind(42)); });
  const int same_line = __LINE__ + 1;
  auto same = cp::custom("same_kind", [](const mj::Primitive&, const std::vector<mj::ShapedArray>&, const mj::Params&) { return offload_to(mj::MemoryKind::device, mj::MemoryKind::device); });
  Array x = rnd64({3}, 1);
  try {
    mj::grad(checkpointed_loss(bad_kind))(x);
    FAIL() << "an Offloadable with an unknown memory kind was accepted";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(e.message().find("bad_kind"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("unknown memory kind"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("sin(f64[3])"), std::string::npos) << e.what();
    EXPECT_EQ(base_name(e.where().file_name()), "test_policies.cc") << e.what();
    EXPECT_EQ(int(e.where().line()), line) << e.what();
  }
  try {
    mj::grad(checkpointed_loss(same))(x);
    FAIL() << "an Offloadable from device to device was accepted";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(e.message().find("same_kind"), std::string::npos) << e.what();
    EXPECT_EQ(base_name(e.where().file_name()), "test_policies.cc") << e.what();
    EXPECT_EQ(int(e.where().line()), same_line) << e.what();
  }
}

// An empty callback, and a callback that offloads inside save_from_both_policies, are
// reported at the user's line too.
TEST(Policies, CustomAndSaveFromBothErrorsReportTheUsersLine) {
  const int empty_line = __LINE__ + 2;
  try {
    cp::custom("empty", nullptr);
    FAIL() << "an empty callback was accepted";
  } catch (const mj::ValueError& e) {
    EXPECT_EQ(base_name(e.where().file_name()), "test_policies.cc") << e.what();
    EXPECT_EQ(int(e.where().line()), empty_line) << e.what();
  }
  auto offloads = cp::custom("offloads", [](const mj::Primitive&, const std::vector<mj::ShapedArray>&, const mj::Params&) { return offload_to(mj::MemoryKind::device, mj::MemoryKind::pinned_host); });
  const int both_line = __LINE__ + 1;
  auto both = cp::save_from_both_policies(cp::dots_saveable(), offloads);
  try {
    mj::grad(checkpointed_loss(both))(rnd64({3}, 2));
    FAIL() << "save_from_both_policies accepted an Offloadable decision";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(e.message().find("save_from_both_policies(dots_saveable, offloads)"),
              std::string::npos) << e.what();
    EXPECT_EQ(base_name(e.where().file_name()), "test_policies.cc") << e.what();
    EXPECT_EQ(int(e.where().line()), both_line) << e.what();
  }
}

// A valid custom offloading policy still differentiates correctly: d/dx sum(sin(sin(x))) =
// cos(sin(x)) cos(x), checked against finite differences.
TEST(Policies, ValidCustomOffloadPolicyGradient) {
  auto offloads = cp::custom("offload_all", [](const mj::Primitive&, const std::vector<mj::ShapedArray>&, const mj::Params&) { return offload_to(mj::MemoryKind::device, mj::MemoryKind::pinned_host); });
  auto f = checkpointed_loss(offloads);
  Array x = rnd64({4}, 3);
  expect_close(mj::grad(f)(x), fd_grad([](const Array& a) { return mj::sum(mj::sin(mj::sin(a))); }, x),
               1e-7);
}

// The linear jaxpr of grad(sum(checkpoint(f))) for f = sin(W @ x) (x fixed, W differentiated).
mj::ClosedJaxpr linear_of(mj::PolicyPtr p) {
  Array w = mj::reshape(mj::arange(6, mj::f32), {2, 3}) * 0.1f, x = mj::array({1.f, 2.f, 3.f});
  auto f = mj::checkpoint([](const Array& ww, const Array& xx) {
    return mj::sin(mj::checkpoint_name(mj::matmul(ww, xx), "h"));
  }, {.policy = p});
  auto lr = mj::linearize_flat([&](const std::vector<Array>& a) { return std::vector<Array>{mj::sum(f(a[0], x))}; }, {w});
  return lr.linear;
}

int count(const std::string& s, const std::string& sub) {
  int n = 0;
  for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + 1)) ++n;
  return n;
}

TEST(Policies, StructureOfTheLinearJaxpr) {
  // nothing_saveable: the residuals are only the inputs (w, x); the staged checkpoint recomputes
  // the matmul and sin (cos) behind an optimization_barrier.
  auto n = linear_of(cp::nothing_saveable());
  std::string sn = mj::to_string(n);
  ASSERT_EQ(n.consts.size(), 2u) << sn;
  EXPECT_EQ(n.consts[0].shape().size() + n.consts[1].shape().size(), 3u) << sn;  // [2,3] and [3]
  EXPECT_NE(sn.find("differentiated=True"), std::string::npos) << sn;
  EXPECT_NE(sn.find("optimization_barrier"), std::string::npos) << sn;
  EXPECT_NE(sn.find("cos"), std::string::npos) << sn;
  EXPECT_EQ(count(sn, "dot_general["), 2) << sn;  // recomputed forward dot + the tangent dot
  // dots_saveable: the dot output is saved (a residual of shape [2]); no dot is recomputed.
  auto d = linear_of(cp::dots_saveable());
  std::string sd = mj::to_string(d);
  bool has_dot_out = false;
  for (auto& c : d.consts) has_dot_out |= c.shape() == mj::Shape{2};
  EXPECT_TRUE(has_dot_out) << sd;
  EXPECT_EQ(count(sd, "dot_general["), 1) << sd;  // only the tangent dot
  // save_and_offload_only_these_names: the named value is a pinned_host residual, brought back
  // with a device_put inside the staged checkpoint.
  auto o = linear_of(cp::save_and_offload_only_these_names({}, {"h"}, "device", "pinned_host"));
  std::string so = mj::to_string(o);
  int pinned = 0;
  for (auto& c : o.consts) pinned += c.aval().memory_kind == mj::MemoryKind::pinned_host;
  EXPECT_EQ(pinned, 1) << so;
  EXPECT_NE(so.find("device_put[memory_kind=device]"), std::string::npos) << so;
  EXPECT_EQ(count(so, "dot_general["), 1) << so;  // the dot is not recomputed
}

}  // namespace
