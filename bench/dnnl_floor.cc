// minijax bench: oneDNN's convolution and pooling primitives called directly (dnnl_floor.h): the
// descriptors for oneDNN 2.x and 3.x, buffers in the formats the primitives take, timed runs.
#include "bench/dnnl_floor.h"

#include "bench/bench_common.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdio>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace mjbench {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dims = memory::dims;

const dnnl::engine& engine() {
  static const dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// A memory object of `md` on the engine, filled with small values (so no denormals are timed).
memory filled(const memory::desc& md) {
  memory m(md, engine());
  float* p = static_cast<float*>(m.get_data_handle());
  const size_t n = md.get_size() / sizeof(float);
  for (size_t i = 0; i < n; ++i) p[i] = float(i % 13) * 0.01f - 0.06f;
  return m;
}

memory::desc md(const dims& d, tag t) { return memory::desc(d, memory::data_type::f32, t); }

// A primitive with its arguments; keeps the buffers alive.
class Op final : public DnnlOp {
 public:
  Op(dnnl::primitive prim, std::unordered_map<int, memory> args, std::string impl)
      : prim_(std::move(prim)), args_(std::move(args)), impl_(std::move(impl)), stream_(engine()) {}
  void run() override {
    prim_.execute(stream_, args_);
    stream_.wait();
  }
  std::string impl() const override { return impl_; }

 private:
  dnnl::primitive prim_;
  std::unordered_map<int, memory> args_;
  std::string impl_;
  dnnl::stream stream_;
};

// The three convolution primitive descriptors of one shape (backward ones only when asked).
struct ConvPds {
  dnnl::convolution_forward::primitive_desc fwd;
  dnnl::convolution_backward_data::primitive_desc bwd_data;
  dnnl::convolution_backward_weights::primitive_desc bwd_weights;
};

ConvPds conv_pds(const ConvShape& s, DnnlLayout layout, ConvPass pass) {
  const bool any = layout == DnnlLayout::any;
  const memory::desc src = md({s.n, s.ci, s.h, s.w}, any ? tag::any : tag::nhwc);
  const memory::desc wei = md({s.co, s.ci, s.kh, s.kw}, layout == DnnlLayout::plain ? tag::hwio : tag::any);
  const memory::desc dst = md({s.n, s.co, s.oh(), s.ow()}, any ? tag::any : tag::nhwc);
  const memory::desc bias = s.bias ? md({s.co}, tag::x) : memory::desc();
  const dims strides{1, 1}, pad{s.pad_h, s.pad_w};
  const auto fwd_prop = dnnl::prop_kind::forward_training;
  const auto alg = dnnl::algorithm::convolution_direct;
  ConvPds p;
#if DNNL_VERSION_MAJOR >= 3
  p.fwd = dnnl::convolution_forward::primitive_desc(engine(), fwd_prop, alg, src, wei, bias, dst, strides,
                                                    pad, pad);
  if (pass == ConvPass::backward_data)
    p.bwd_data = dnnl::convolution_backward_data::primitive_desc(engine(), alg, src, wei, dst, strides, pad,
                                                                 pad, p.fwd);
  if (pass == ConvPass::backward_weights)
    p.bwd_weights = dnnl::convolution_backward_weights::primitive_desc(engine(), alg, src, wei, bias, dst,
                                                                       strides, pad, pad, p.fwd);
#else
  p.fwd = dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(fwd_prop, alg, src, wei, bias, dst, strides, pad, pad), engine());
  if (pass == ConvPass::backward_data)
    p.bwd_data = dnnl::convolution_backward_data::primitive_desc(
        dnnl::convolution_backward_data::desc(alg, src, wei, dst, strides, pad, pad), engine(), p.fwd);
  if (pass == ConvPass::backward_weights)
    p.bwd_weights = dnnl::convolution_backward_weights::primitive_desc(
        dnnl::convolution_backward_weights::desc(alg, src, wei, bias, dst, strides, pad, pad), engine(),
        p.fwd);
#endif
  return p;
}

