// minijax bench: jitted convolutions (forward, backward-data, backward-weights) on the CNN sample's
// two convolution shapes and a 3x3 "SAME" one, each next to oneDNN's primitive; one JSON line.
//
// Usage: minijax_bench_conv [--reps R (100)] [--warmup W (10)]
// Cases (f32, NHWC input, HWIO kernel, NHWC output, stride 1, no bias):
//   cnn_conv1   [128, 28, 28, 1]  * [5, 5, 1, 32]   "VALID" -> [128, 24, 24, 32]
//   cnn_conv2   [128, 12, 12, 32] * [5, 5, 32, 64]  "VALID" -> [128, 8, 8, 64]
//   same3x3     [8, 56, 56, 64]   * [3, 3, 64, 64]  "SAME"  -> [8, 56, 56, 64]
// Passes, each a jitted function called with mj::block_until_ready on its result:
//   forward           lax::conv_general_dilated(x, w) with dimension numbers (NHWC, HWIO, NHWC);
//   backward_data     the vjp of it with respect to x applied to a cotangent g (x, w, g) -> dx;
//   backward_weights  the vjp of it with respect to w applied to g (x, w, g) -> dw.
// Reference (the floor): oneDNN's convolution forward, backward-data or backward-weights primitive
// on the same shapes (bench/dnnl_floor.h; the backward ones created with the forward's descriptor
// as hint), the library's own threads, in the faster of the two layouts that take and give the data
// as the program holds it (NHWC): plain NHWC/HWIO, and NHWC data with the kernel in oneDNN's own
// format (what the compiled code passes). Also reported: format_tag::any everywhere (blocked data;
// the reorders from and to NHWC not timed), which no program holding NHWC data reaches. The references and
// the minijax functions are timed interleaved, each timed call after an untimed one of the same.
// Reported per case and pass: both medians, speed ratio = floor_ms / minijax_ms (target >= 0.9,
// binding for every case), GFLOP/s, each layout's median and oneDNN's implementation, and the
// as_text() lines saying which form the compiled convolution got.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "bench/dnnl_floor.h"
#include "jit/jit.h"
#include "minijax/minijax.h"

namespace {

using mjbench::ConvPass;
using mjbench::Json;

constexpr double kTarget = 0.9;

struct Case {
  const char* name;
  mjbench::ConvShape shape;
  const char* padding;
};

mj::Array filled(const mj::Shape& shape) {
  mj::Array a = mj::Array::allocate(mj::ShapedArray{shape, mj::f32});
  float* p = a.mutable_data<float>();
  for (int64_t i = 0; i < a.size(); ++i) p[i] = float(i % 13) * 0.01f - 0.06f;
  return a;
}

// One timed function of a case: minijax's jitted pass with its operands and the as_text() lines
// of its forms.
struct MinijaxPass {
  std::function<void()> run;
  std::string forms;
};

MinijaxPass minijax_pass(const Case& c, ConvPass pass) {
  const auto& s = c.shape;
  const std::string padding = c.padding;
  auto conv = [padding](const mj::Array& x, const mj::Array& w) {
    return mj::lax::conv_general_dilated(x, w, {1, 1}, padding,
                                         {.dimension_numbers = {"NHWC", "HWIO", "NHWC"}});
  };
  mj::Array x = filled({s.n, s.h, s.w, s.ci}), w = filled({s.kh, s.kw, s.ci, s.co});
  mj::Array g = filled({s.n, s.oh(), s.ow(), s.co});
  const std::string name = std::string("conv_") + c.name + "_" + mjbench::conv_pass_name(pass);
  const std::vector<std::string> keys{"oneDNN", "loop nest", "reorder"};
  if (pass == ConvPass::forward) {
    auto f = mj::jit(conv, mj::JitOptions{.name = name});
    std::string forms = mjbench::lines_containing_json(f.lower(x, w).compile().as_text(), keys);
    return {[f, x, w] { mj::block_until_ready(f(x, w)); }, forms};
  }
  auto vjp_of = [conv, pass](const mj::Array& xx, const mj::Array& ww, const mj::Array& gg) {
    if (pass == ConvPass::backward_data)
      return mj::vjp([&](const mj::Array& v) { return conv(v, ww); }, xx).second(gg);
    return mj::vjp([&](const mj::Array& v) { return conv(xx, v); }, ww).second(gg);
  };
  auto f = mj::jit(vjp_of, mj::JitOptions{.name = name});
  std::string forms = mjbench::lines_containing_json(f.lower(x, w, g).compile().as_text(), keys);
  return {[f, x, w, g] { mj::block_until_ready(f(x, w, g)); }, forms};
}

}  // namespace

