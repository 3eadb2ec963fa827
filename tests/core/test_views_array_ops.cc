// minijax typed views of the array primitives (core/views/array_ops.h): bad params are a
// ValueError naming the primitive and the param; views read equations of their primitive only.
#include <gtest/gtest.h>

#include <minijax/minijax.h>

#include "core/lax.h"
#include "core/gather_scatter_params.h"
#include "core/views/array_ops.h"

namespace {

using mj::Params;

// The message of the ValueError `f` throws ("" if it throws none).
template <class F>
std::string value_error(F&& f) {
  try {
    f();
  } catch (const mj::ValueError& e) {
    return e.what();
  }
  return "";
}

// The only equation of the jaxpr of `f` on `args`.
mj::Eqn only_eqn(const std::function<mj::Array(const std::vector<mj::Array>&)>& f, const std::vector<mj::Array>& args) {
  mj::FlatFn g = [&](const std::vector<mj::Array>& a) { return std::vector<mj::Array>{f(a)}; };
  mj::ClosedJaxpr cj = mj::make_jaxpr(g)(args);
  EXPECT_EQ(cj.jaxpr->eqns.size(), 1u);
  return cj.jaxpr->eqns.at(0);
}

}  // namespace

TEST(ArrayOpViews, MissingOrWrongTypedParamIsValueErrorNamingPrimitiveAndParam) {
  // Missing key.
  std::string m = value_error([] { mj::SliceParams::from(Params{{"limit_indices", std::vector<int64_t>{1}}}); });
  EXPECT_NE(m.find("slice"), std::string::npos) << m;
  EXPECT_NE(m.find("start_indices"), std::string::npos) << m;
  // Wrong type.
  m = value_error([] { mj::ConcatenateParams::from(Params{{"dimension", std::string("x")}}); });
  EXPECT_NE(m.find("concatenate"), std::string::npos) << m;
  EXPECT_NE(m.find("dimension"), std::string::npos) << m;
  // A None-or-tuple param of another type.
  m = value_error([] {
    mj::SliceParams::from(Params{{"start_indices", std::vector<int64_t>{0}},
                                 {"limit_indices", std::vector<int64_t>{1}},
                                 {"strides", int64_t(2)}});
  });
  EXPECT_NE(m.find("slice"), std::string::npos) << m;
  EXPECT_NE(m.find("strides"), std::string::npos) << m;
  // Through the primitive's check_params (what the parser calls), naming that family member.
  const mj::Primitive& rmax = mj::primitive("reduce_max");
  ASSERT_TRUE(rmax.check_params);
  m = value_error([&] { rmax.check_params(Params{}); });
  EXPECT_NE(m.find("reduce_max"), std::string::npos) << m;
  EXPECT_NE(m.find("axes"), std::string::npos) << m;
  const mj::Primitive& dot = mj::primitive("dot_general");
  ASSERT_TRUE(dot.check_params);
  m = value_error([&] { dot.check_params(Params{{"dimension_numbers", std::vector<int64_t>{1}}}); });
  EXPECT_NE(m.find("dot_general"), std::string::npos) << m;
  EXPECT_NE(m.find("dimension_numbers"), std::string::npos) << m;
  m = value_error([] {
    mj::GatherParams::from(Params{{"dimension_numbers", mj::lax::gather_dimension_numbers_param({{}, {0}, {0}, {}, {}})},
                                  {"slice_sizes", std::vector<int64_t>{1}},
                                  {"mode", int64_t(0)}});
  });
  EXPECT_NE(m.find("gather"), std::string::npos) << m;
  EXPECT_NE(m.find("mode"), std::string::npos) << m;
}

TEST(ArrayOpViews, EveryArrayOpPrimitiveChecksItsParams) {
  for (const std::string& n : mj::views::array_op_primitive_names())
    EXPECT_TRUE(mj::primitive(n).check_params) << n << " has no check_params";
}

TEST(ArrayOpViews, AccessorReadsItsPrimitiveOnly) {
  mj::Array x = mj::lax::iota(mj::f32, {2, 3}, 1);
  mj::Eqn e = only_eqn([](const std::vector<mj::Array>& a) { return mj::lax::slice(a[0], {0, 1}, {2, 3}, {1, 2}); },
                       {x});
  EXPECT_TRUE(mj::SliceParams::is(e));
  EXPECT_FALSE(mj::DynamicSliceParams::is(e));
  mj::SliceParams s = mj::slice_params(e);
  EXPECT_EQ(s.start_indices, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(s.limit_indices, (std::vector<int64_t>{2, 3}));
  ASSERT_TRUE(s.strides.has_value());
  EXPECT_EQ(*s.strides, (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(s.to_params() == e.params);
  std::string m = value_error([&] { mj::dynamic_slice_params(e); });
  EXPECT_NE(m.find("DynamicSliceParams"), std::string::npos) << m;
  EXPECT_NE(m.find("slice"), std::string::npos) << m;
  // A family view: argmax/argmin share one, reduce_* another.
  mj::Eqn a = only_eqn([](const std::vector<mj::Array>& v) { return mj::lax::argmin(v[0], 1, mj::DType::u32); }, {x});
  EXPECT_TRUE(mj::ArgReduceParams::is(a));
  EXPECT_FALSE(mj::ReduceParams::is(a));
  EXPECT_EQ(mj::arg_reduce_params(a).index_dtype, mj::DType::u32);
  EXPECT_EQ(mj::reduction_axes(a), (std::vector<int64_t>{1}));
  EXPECT_NE(value_error([&] { mj::reduce_params(a); }).find("argmin"), std::string::npos);
}
