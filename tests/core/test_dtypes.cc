// Tests of dtype promotion vs JAX's documented table (JEP 9407, x64 off: 64-bit results become
// their 32-bit types) and of the weak typing of C++ scalars in operators.
#include <gtest/gtest.h>

#include <minijax/minijax.h>

namespace {

using namespace minijax;

struct Case {
  WeakDType a, b, want;
};

// Strong types and the weak scalars of Python/C++ literals (i* = weak int, f* = weak float).
constexpr WeakDType B{bool_, false}, I32{i32, false}, U32{u32, false}, BF16{bf16, false},
    F32{f32, false}, F64{f64, false}, WI{i32, true}, WF{f32, true};

std::string name(WeakDType w) { return std::string(dtype_name(w.dtype)) + (w.weak ? "*" : ""); }

TEST(DTypePromotion, JaxTable) {
  // Rows of JAX's promotion table restricted to our dtypes. Each pair is checked both ways.
  const Case cases[] = {
      {B, B, B},       {B, I32, I32},    {B, U32, U32},     {B, BF16, BF16},  {B, F32, F32},
      {B, F64, F64},   {B, WI, WI},      {B, WF, WF},       {I32, I32, I32},  {I32, U32, I32},
      {I32, BF16, BF16}, {I32, F32, F32}, {I32, F64, F64},  {I32, WI, I32},   {I32, WF, WF},
      {U32, U32, U32}, {U32, BF16, BF16}, {U32, F32, F32},  {U32, F64, F64},  {U32, WI, U32},
      {U32, WF, WF},   {BF16, BF16, BF16}, {BF16, F32, F32}, {BF16, F64, F64}, {BF16, WI, BF16},
      {BF16, WF, BF16}, {F32, F32, F32},  {F32, F64, F64},  {F32, WI, F32},   {F32, WF, F32},
      {F64, F64, F64}, {F64, WI, F64},    {F64, WF, F64},   {WI, WI, WI},     {WI, WF, WF},
      {WF, WF, WF},
  };
  for (const auto& c : cases) {
    for (bool swap : {false, true}) {
      WeakDType r = swap ? promote_types(c.b, c.a) : promote_types(c.a, c.b);
      EXPECT_EQ(r.dtype, c.want.dtype) << name(c.a) << " + " << name(c.b);
      EXPECT_EQ(r.weak, c.want.weak) << name(c.a) << " + " << name(c.b);
    }
  }
}

TEST(DTypePromotion, RejectsFloat0AndTokens) {
  EXPECT_THROW(promote_types({float0, false}, F32), TypeError);
  EXPECT_THROW(promote_types(F32, {DType::token, false}), TypeError);
}

TEST(DTypePromotion, ScalarOperandsAreWeak) {
  // x * 2.0 keeps x's dtype; i32 * 2.0 is a weak f32; bf16 + 1 stays bf16.
  Array x = ones({2}, f32), i = ones({2}, i32), h = ones({2}, bf16), d = ones({2}, f64);
  EXPECT_EQ((x * 2.0).dtype(), f32);
  EXPECT_FALSE((x * 2.0).weak_type());
  EXPECT_EQ((d * 2.0).dtype(), f64);
  Array r = i * 2.0;
  EXPECT_EQ(r.dtype(), f32);
  EXPECT_TRUE(r.weak_type());
  EXPECT_EQ((h + 1).dtype(), bf16);
  EXPECT_EQ((i + 1).dtype(), i32);
  EXPECT_EQ((x + i).dtype(), f32);
  EXPECT_EQ((x + d).dtype(), f64);
}

TEST(DTypes, NamesAndSizes) {
  EXPECT_EQ(dtype_from_name("float32"), f32);
  EXPECT_EQ(dtype_from_name("bf16"), bf16);
  EXPECT_THROW(dtype_from_name("float16"), ValueError);
  EXPECT_EQ(itemsize(f64), 8u);
  EXPECT_EQ(itemsize(bf16), 2u);
  EXPECT_EQ(itemsize(bool_), 1u);
  EXPECT_EQ(itemsize(float0), 0u);
  EXPECT_EQ(tangent_dtype(i32), float0);
  EXPECT_EQ(tangent_dtype(bf16), bf16);
  // bfloat16 storage rounds to nearest even: 1 + 2^-8 is a tie -> 1; 1 + 3*2^-8 -> 1 + 2^-6.
  EXPECT_EQ(float(bfloat16(1.00390625f)), 1.0f);
  EXPECT_EQ(float(bfloat16(1.01171875f)), 1.015625f);
}

}  // namespace