int main(int argc, char** argv) {
  mjbench::Args args(argc, argv, "usage: minijax_bench_conv [--reps R] [--warmup W]");
  const int reps = args.integer("reps", 100), warmup = args.integer("warmup", 10);
  args.check();
  mjbench::Environment env;
  const std::vector<Case> cases = {
      {"cnn_conv1", {.n = 128, .h = 28, .w = 28, .ci = 1, .co = 32, .kh = 5, .kw = 5}, "VALID"},
      {"cnn_conv2", {.n = 128, .h = 12, .w = 12, .ci = 32, .co = 64, .kh = 5, .kw = 5}, "VALID"},
      {"same3x3",
       {.n = 8, .h = 56, .w = 56, .ci = 64, .co = 64, .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1},
       "SAME"},
  };
  const ConvPass passes[] = {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights};
  try {
    // Per (case, pass): the oneDNN reference (plain, then any) and minijax's function.
    struct Entry {
      const Case* c;
      ConvPass pass;
      std::unique_ptr<mjbench::DnnlOp> plain, weights_any, any;
      MinijaxPass mj;
    };
    std::vector<Entry> entries;
    for (const Case& c : cases)
      for (ConvPass p : passes)
        entries.push_back({&c, p, mjbench::make_conv(c.shape, p, mjbench::DnnlLayout::plain),
                           mjbench::make_conv(c.shape, p, mjbench::DnnlLayout::weights_any),
                           mjbench::make_conv(c.shape, p, mjbench::DnnlLayout::any), minijax_pass(c, p)});
    // Interleaved (bench/dot.cc): every repetition times each function once, after an untimed call.
    std::vector<std::function<void()>> fns;
    for (auto& e : entries) {
      fns.push_back([&e] { e.plain->run(); });
      fns.push_back([&e] { e.weights_any->run(); });
      fns.push_back([&e] { e.any->run(); });
      fns.push_back(e.mj.run);
    }
    std::vector<std::vector<double>> seconds(fns.size());
    for (int rep = -warmup; rep < reps; ++rep)
      for (size_t f = 0; f < fns.size(); ++f) {
        const double t = mjbench::time_calls(1, 1, fns[f])[0];
        if (rep >= 0) seconds[f].push_back(t);
      }
    Json j;
    j.str("name", "conv")
        .str("dtype", "f32")
        .str("layout", "NHWC, HWIO, NHWC")
        .str("onednn", mjbench::dnnl_version());
    j.integer("reps", reps).integer("warmup", warmup);
    j.str("ratio", "speed ratio = floor_ms / minijax_ms (floor: oneDNN's primitive on NHWC data, faster of plain and oneDNN-format kernels)");
    bool all_met = true;
    double worst = 1e30;
    for (size_t i = 0; i < entries.size(); ++i) {
      const Entry& e = entries[i];
      auto ref = mjbench::stats(seconds[4 * i]), ref_wany = mjbench::stats(seconds[4 * i + 1]);
      auto ref_any = mjbench::stats(seconds[4 * i + 2]), mine = mjbench::stats(seconds[4 * i + 3]);
      const double floor = std::min(ref.median, ref_wany.median);
      const char* floor_layout = floor == ref_wany.median ? "weights_any" : "plain";
      const double ratio = floor / mine.median;
      all_met &= ratio >= kTarget;
      worst = std::min(worst, ratio);
      Json o;
      o.str("shape", e.c->shape.str()).str("padding", e.c->padding);
      o.stats_ms("minijax", mine).num("floor_ms", floor * 1e3).str("floor_layout", floor_layout);
      o.stats_ms("onednn_plain", ref).str("onednn_plain_impl", e.plain->impl());
      o.num("speed_ratio", ratio).boolean("target_met", ratio >= kTarget);
      o.num("minijax_GFLOPs", 2.0 * e.c->shape.macs() / mine.median * 1e-9);
      o.num("floor_GFLOPs", 2.0 * e.c->shape.macs() / floor * 1e-9);
      o.num("onednn_weights_any_median_ms", ref_wany.median * 1e3)
          .str("onednn_weights_any_impl", e.weights_any->impl());
      o.num("onednn_format_any_median_ms", ref_any.median * 1e3).str("onednn_format_any_impl", e.any->impl());
      o.num("speed_ratio_to_format_any", ref_any.median / mine.median);
      o.raw("program", e.mj.forms);
      j.raw(std::string(e.c->name) + "_" + mjbench::conv_pass_name(e.pass), o.text());
    }
    j.num("worst_speed_ratio", worst).num("target_ratio", kTarget).boolean("target_met", all_met);
    env.add_to(j);
    std::printf("%s\n", j.text().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minijax_bench_conv: %s\n", e.what());
    return 1;
  }
  return 0;
}
