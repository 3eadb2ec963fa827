// minijax public-API bad-input cases: the numpy-style functions and operators of core/numpy.h.
// Owns numpy_cases(): one bad call (shape, rank, axis, dtype) per listed declaration.
#include "api/bad_input.h"

namespace bad_input {
namespace {
namespace mj = minijax;
using mj::Array;
using mj::DType;
using mj::ShapeError;
using mj::TypeError;
using mj::ValueError;


}  // namespace


std::vector<Case> numpy_cases() {
  return {
      // Shapes that do not broadcast: the function, both shapes.
      BAD("minijax::add", ShapeError, mj::add(x23(), x4()), "add", "[2,3]", "[4]"),
      BAD("minijax::subtract", ShapeError, mj::subtract(x23(), x4()), "sub", "[2,3]", "[4]"),
      BAD("minijax::multiply", ShapeError, mj::multiply(x23(), x4()), "mul", "[2,3]", "[4]"),
      BAD("minijax::divide", ShapeError, mj::divide(x23(), x4()), "div", "[2,3]", "[4]"),
      BAD("minijax::power", ShapeError, mj::power(x23(), x4()), "pow", "[2,3]", "[4]"),
      BAD("minijax::maximum", ShapeError, mj::maximum(x23(), x4()), "max", "[2,3]", "[4]"),
      BAD("minijax::minimum", ShapeError, mj::minimum(x23(), x4()), "min", "[2,3]", "[4]"),
      BAD("minijax::arctan2", ShapeError, mj::arctan2(x23(), x4()), "arctan2", "[2,3]", "[4]"),
      BAD("minijax::remainder", ShapeError, mj::remainder(x23(), x4()), "remainder", "[2,3]", "[4]"),
      BAD("minijax::mod", ShapeError, mj::mod(x23(), x4()), "remainder", "[2,3]", "[4]"),
      BAD("minijax::fmod", ShapeError, mj::fmod(x23(), x4()), "fmod", "[2,3]", "[4]"),
      BAD("minijax::operator+", ShapeError, x23() + x4(), "add", "[2,3]", "[4]"),
      BAD("minijax::operator-", ShapeError, x23() - x4(), "sub", "[2,3]", "[4]"),
      BAD("minijax::operator*", ShapeError, x23() * x4(), "mul", "[2,3]", "[4]"),
      BAD("minijax::operator/", ShapeError, x23() / x4(), "div", "[2,3]", "[4]"),
      BAD("minijax::operator%", ShapeError, x23() % x4(), "rem", "[2,3]", "[4]"),
      BAD("minijax::operator<", ShapeError, x23() < x4(), "lt", "[2,3]", "[4]"),
      BAD("minijax::operator<=", ShapeError, x23() <= x4(), "le", "[2,3]", "[4]"),
      BAD("minijax::operator>", ShapeError, x23() > x4(), "greater", "[2,3]", "[4]"),
      BAD("minijax::operator>=", ShapeError, x23() >= x4(), "ge", "[2,3]", "[4]"),
      BAD("minijax::operator==", ShapeError, x23() == x4(), "eq", "[2,3]", "[4]"),
      BAD("minijax::operator!=", ShapeError, x23() != x4(), "not_equal", "[2,3]", "[4]"),
      BAD("minijax::operator&", TypeError, x23() & x23(), "and", "f32"),
      BAD("minijax::operator|", TypeError, x23() | x23(), "or", "f32"),
      Case{"minijax::operator!", [] {  // operator! takes no call site: the library's line is recorded
        expect_error<ValueError>([] { (void)!Array(); }, {"operator!", "empty"}, Site::any);
      }},
      Case{"minijax::operator+=", [] { Array a = x23(); expect_error<ShapeError>([&] { a += x4(); }, {"add", "[2,3]", "[4]"}); }},
      Case{"minijax::operator-=", [] { Array a = x23(); expect_error<ShapeError>([&] { a -= x4(); }, {"sub", "[2,3]", "[4]"}); }},
      Case{"minijax::operator*=", [] { Array a = x23(); expect_error<ShapeError>([&] { a *= x4(); }, {"mul", "[2,3]", "[4]"}); }},
      Case{"minijax::operator/=", [] { Array a = x23(); expect_error<ShapeError>([&] { a /= x4(); }, {"div", "[2,3]", "[4]"}); }},
      // Constructors: values that do not fill the shape, negative sizes, bad dtypes.
      BAD("minijax::array", ValueError, mj::array({1.0, 2.0, 3.0}, {2, 2}, DType::f32), "array", "3", "[2,2]"),
      BAD("minijax::scalar", TypeError, mj::scalar(1.0, DType::token), "scalar", "Tok"),
      BAD("minijax::zeros", ValueError, mj::zeros({2, -3}), "zeros", "-3"),
      BAD("minijax::ones", ValueError, mj::ones({-1}), "ones", "-1"),
      BAD("minijax::full", ValueError, mj::full({4, -2}, 1.0), "full", "-2"),
      BAD("minijax::zeros_like", ValueError, mj::zeros_like(Array()), "zeros_like", "empty"),
      BAD("minijax::ones_like", ValueError, mj::ones_like(Array()), "ones_like", "empty"),
      BAD("minijax::full_like", ValueError, mj::full_like(Array(), 2.0), "full_like", "empty"),
      BAD("minijax::arange", ValueError, mj::arange(0, 5, 0), "arange", "step"),
      BAD("minijax::eye", ValueError, mj::eye(-2), "eye", "-2"),
      // Elementwise functions: an integer operand where a float is required, or a dtype they refuse.
      BAD("minijax::negative", ValueError, mj::negative(Array()), "negative", "empty"),
      BAD("minijax::exp", ValueError, mj::exp(Array()), "exp", "empty"),
      BAD("minijax::log", ValueError, mj::log(Array()), "log", "empty"),
      BAD("minijax::log1p", ValueError, mj::log1p(Array()), "log1p", "empty"),
      BAD("minijax::expm1", ValueError, mj::expm1(Array()), "expm1", "empty"),
      BAD("minijax::sin", ValueError, mj::sin(Array()), "sin", "empty"),
      BAD("minijax::cos", ValueError, mj::cos(Array()), "cos", "empty"),
      BAD("minijax::tan", ValueError, mj::tan(Array()), "tan", "empty"),
      BAD("minijax::tanh", ValueError, mj::tanh(Array()), "tanh", "empty"),
      BAD("minijax::sqrt", ValueError, mj::sqrt(Array()), "sqrt", "empty"),
      BAD("minijax::rsqrt", ValueError, mj::rsqrt(Array()), "rsqrt", "empty"),
      BAD("minijax::square", TypeError, mj::square(mj::scalar(1, DType::bool_)), "integer_pow", "bool"),
      BAD("minijax::abs", ValueError, mj::abs(Array()), "abs", "empty"),
      BAD("minijax::sign", ValueError, mj::sign(Array()), "sign", "empty"),
      BAD("minijax::floor", ValueError, mj::floor(Array()), "floor", "empty"),
      BAD("minijax::ceil", ValueError, mj::ceil(Array()), "ceil", "empty"),
      BAD("minijax::round", ValueError, mj::round(Array()), "round", "empty"),
      BAD("minijax::erf", ValueError, mj::erf(Array()), "erf", "empty"),
      BAD("minijax::sigmoid", ValueError, mj::sigmoid(Array()), "sigmoid", "empty"),
      BAD("minijax::relu", ValueError, mj::relu(Array()), "relu", "empty"),
      BAD("minijax::gelu", ValueError, mj::gelu(Array()), "gelu", "empty"),
      BAD("minijax::where", ShapeError, mj::where(x23() > 1.0f, x23(), x4()), "where", "[2,3]", "[4]"),
      BAD("minijax::clip", ShapeError, mj::clip(x23(), x4(), 5.0f), "maximum", "[2,3]", "[4]"),
      BAD("minijax::astype", TypeError, mj::astype(x23(), DType::token), "convert_element_type", "Tok"),
      BAD("minijax::stop_gradient", ValueError, mj::stop_gradient(Array()), "stop_gradient", "empty"),
      // Reductions: an axis out of range names the function, the axis and the rank.
      BAD("minijax::sum", ShapeError, mj::sum(x23(), 2), "sum", "axis 2", "rank 2"),
      BAD("minijax::mean", ShapeError, mj::mean(x23(), -3), "mean", "-3"),
      BAD("minijax::var", ShapeError, mj::var(x23(), 5), "var", "5"),
      BAD("minijax::max", ShapeError, mj::max(x23(), 2), "max", "axis 2"),
      BAD("minijax::min", ShapeError, mj::min(x23(), 2), "min", "axis 2"),
      BAD("minijax::prod", ShapeError, mj::prod(x23(), 2), "prod", "axis 2"),
      BAD("minijax::argmax", ShapeError, mj::argmax(x23(), 2), "argmax", "axis 2"),
      BAD("minijax::argmin", ShapeError, mj::argmin(x23(), 2), "argmin", "axis 2"),
      BAD("minijax::cumsum", ShapeError, mj::cumsum(x23(), 2), "cumsum", "axis 2"),
      BAD("minijax::cumprod", ShapeError, mj::cumprod(x23(), -3), "cumprod", "axis -3"),
      BAD("minijax::argsort", ShapeError, mj::argsort(x23(), 2), "argsort", "axis 2", "[2,3]"),
      BAD("minijax::argsort", ShapeError, mj::argsort(x23(), -3), "argsort", "axis -3"),
      BAD("minijax::logsumexp", ShapeError, mj::logsumexp(x23(), 2), "logsumexp", "axis 2"),
      BAD("minijax::softmax", ShapeError, mj::softmax(x23(), 2), "softmax", "axis 2"),
      BAD("minijax::log_softmax", ShapeError, mj::log_softmax(x23(), 2), "log_softmax", "axis 2"),
      BAD("minijax::one_hot", TypeError, mj::one_hot(x4(), 3), "one_hot", "f32[4]"),
      BAD("minijax::matmul", ShapeError, mj::matmul(x23(), x23()), "matmul", "[2,3]"),
      BAD("minijax::dot", ShapeError, mj::dot(x23(), x23()), "dot", "[2,3]"),
      // Shape manipulation.
      BAD("minijax::reshape", ShapeError, mj::reshape(x23(), {4, 2}), "reshape", "(2, 3)", "(4, 2)"),
      BAD("minijax::transpose", ShapeError, mj::transpose(x23(), {0, 0}), "transpose", "(0, 0)"),
      BAD("minijax::expand_dims", ValueError, mj::expand_dims(x23(), 4), "expand_dims", "axis 4"),
      BAD("minijax::squeeze", ShapeError, mj::squeeze(x23(), {0}), "squeeze", "[2,3]"),
      BAD("minijax::broadcast_to", ShapeError, mj::broadcast_to(x23(), {4, 3}), "broadcast_to", "[2,3]", "[4,3]"),
      BAD("minijax::concatenate", ShapeError, mj::concatenate({x23(), x4()}, 0), "concatenate", "[2,3]", "[4]"),
      BAD("minijax::stack", ShapeError, mj::stack({x23(), x4()}, 0), "stack", "(2, 3)", "(4,)"),
      BAD("minijax::flip", ValueError, mj::flip(x23(), 2), "flip", "2"),
      BAD("minijax::take", TypeError, mj::take(x23(), x4(), 0), "gather", "f32[4]"),
      BAD("minijax::broadcast_shapes", ShapeError, mj::broadcast_shapes({2, 3}, {4}), "broadcast_shapes", "[2,3]", "[4]"),
      BAD("minijax::device_put", ValueError, mj::device_put(x23(), std::string("gpu_hbm")), "device_put", "gpu_hbm"),
  };
}

}  // namespace bad_input
