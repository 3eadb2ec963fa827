// minijax pytree size tests: MJ_REGISTER_PYTREE structs of 13, 32 and 64 fields (past the old
// limit of 12) through flatten_with_path, jit, grad and save/load_safetensors, paths intact.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <minijax/minijax.h>

namespace mj = minijax;

struct Fields13 {
  mj::Array f00, f01, f02, f03, f04, f05, f06, f07;
  mj::Array f08, f09, f10, f11, f12;
};
MJ_REGISTER_PYTREE(Fields13, f00, f01, f02, f03, f04, f05, f06, f07, f08, f09, f10, f11, f12)
struct Fields32 {
  mj::Array f00, f01, f02, f03, f04, f05, f06, f07;
  mj::Array f08, f09, f10, f11, f12, f13, f14, f15;
  mj::Array f16, f17, f18, f19, f20, f21, f22, f23;
  mj::Array f24, f25, f26, f27, f28, f29, f30, f31;
};
MJ_REGISTER_PYTREE(Fields32, f00, f01, f02, f03, f04, f05, f06, f07, f08, f09, f10, f11, f12, f13,
                   f14, f15, f16, f17, f18, f19, f20, f21, f22, f23, f24, f25, f26, f27, f28, f29,
                   f30, f31)
struct Fields64 {
  mj::Array f00, f01, f02, f03, f04, f05, f06, f07;
  mj::Array f08, f09, f10, f11, f12, f13, f14, f15;
  mj::Array f16, f17, f18, f19, f20, f21, f22, f23;
  mj::Array f24, f25, f26, f27, f28, f29, f30, f31;
  mj::Array f32, f33, f34, f35, f36, f37, f38, f39;
  mj::Array f40, f41, f42, f43, f44, f45, f46, f47;
  mj::Array f48, f49, f50, f51, f52, f53, f54, f55;
  mj::Array f56, f57, f58, f59, f60, f61, f62, f63;
};
MJ_REGISTER_PYTREE(Fields64, f00, f01, f02, f03, f04, f05, f06, f07, f08, f09, f10, f11, f12, f13,
                   f14, f15, f16, f17, f18, f19, f20, f21, f22, f23, f24, f25, f26, f27, f28, f29,
                   f30, f31, f32, f33, f34, f35, f36, f37, f38, f39, f40, f41, f42, f43, f44, f45,
                   f46, f47, f48, f49, f50, f51, f52, f53, f54, f55, f56, f57, f58, f59, f60, f61,
                   f62, f63)

namespace {

using mj::Array;

std::string field_name(int k) { return (k < 10 ? "f0" : "f") + std::to_string(k); }

// Field k holds [k, k + 0.5] (f32[2]).
std::vector<float> field_value(int k) { return {float(k), float(k) + 0.5f}; }

std::vector<float> values(const Array& a) {
  Array f = mj::astype(a, mj::f32);
  return std::vector<float>(f.data<float>(), f.data<float>() + f.size());
}

template <class S>
S affine(const S& s) {
  return mj::tree_map([](const Array& x) { return x * 2.0 + 1.0; }, s);
}

// sum over fields k of (k + 1) * sum(field k): its gradient is k + 1 in every element of field k.
template <class S>
Array weighted_sum(const S& s) {
  std::vector<Array> l = mj::tree_flatten(s);
  Array total = mj::sum(l[0]);
  for (size_t k = 1; k < l.size(); ++k) total = total + double(k + 1) * mj::sum(l[k]);
  return total;
}

// The whole round trip of a struct of n fields; `last` is its last field, checked by name after
// each step (a registration that paired names and members wrongly would fail there).
template <class S>
void round_trip(int n, Array S::* last) {
  std::vector<Array> leaves;
  for (int k = 0; k < n; ++k) leaves.push_back(mj::array({float(k), float(k) + 0.5f}));
  const S s = mj::tree_unflatten(S{}, leaves);
  EXPECT_EQ(values(s.*last), field_value(n - 1));

  // Paths: the field names, in declaration order.
  mj::PathLeaves paths = mj::flatten_with_path(s);
  ASSERT_EQ(paths.size(), size_t(n));
  for (int k = 0; k < n; ++k) {
    EXPECT_EQ(paths[k].first, field_name(k));
    EXPECT_EQ(values(paths[k].second), field_value(k)) << field_name(k);
  }

  // jit: 2x + 1 per field (by hand: [2k + 1, 2k + 2]).
  const S y = mj::jit(&affine<S>)(s);
  std::vector<Array> ly = mj::tree_flatten(y);
  ASSERT_EQ(ly.size(), size_t(n));
  for (int k = 0; k < n; ++k) EXPECT_EQ(values(ly[k]), (std::vector<float>{2.f * k + 1, 2.f * k + 2}));
  EXPECT_EQ(values(y.*last), (std::vector<float>{2.f * (n - 1) + 1, 2.f * (n - 1) + 2}));

  // grad: d/d field k of weighted_sum = k + 1 (by hand), with the structure and paths of s.
  const S g = mj::grad(&weighted_sum<S>)(s);
  mj::PathLeaves gp = mj::flatten_with_path(g);
  ASSERT_EQ(gp.size(), size_t(n));
  for (int k = 0; k < n; ++k) {
    EXPECT_EQ(gp[k].first, field_name(k));
    EXPECT_EQ(values(gp[k].second), (std::vector<float>(2, float(k + 1)))) << field_name(k);
  }

  // save/load_safetensors: the file's tensor names are the paths; loading into the structure
  // puts each tensor back in its field.
  const std::string file = (std::filesystem::temp_directory_path() /
                            ("minijax_pytree_sizes_" + std::to_string(::getpid()) + "_" + std::to_string(n) +
                             ".safetensors"))
                               .string();
  mj::save_safetensors(file, s);
  std::map<std::string, Array> in_file = mj::load_safetensors(file);
  ASSERT_EQ(in_file.size(), size_t(n));
  for (int k = 0; k < n; ++k) {
    auto it = in_file.find(field_name(k));
    ASSERT_NE(it, in_file.end()) << field_name(k);
    EXPECT_EQ(values(it->second), field_value(k)) << field_name(k);
  }
  const S like = mj::tree_map([](const Array& x) { return mj::zeros_like(x); }, s);
  const S loaded = mj::load_safetensors(file, like);
  mj::PathLeaves lp = mj::flatten_with_path(loaded);
  ASSERT_EQ(lp.size(), size_t(n));
  for (int k = 0; k < n; ++k) {
    EXPECT_EQ(lp[k].first, field_name(k));
    EXPECT_EQ(values(lp[k].second), field_value(k)) << field_name(k);
  }
  EXPECT_EQ(values(loaded.*last), field_value(n - 1));
  std::filesystem::remove(file);
}

TEST(PytreeSizes, ThirteenFields) { round_trip<Fields13>(13, &Fields13::f12); }
TEST(PytreeSizes, ThirtyTwoFields) { round_trip<Fields32>(32, &Fields32::f31); }
TEST(PytreeSizes, SixtyFourFields) { round_trip<Fields64>(64, &Fields64::f63); }

// The structure string lists every field (tree_structure), and the field count helper the limit's
// static_assert uses counts the stringified list.
TEST(PytreeSizes, StructureAndFieldCount) {
  EXPECT_EQ(mj::tree_structure(Fields13{}), "Fields13(*, *, *, *, *, *, *, *, *, *, *, *, *)");
  static_assert(mj::detail::count_fields("a") == 1);
  static_assert(mj::detail::count_fields("a, b,c") == 3);
  EXPECT_EQ(mj::pytree<Fields64>::field_names().size(), 64u);
}

}  // namespace
