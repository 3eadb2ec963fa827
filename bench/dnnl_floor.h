// minijax bench: oneDNN's convolution and pooling primitives called directly on private buffers —
// the floors of bench/conv.cc and bench/cnn_step.cc (forward, backward-data, backward-weights, max pooling).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mjbench {

/// A 2-D f32 convolution as the benchmarks use it: input [n, h, w, ci] (NHWC), kernel
/// [kh, kw, ci, co] (HWIO), output [n, oh, ow, co] (NHWC), stride 1 and per-side padding
/// (pad_h, pad_w on both sides: 0 for "VALID", (k - 1) / 2 for an odd "SAME" window).
struct ConvShape {
  int64_t n = 0, h = 0, w = 0, ci = 0, co = 0, kh = 0, kw = 0;
  int64_t pad_h = 0, pad_w = 0;
  bool bias = false;  ///< the forward adds a bias [co]; the backward-weights also writes its gradient
  int64_t oh() const { return h + 2 * pad_h - kh + 1; }
  int64_t ow() const { return w + 2 * pad_w - kw + 1; }
  /// Multiply-adds of one pass (forward, backward-data and backward-weights have the same count).
  double macs() const { return double(n) * double(oh() * ow()) * double(co) * double(ci * kh * kw); }
  /// "n x h x w x ci -> co, kh x kw, pad ph/pw".
  std::string str() const;
};

/// Which oneDNN convolution primitive.
enum class ConvPass { forward, backward_data, backward_weights };
const char* conv_pass_name(ConvPass p);  ///< "forward", "backward_data", "backward_weights"

/// The memory formats the primitives are created with: `plain` gives them NHWC data and HWIO
/// kernels (what the compiled code passes: no reorder anywhere); `weights_any` NHWC data and the
/// kernels (and kernel gradients) in the format oneDNN chooses (format_tag::any); `any` lets oneDNN
/// choose every format. The buffers are allocated in the chosen formats and no reorder into them
/// is timed: floors for better layouts than the plain ones.
enum class DnnlLayout { plain, weights_any, any };
/// "plain", "weights_any", "any".
const char* layout_name(DnnlLayout l);

/// One oneDNN primitive built once (its descriptors, primitive and buffers, filled with small
/// values), run on demand on the CPU engine with the library's own threads.
class DnnlOp {
 public:
  virtual ~DnnlOp() = default;
  /// Executes the primitive and waits for it (stream::wait).
  virtual void run() = 0;
  /// oneDNN's implementation name (primitive_desc::impl_info_str, e.g. "brgconv:avx512_core").
  virtual std::string impl() const = 0;
};

/// The convolution `pass` of `shape`; backward passes are created with the forward's primitive
/// descriptor as hint, as a training step does. Throws std::runtime_error (oneDNN's message) when
/// oneDNN refuses it.
std::unique_ptr<DnnlOp> make_conv(const ConvShape& shape, ConvPass pass, DnnlLayout layout);

/// One primitive of a step's floor, named after the layer and pass ("conv2 backward_data").
struct NamedOp {
  std::string name;
  std::unique_ptr<DnnlOp> op;
};

/// The oneDNN primitives of the CNN sample's training step (samples/fashion_mnist_cnn_lib.h) at
/// batch `batch`, in the order a step runs them: conv1 forward (5x5, 1 -> 32 channels over 28x28,
/// with bias), pool1 forward (max 2x2 stride 2 over [batch, 24, 24, 32], training: it writes the
/// workspace), conv2 forward (5x5, 32 -> 64 over 12x12, bias), pool2 forward ([batch, 8, 8, 64]),
/// then pool2 backward, conv2 backward-weights (with the bias gradient), conv2 backward-data, pool1
/// backward and conv1 backward-weights (the input needs no gradient: no conv1 backward-data). Each
/// pooling backward reads its forward's workspace. With `layout` any, a pooling's src and diff_src
/// take the format oneDNN chose for the preceding convolution's dst. Throws as make_conv.
std::vector<NamedOp> cnn_step_ops(int64_t batch, DnnlLayout layout);

/// The oneDNN version, "2.6.3".
std::string dnnl_version();

/// The lines of `text` (e.g. Compiled::as_text()) containing any of `keys`, trimmed, as a JSON
/// array of strings: how the compiled program computes its convolutions and poolings ("oneDNN
/// forward", "loop nest", "reorder", ...).
std::string lines_containing_json(const std::string& text, const std::vector<std::string>& keys);

}  // namespace mjbench
