// minijax tests of compiled scan unrolling (ScanOptions::unroll, jit/codegen/lower/program.cc): the loop's
// structure in as_text(), and compiled results equal to eager for every unroll, under grad too.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <minijax/minijax.h>

namespace {

using mj::Array;
namespace cp = mj::checkpoint_policies;

// Max |a - b| / (atol + rtol |b|) over elements; -1 on an aval mismatch.
double err(const Array& a, const Array& b, double atol = 1e-6, double rtol = 1e-6) {
  if (a.aval().str() != b.aval().str()) return -1;
  Array x = mj::astype(a, mj::f64), y = mj::astype(b, mj::f64);
  double worst = 0;
  for (int64_t i = 0; i < x.size(); ++i) {
    double u = x.data<double>()[i], v = y.data<double>()[i];
    if (u != v) worst = std::max(worst, std::fabs(u - v) / (atol + rtol * std::fabs(v)));
  }
  return worst;
}

#define EXPECT_CLOSE(got, want, what)                                     \
  do {                                                                    \
    double e_ = err(got, want);                                           \
    EXPECT_TRUE(e_ >= 0 && e_ <= 1) << (what) << ": err " << e_ << "\ngot " \
                                    << (got) << "\nwant " << (want);      \
  } while (0)

Array ramp(const mj::Shape& shape, double scale, double offset) {
  std::vector<double> v(size_t(mj::shape_size(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = offset + scale * std::sin(1.0 + double(i));
  return mj::array(v, shape, mj::f32);
}

// The lines of the KIR entry function (minijax_main) in a compiled program's text.
std::vector<std::string> main_lines(const std::string& text) {
  std::istringstream in(text.substr(text.find("# kernels (KIR)")));
  std::vector<std::string> lines;
  bool inside = false;
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("define", 0) == 0) inside = l.find("@minijax_main(") != std::string::npos;
    else if (inside && l == "}") inside = false;
    else if (inside) lines.push_back(l);
  }
  return lines;
}

// What the entry function does with the calls of kernel `kernel`: how many `for` loops hold
// them, how many calls each loop's body makes, and how many calls are outside every loop.
struct CallLayout {
  int loops = 0;
  std::vector<int> per_trip;
  int straight = 0;
};

CallLayout call_layout(const std::string& text, const std::string& kernel) {
  CallLayout r;
  std::vector<int> open;  // indents of the open `for` blocks
  for (const std::string& l : main_lines(text)) {
    const size_t indent = l.find_first_not_of(' ');
    while (!open.empty() && l.size() > size_t(open.back()) && l[size_t(open.back())] == '}' &&
           indent == size_t(open.back()))
      open.pop_back();
    if (l.find("for %") == indent) {
      open.push_back(int(indent));
      r.per_trip.push_back(0);
      ++r.loops;
      continue;
    }
    if (l.find("call @" + kernel + ",") == std::string::npos &&
        l.find("call @" + kernel + " ") == std::string::npos)
      continue;
    if (open.empty()) ++r.straight;
    else ++r.per_trip.back();
  }
  return r;
}

// The one kernel called by the entry function other than the runtime's (the scan body's fusion).
std::string body_kernel(const std::string& text) {
  std::string name;
  for (const std::string& l : main_lines(text)) {
    size_t at = l.find("call @");
    if (at == std::string::npos || l.find("call @mj_rt_") != std::string::npos) continue;
    size_t end = l.find_first_of(" ,", at + 6);
    std::string k = l.substr(at + 6, end - at - 6);
    if (name.empty()) name = k;
    else if (name != k) return "";  // more than one kernel: the test's program is not this one
  }
  return name;
}

// c = c * x + 1, ys = c (the loops benchmark's body, with ys).
std::pair<Array, Array> cx1(const Array& c0, const Array& xs, mj::Unroll u, bool reverse = false) {
  return mj::scan([](const Array& c, const Array& x) {
    Array n = c * x + 1.0f;
    return std::pair{n, n};
  }, c0, xs, {.reverse = reverse, .unroll = u});
}

// As JAX's test_scan_unroll checks the HLO (a while loop unless fully unrolled, growing with the
// unroll), the compiled text shows k body copies per trip, length / k trips and length mod k
// copies after the loop. Before unrolling was compiled the text was byte-identical for unroll 1,
// 2 and 8.
TEST(ScanUnrollCompiled, AsTextShowsCopiesPerTripTripsAndRemainder) {
  Array c0 = mj::zeros({4}), xs = ramp({10, 4}, 0.5, 0.2);
  struct Want {
    mj::Unroll unroll;
    int loops, per_trip, remainder;
    std::string note;
  };
  const std::vector<Want> wants = {
      {int64_t(1), 1, 1, 0, "scan: native loop of 10 iterations"},
      {int64_t(2), 1, 2, 0, "scan: unrolled by 2: native loop of 5 trips x 2 body copies (10 iterations)"},
      {int64_t(3), 1, 3, 1, "scan: unrolled by 3: native loop of 3 trips x 3 body copies, then 1 body copy (10 iterations)"},
      {int64_t(8), 1, 8, 2, "scan: unrolled by 8: native loop of 1 trip x 8 body copies, then 2 body copies (10 iterations)"},
      {int64_t(10), 0, 0, 10, "scan: unrolled by 10: no loop, 10 body copies (10 iterations)"},
      {int64_t(0), 0, 0, 10, "scan: unrolled by 10: no loop, 10 body copies (10 iterations)"},
      {true, 0, 0, 10, "scan: unrolled by 10: no loop, 10 body copies (10 iterations)"},
  };
  std::vector<std::string> texts;
  for (const Want& w : wants) {
    auto f = [u = w.unroll](const Array& c, const Array& x) { return cx1(c, x, u); };
    std::string text = mj::jit(f).lower(c0, xs).compile().as_text();
    texts.push_back(text);
    std::string kernel = body_kernel(text);
    ASSERT_FALSE(kernel.empty()) << text;
    CallLayout l = call_layout(text, kernel);
    EXPECT_EQ(l.loops, w.loops) << w.note << "\n" << text;
    if (w.loops) {
      ASSERT_EQ(l.per_trip.size(), 1u) << text;
      EXPECT_EQ(l.per_trip[0], w.per_trip) << w.note << "\n" << text;
    }
    EXPECT_EQ(l.straight, w.remainder) << w.note << "\n" << text;
    EXPECT_NE(text.find(w.note), std::string::npos) << w.note << "\n" << text;
    // One kernel however many copies call it.
    EXPECT_EQ(text.find("define internal void @" + kernel + "_1("), std::string::npos) << text;
  }
  EXPECT_NE(texts[0], texts[1]);
  EXPECT_NE(texts[1], texts[3]);
  EXPECT_NE(texts[0], texts[3]);
}

// Compiled results equal eager ones for every unroll, with a length (7) no factor but 1 and 7
// divides, forward and reverse, with a pytree carry, two xs and two ys.
TEST(ScanUnrollCompiled, ResultsEqualEagerForEveryUnroll) {
  using C = std::pair<Array, Array>;
  auto run = [](mj::Unroll u, bool reverse) {
    return [u, reverse](const C& c0, const Array& xs, const Array& ws) {
      return mj::scan([](const C& c, const std::pair<Array, Array>& x) {
        Array a = c.first * x.first + c.second;
        Array b = c.second * 0.5f + mj::sum(x.second);
        return std::pair{C{a, b}, std::pair{a - x.first, b * 2.0f}};
      }, c0, std::pair{xs, ws}, {.reverse = reverse, .unroll = u});
    };
  };
  C c0{ramp({3}, 0.3, 0.1), mj::scalar(0.25f)};
  Array xs = ramp({7, 3}, 0.6, 0.3), ws = ramp({7, 2}, 0.2, 0.0);
  for (bool reverse : {false, true})
    for (mj::Unroll u : std::vector<mj::Unroll>{int64_t(1), int64_t(2), int64_t(3), int64_t(7), int64_t(0),
                                                 int64_t(9), true, false}) {
      std::string what = std::string(reverse ? "reverse" : "forward") + " unroll " +
                         (std::holds_alternative<bool>(u) ? (std::get<bool>(u) ? "true" : "false")
                                                          : std::to_string(std::get<int64_t>(u)));
      auto f = run(u, reverse);
      auto [want_c, want_ys] = f(c0, xs, ws);
      auto [got_c, got_ys] = mj::jit(f)(c0, xs, ws);
      EXPECT_CLOSE(got_c.first, want_c.first, what);
      EXPECT_CLOSE(got_c.second, want_c.second, what);
      EXPECT_CLOSE(got_ys.first, want_ys.first, what);
      EXPECT_CLOSE(got_ys.second, want_ys.second, what);
    }
}

// Under grad: the forward scan and the transposed scan keep unroll 3 (JAX's rules pass it on),
// and both compile unrolled; jit(grad) and grad(jit) equal eager grad, forward and reverse.
TEST(ScanUnrollCompiled, GradientsEqualEager) {
  for (bool reverse : {false, true}) {
    auto loss = [reverse](const Array& w, const Array& xs) {
      auto [c, ys] = mj::scan([&w](const Array& c, const Array& x) {
        Array n = mj::tanh(c * w + x);
        return std::pair{n, n * x};
      }, mj::scalar(0.1f) * w, xs, {.reverse = reverse, .unroll = 3});
      return mj::sum(c) + mj::sum(ys);
    };
    Array w = ramp({4}, 0.4, 0.5), xs = ramp({8, 4}, 0.7, 0.0);
    Array want = mj::grad(loss)(w, xs);
    const char* what = reverse ? "reverse" : "forward";
    EXPECT_CLOSE(mj::jit(mj::grad(loss))(w, xs), want, what);
    EXPECT_CLOSE(mj::grad(mj::jit(loss))(w, xs), want, what);
    std::string text = mj::jit(mj::grad(loss)).lower(w, xs).compile().as_text();
    size_t first = text.find("unrolled by 3: native loop of 2 trips x 3 body copies, then 2 body copies");
    ASSERT_NE(first, std::string::npos) << text;
    EXPECT_NE(text.find("unrolled by 3", first + 1), std::string::npos) << "the transposed scan\n" << text;
  }
}

// A scan inside an unrolled body (itself unrolled), with a cond: every copy of the outer body
// runs the inner loop and the branch.
TEST(ScanUnrollCompiled, NestedLoopsAndBranchesInsideCopies) {
  auto f = [](const Array& c0, const Array& xs) {
    return mj::scan([](const Array& c, const Array& x) {
      auto [inner, rows] = mj::scan([](const Array& a, const Array& r) {
        Array n = a * 0.5f + r;
        return std::pair{n, n};
      }, c, x, {.unroll = 2});
      Array picked = mj::cond(mj::sum(inner) > 0.0f, [](const Array& v) { return v * 2.0f; },
                              [](const Array& v) { return v - 1.0f; }, inner);
      return std::pair{picked, mj::sum(rows, {0})};
    }, c0, xs, {.reverse = true, .unroll = 2});
  };
  Array c0 = ramp({3}, 0.5, 0.0), xs = ramp({5, 3, 3}, 0.8, -0.1);
  auto [want_c, want_ys] = f(c0, xs);
  auto [got_c, got_ys] = mj::jit(f)(c0, xs);
  EXPECT_CLOSE(got_c, want_c, "carry");
  EXPECT_CLOSE(got_ys, want_ys, "ys");
}

// fori_loop's unroll reaches the compiled loop: 0 + 1 + ... + 9 = 45 (closed form).
TEST(ScanUnrollCompiled, ForiLoopUnroll) {
  auto f = [](const Array& c) {
    return mj::fori_loop(0, 10, [](const Array& i, const Array& a) { return a + mj::astype(i, mj::f32); }, c,
                         {.unroll = 4});
  };
  EXPECT_FLOAT_EQ(mj::jit(f)(mj::scalar(0.0f)).item<float>(), 45.0f);
  std::string text = mj::jit(f).lower(mj::scalar(0.0f)).compile().as_text();
  EXPECT_NE(text.find("unrolled by 4: native loop of 2 trips x 4 body copies, then 2 body copies"), std::string::npos)
      << text;
}

// Offloaded loops (memory/split_copies.h) unroll too: grad of scan(checkpoint(step)) with a
// named value offloaded to pinned_host, unroll 3. Each copy is a whole iteration, so the host
// copies, carried row indices and prefetches stay in order. With coalescing off the forward loop
// writes one host row per iteration and the backward loop prefetches the next; with it (rows of
// 64 B, 4096 B per copy) a scan of 256 iterations becomes 4 chunks of 64: the inner scan, which
// runs the iterations, takes the unroll and the loop over chunks stays rolled. Eager grad is the
// oracle.
TEST(ScanUnrollCompiled, OffloadedLoopsUnroll) {
  struct Restore {
    int64_t was = mj::config().offload_coalesce_bytes;
    ~Restore() { mj::config().offload_coalesce_bytes = was; }
  } restore;
  auto step = [](const Array& y, const Array& x) {
    Array a = mj::checkpoint_name(mj::sin(y * x), "act");
    return std::pair{mj::sin(a) + x, mj::None{}};
  };
  auto policy = cp::save_and_offload_only_these_names({}, {"act"}, "device", "pinned_host");
  auto loss = [&](const Array& p, const Array& xs) {
    return mj::sum(mj::scan(mj::checkpoint(step, {.policy = policy}), p, xs, {.unroll = 3}).first);
  };
  struct Case {
    int64_t coalesce_bytes, length;
    std::vector<std::string> notes;
  };
  for (const Case& c : std::vector<Case>{
           {0, 7, {"scan: unrolled by 3: native loop of 2 trips x 3 body copies, then 1 body copy (7 iterations)"}},
           {4096, 256, {"scan: unrolled by 3: native loop of 21 trips x 3 body copies, then 1 body copy (64 iterations)",
                        "scan: native loop of 4 iterations"}}}) {
    mj::config().offload_coalesce_bytes = c.coalesce_bytes;
    Array p = ramp({16}, 0.5, 0.2), xs = ramp({c.length, 16}, 0.9, 0.1);
    Array want = mj::grad(loss)(p, xs);
    auto jg = mj::jit(mj::grad(loss));
    const std::string what = "coalesce " + std::to_string(c.coalesce_bytes);
    EXPECT_CLOSE(jg(p, xs), want, what);
    std::string text = jg.lower(p, xs).compile().as_text();
    EXPECT_NE(text.find("pinned_host"), std::string::npos) << what << "\n" << text;
    if (c.coalesce_bytes) EXPECT_NE(text.find("slices=64"), std::string::npos) << what << "\n" << text;
    for (const std::string& note : c.notes) EXPECT_NE(text.find(note), std::string::npos) << what << ": " << note << "\n" << text;
  }
}

}  // namespace
