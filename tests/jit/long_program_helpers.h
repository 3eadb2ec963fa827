// minijax tests of long programs: the programs they build (an elementwise chain, a nest of
// closed_calls as jaxpr text) and the closed form of their value, shared by tests/jit and tests/long.
#pragma once

#include <minijax/minijax.h>

#include <cmath>
#include <string>

#include "small_stack.h"

namespace minijax_test {

/// `links` links y <- y * 0.999 + 0.001 (two equations each) applied to x.
inline mj::Array chain(const mj::Array& x, int links) {
  mj::Array y = x;
  for (int i = 0; i < links; ++i) y = y * 0.999 + 0.001;
  return y;
}

/// The chain's value from y0 after n links, in closed form (the fixed point is 1:
/// y_n - 1 = 0.999^n (y0 - 1)); computed in double.
inline double chain_closed_form(double y0, int n) { return 1.0 + std::pow(0.999, n) * (y0 - 1.0); }

/// The f32 chain's distance from the closed form is at most the rounding error of a contraction
/// by 0.999: two roundings of about 6e-8 per link, damped by 0.999 each link, stay below
/// 1.2e-7 / (1 - 0.999) = 1.2e-4 for values near 1.
inline constexpr double kChainTolerance = 2e-4;

/// A jaxpr nesting `depth` closed_calls, one link of the chain per level, on f32[n]: level 0 is
/// `let l0 = { lambda ; a:f32[n]. let b = mul a 0.999; c = add b 0.001 in (c,) } in`, level k
/// calls level k-1 then applies one link, the top jaxpr calls the deepest level. Written with
/// `let` shared jaxprs (each defined before its use), the form parse_jaxpr reads at any depth.
inline std::string nested_calls_text(int depth, int n) {
  const std::string t = "f32[" + std::to_string(n) + "]";
  std::string s;
  s.reserve(size_t(depth) * 200);
  for (int k = 0; k < depth; ++k) {
    s += "let l" + std::to_string(k) + " = { lambda ; a:" + t + ". let ";
    std::string in = "a";
    if (k > 0) {
      s += "z:" + t + " = closed_call[call_jaxpr=l" + std::to_string(k - 1) + " name=l" +
           std::to_string(k - 1) + "] a; ";
      in = "z";
    }
    s += "b:" + t + " = mul " + in + " 0.999:f32[]; c:" + t + " = add b 0.001:f32[] in (c,) } in\n";
  }
  s += "{ lambda ; a:" + t + ". let b:" + t + " = closed_call[call_jaxpr=l" + std::to_string(depth - 1) +
       " name=l" + std::to_string(depth - 1) + "] a in (b,) }";
  return s;
}

}  // namespace minijax_test