std::unique_ptr<DnnlOp> conv_op(const ConvShape& s, ConvPass pass, DnnlLayout layout,
                                memory::desc* fwd_dst = nullptr) {
  ConvPds p = conv_pds(s, layout, pass);
  if (fwd_dst) *fwd_dst = p.fwd.dst_desc();
  std::unordered_map<int, memory> args;
  switch (pass) {
    case ConvPass::forward:
      args = {{DNNL_ARG_SRC, filled(p.fwd.src_desc())},
              {DNNL_ARG_WEIGHTS, filled(p.fwd.weights_desc())},
              {DNNL_ARG_DST, filled(p.fwd.dst_desc())}};
      if (s.bias) args.emplace(DNNL_ARG_BIAS, filled(p.fwd.bias_desc()));
      return std::make_unique<Op>(dnnl::convolution_forward(p.fwd), std::move(args), p.fwd.impl_info_str());
    case ConvPass::backward_data:
      args = {{DNNL_ARG_DIFF_DST, filled(p.bwd_data.diff_dst_desc())},
              {DNNL_ARG_WEIGHTS, filled(p.bwd_data.weights_desc())},
              {DNNL_ARG_DIFF_SRC, filled(p.bwd_data.diff_src_desc())}};
      return std::make_unique<Op>(dnnl::convolution_backward_data(p.bwd_data), std::move(args),
                                  p.bwd_data.impl_info_str());
    case ConvPass::backward_weights:
      args = {{DNNL_ARG_SRC, filled(p.bwd_weights.src_desc())},
              {DNNL_ARG_DIFF_DST, filled(p.bwd_weights.diff_dst_desc())},
              {DNNL_ARG_DIFF_WEIGHTS, filled(p.bwd_weights.diff_weights_desc())}};
      if (s.bias) args.emplace(DNNL_ARG_DIFF_BIAS, filled(p.bwd_weights.diff_bias_desc()));
      return std::make_unique<Op>(dnnl::convolution_backward_weights(p.bwd_weights), std::move(args),
                                  p.bwd_weights.impl_info_str());
  }
  return nullptr;
}

// Max pooling 2x2 stride 2 of src [n, c, h, w] in format `src_md` (NHWC when plain): the forward
// (training) and the backward, sharing the forward's workspace.
std::pair<std::unique_ptr<DnnlOp>, std::unique_ptr<DnnlOp>> max_pool_ops(const memory::desc& src, int64_t n,
                                                                         int64_t c, int64_t h, int64_t w,
                                                                         bool any) {
  const memory::desc dst = md({n, c, h / 2, w / 2}, any ? tag::any : tag::nhwc);
  const dims strides{2, 2}, kernel{2, 2}, pad{0, 0};
  const auto alg = dnnl::algorithm::pooling_max;
#if DNNL_VERSION_MAJOR >= 3
  const dims dilation{0, 0};
  dnnl::pooling_forward::primitive_desc fwd(engine(), dnnl::prop_kind::forward_training, alg, src, dst,
                                            strides, kernel, dilation, pad, pad);
  dnnl::pooling_backward::primitive_desc bwd(engine(), alg, src, fwd.dst_desc(), strides, kernel, dilation,
                                             pad, pad, fwd);
#else
  dnnl::pooling_forward::primitive_desc fwd(dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training,
                                                                        alg, src, dst, strides, kernel, pad,
                                                                        pad),
                                            engine());
  dnnl::pooling_backward::primitive_desc bwd(dnnl::pooling_backward::desc(alg, src, fwd.dst_desc(), strides,
                                                                          kernel, pad, pad),
                                             engine(), fwd);
#endif
  memory workspace = filled(fwd.workspace_desc());
  std::unordered_map<int, memory> fa{{DNNL_ARG_SRC, filled(fwd.src_desc())},
                                     {DNNL_ARG_DST, filled(fwd.dst_desc())},
                                     {DNNL_ARG_WORKSPACE, workspace}};
  std::unordered_map<int, memory> ba{{DNNL_ARG_DIFF_DST, filled(bwd.diff_dst_desc())},
                                     {DNNL_ARG_DIFF_SRC, filled(bwd.diff_src_desc())},
                                     {DNNL_ARG_WORKSPACE, workspace}};
  auto f = std::make_unique<Op>(dnnl::pooling_forward(fwd), std::move(fa), fwd.impl_info_str());
  // The forward writes a valid workspace (argmax positions) before any backward reads it.
  f->run();
  auto b = std::make_unique<Op>(dnnl::pooling_backward(bwd), std::move(ba), bwd.impl_info_str());
  return {std::move(f), std::move(b)};
}

}  // namespace

