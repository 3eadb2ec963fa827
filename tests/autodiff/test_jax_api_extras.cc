// Tests of JAX API spellings: stop_gradient of a pytree and the
// checkpoint policy aliases checkpoint_dots / checkpoint_dots_with_no_batch_dims.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <minijax/minijax.h>

using minijax::Array;
namespace cp = mj::checkpoint_policies;

// lax_autodiff_test.py's testStopGradient: jax.grad(lambda x: lax.stop_gradient({'foo': x})['foo'])
// is 0; the tree keeps its structure and values; the tangent of each leaf is zero (jvp), the
// Array overload and lax's spelling are the same; jit agrees.
TEST(JaxApiExtras, StopGradientOfAPytree) {
  auto f = [](const Array& x) {
    std::map<std::string, Array> d{{"foo", x}};
    return mj::stop_gradient(d).at("foo");
  };
  EXPECT_EQ(mj::grad(f)(mj::scalar(3.0, mj::f32)).item<float>(), 0.f);
  EXPECT_EQ(f(mj::scalar(3.0, mj::f32)).item<float>(), 3.f);
  // d/dx sum(sg(x) * sg(2x) + x) = 1: only the last term is differentiated.
  auto g = [](const Array& x) {
    auto [a, b] = mj::lax::stop_gradient(std::pair{x, x * 2.0});
    return mj::sum(a * b + x);
  };
  Array x = mj::array({1.f, 2.f, 3.f});
  Array dg = mj::grad(g)(x);
  for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(dg.data<float>()[k], 1.f);
  Array djit = mj::jit(mj::grad(g))(x);
  for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(djit.data<float>()[k], 1.f);
  auto [out, tan] = mj::jvp([](const Array& v) { return mj::stop_gradient(std::vector<Array>{v, v * v}); },
                            x, mj::ones({3}));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].data<float>()[2], 9.f);
  for (const Array& t : tan)
    for (int64_t k = 0; k < t.size(); ++k) EXPECT_EQ(mj::astype(t, mj::f32).data<float>()[k], 0.f);
  // An empty leaf is the Array overload's ValueError, at this call site.
  const int line = __LINE__ + 2;
  try {
    (void)mj::stop_gradient(std::pair{x, Array()});
    ADD_FAILURE() << "no error";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("stop_gradient"), std::string::npos) << e.what();
    EXPECT_EQ(int(e.where().line()), line) << e.what();
  }
}

// jax.checkpoint_policies.checkpoint_dots is dots_saveable and checkpoint_dots_with_no_batch_dims
// is dots_with_no_batch_dims_saveable: the same objects (same name, same decisions), so a
// checkpoint with either spelling saves the same residuals.
TEST(JaxApiExtras, CheckpointPolicyAliasesAreJaxs) {
  EXPECT_EQ(cp::checkpoint_dots(), cp::dots_saveable());
  EXPECT_EQ(cp::checkpoint_dots_with_no_batch_dims(), cp::dots_with_no_batch_dims_saveable());
  EXPECT_EQ(cp::checkpoint_dots()->str(), "dots_saveable");
  auto f = [](const mj::PolicyPtr& p) {
    return mj::checkpoint([](const Array& w) { return mj::sin(mj::matmul(mj::sin(mj::matmul(w, w)), w)); },
                          {.policy = p});
  };
  Array w = mj::reshape(mj::arange(0, 9, 1, mj::f32), {3, 3}) * 0.1;
  auto a = mj::saved_residuals(f(cp::checkpoint_dots()), w);
  auto b = mj::saved_residuals(f(cp::dots_saveable()), w);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_GE(a.size(), 3u);  // w and the two dot outputs
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].description, b[i].description);
}
