// minijax float0 sweep: entries of the primitives with bodies (cond, scan, while, calls,
// checkpoint, custom derivatives) and of the PRNG primitives, with int/bool operands or results.
#include "autodiff/float0_sweep.h"

namespace float0_sweep {
namespace {

namespace lax = mj::lax;
using mj::i32;
using mj::u32;

// A body meeting int values: float in, int in; float, int and bool out.
V body(const Array& x, const Array& i) { return V{x * F(i, x) + mj::sin(x), i + 1, x > 0.25}; }

}  // namespace

std::vector<Float0Entry> control_flow_entries() {
  auto in_xi = [](const Array& x) { return V{x, I(x)}; };
  using E = Float0Entry;
  return {
      {"cond", "bool_predicate", [](const Array& x) { return V{mj::sum(x) > 0.0, x, I(x)}; },
       [](const V& a) {
         return mj::cond(a[0], [](const Array& x, const Array& i) { return body(x, i); },
                         [](const Array& x, const Array& i) { return V{x * x, i * 2, x < 0.0}; }, a[1], a[2]);
       },
       mix},
      {"cond", "i32_index", [](const Array& x) { return V{lax::rem(mj::sum(I(x)), mj::scalar(3, i32)), x, I(x)}; },
       [](const V& a) {
         std::vector<std::function<V(const Array&, const Array&)>> br{
             [](const Array& x, const Array& i) { return body(x, i); },
             [](const Array& x, const Array& i) { return V{x * x * x, i - 1, x > 0.0}; },
             [](const Array& x, const Array& i) { return V{mj::cos(x), i, x < 1.0}; }};
         return mj::switch_(a[0], br, a[1], a[2]);
       },
       mix},
      {"scan", "i32_carry", in_xi,
       [](const V& a) {
         using Carry = std::pair<Array, Array>;
         auto [c, ys] = mj::scan(
             [](const Carry& c, const mj::None&) {
               Carry n{c.first + 1, c.second + mj::sin(c.second) * F(c.first, c.second) * 0.125};
               return std::pair{n, n.first > 2};
             },
             Carry{a[1], a[0]}, {.length = 3});
         return V{c.second, c.first, ys};
       },
       mix},
      {"while", "i32_counter", in_xi,
       [](const V& a) {
         using Carry = std::pair<Array, Array>;
         Array bound = lax::rem(mj::sum(a[1]), mj::scalar(4, i32));  // data-dependent trip count from an int operand
         Carry c = mj::while_loop([bound](const Carry& c) { return c.first < bound; },
                                  [](const Carry& c) { return Carry{c.first + 1, c.second + mj::sin(c.second) * 0.5}; },
                                  Carry{mj::scalar(0, i32), a[0]});
         return V{c.second, c.first};
       },
       mix, true, false},
      {"pjit", "int_bool_operands_and_results", [](const Array& x) { return V{x, I(x), x > 0.25}; },
       [](const V& a) {
         return mj::jit([](const Array& x, const Array& i, const Array& b) {
           V r = body(mj::where(b, x, -x), i);
           return V{r[0], r[1], lax::not_(r[2])};
         })(a[0], a[1], a[2]);
       },
       mix},
      {"closed_call", "int_bool_operands_and_results", in_xi,
       [](const V& a) {
         return mj::closed_call([](const Array& x, const Array& i) { return body(x, i); }, "body")(a[0], a[1]);
       },
       mix},
      {"checkpoint", "int_bool_operands_and_results", in_xi,
       [](const V& a) {
         return mj::checkpoint([](const Array& x, const Array& i) { return body(x, i); })(a[0], a[1]);
       },
       mix},
      {"custom_jvp_call", "int_operand", in_xi,
       [](const V& a) {
         auto f = mj::custom_jvp(
             [](const Array& x, const Array& i) { return mj::sin(x) * F(i, x); },
             [](const Array& x, const Array& i, const Array& tx, const Array&) {
               return std::pair{mj::sin(x) * F(i, x), mj::cos(x) * F(i, x) * tx};
             });
         return V{f(a[0], a[1])};
       },
       mix},
      // JAX's custom_vjp has no forward mode (jvp of it raises), so no jvp of jvp; reverse mode
      // and jvp of grad (forward over the bwd function) work.
      {"custom_vjp_call", "int_operand", in_xi,
       [](const V& a) {
         auto f = mj::custom_vjp(
             [](const Array& x, const Array& i) { return mj::sin(x) * F(i, x); },
             [](const Array& x, const Array& i) { return std::pair{mj::sin(x) * F(i, x), V{x, i}}; },
             [](const V& res, const Array& ct) {
               return std::tuple{ct * mj::cos(res[0]) * F(res[1], res[0]), mj::zeros_like(res[1])};
             });
         return V{f(a[0], a[1])};
       },
       mix, false, true},
      // PRNG: a key folded with an int of x; bits (threefry2x32 of iota_2x32_shape) and uniform.
      {"threefry2x32", "u32", [](const Array& x) { return V{mj::astype(I(x), u32), mj::astype(I(x) * 3, u32)}; },
       [](const V& a) {
         auto [y0, y1] = lax::threefry2x32(mj::scalar(7, u32), mj::scalar(11, u32), a[0], a[1]);
         return V{y0, y1};
       },
       top_bits},
      {"iota_2x32_shape", "bits_of_folded_key", [](const Array& x) { return V{I(x), mj::sum(I(x))}; },
       [](const V& a) {
         Array key = mj::random::fold_in(mj::random::PRNGKey(3), a[1]);
         return V{mj::random::bits(key, a[0].shape()), mj::random::uniform(key, a[0].shape())};
       },
       top_bits},
  };
}

}  // namespace float0_sweep