std::string ConvShape::str() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%lldx%lldx%lldx%lld -> %lld, %lldx%lld, pad %lld/%lld%s", (long long)n,
                (long long)h, (long long)w, (long long)ci, (long long)co, (long long)kh, (long long)kw,
                (long long)pad_h, (long long)pad_w, bias ? ", bias" : "");
  return buf;
}

const char* layout_name(DnnlLayout l) {
  switch (l) {
    case DnnlLayout::plain: return "plain";
    case DnnlLayout::weights_any: return "weights_any";
    case DnnlLayout::any: return "any";
  }
  return "?";
}

const char* conv_pass_name(ConvPass p) {
  switch (p) {
    case ConvPass::forward: return "forward";
    case ConvPass::backward_data: return "backward_data";
    case ConvPass::backward_weights: return "backward_weights";
  }
  return "?";
}

std::unique_ptr<DnnlOp> make_conv(const ConvShape& shape, ConvPass pass, DnnlLayout layout) {
  try {
    return conv_op(shape, pass, layout);
  } catch (const dnnl::error& e) {
    throw std::runtime_error(std::string("oneDNN convolution ") + conv_pass_name(pass) + " of " +
                             shape.str() + ": " + e.what());
  }
}

std::vector<NamedOp> cnn_step_ops(int64_t batch, DnnlLayout layout) {
  const bool any = layout == DnnlLayout::any;
  const ConvShape c1{.n = batch, .h = 28, .w = 28, .ci = 1, .co = 32, .kh = 5, .kw = 5, .bias = true};
  const ConvShape c2{.n = batch, .h = 12, .w = 12, .ci = 32, .co = 64, .kh = 5, .kw = 5, .bias = true};
  try {
    memory::desc c1_dst, c2_dst;
    auto c1f = conv_op(c1, ConvPass::forward, layout, &c1_dst);
    auto c2f = conv_op(c2, ConvPass::forward, layout, &c2_dst);
    auto [p1f, p1b] = max_pool_ops(any ? c1_dst : md({batch, 32, 24, 24}, tag::nhwc), batch, 32, 24, 24, any);
    auto [p2f, p2b] = max_pool_ops(any ? c2_dst : md({batch, 64, 8, 8}, tag::nhwc), batch, 64, 8, 8, any);
    std::vector<NamedOp> ops;
    ops.push_back({"conv1 forward", std::move(c1f)});
    ops.push_back({"pool1 forward", std::move(p1f)});
    ops.push_back({"conv2 forward", std::move(c2f)});
    ops.push_back({"pool2 forward", std::move(p2f)});
    ops.push_back({"pool2 backward", std::move(p2b)});
    ops.push_back({"conv2 backward_weights", conv_op(c2, ConvPass::backward_weights, layout)});
    ops.push_back({"conv2 backward_data", conv_op(c2, ConvPass::backward_data, layout)});
    ops.push_back({"pool1 backward", std::move(p1b)});
    ops.push_back({"conv1 backward_weights", conv_op(c1, ConvPass::backward_weights, layout)});
    return ops;
  } catch (const dnnl::error& e) {
    throw std::runtime_error(std::string("oneDNN primitives of the CNN step: ") + e.what());
  }
}

std::string lines_containing_json(const std::string& text, const std::vector<std::string>& keys) {
  std::string out = "[";
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    bool hit = false;
    for (const auto& k : keys) hit = hit || line.find(k) != std::string::npos;
    if (!hit) continue;
    const size_t b = line.find_first_not_of(" \t");
    out += (out.size() > 1 ? ", " : "") + json_string(line.substr(b == std::string::npos ? 0 : b));
  }
  return out + "]";
}

std::string dnnl_version() {
  const dnnl_version_t* v = ::dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

}  // namespace mjbench
