// minijax autodiff and batching rules of debug_callback (mj::debug::print / callback): JVP calls it
// on the primal values only; batching calls it once per element (JAX's debugging.py unrolls too).
#include "autodiff/batching_util.h"
#include "core/lax.h"
#include "core/primitive.h"
#include "core/trace.h"
#include "core/views/memory_ops.h"

namespace minijax {

namespace {

using Outs = std::pair<std::vector<Array>, std::vector<Array>>;
using BOuts = std::pair<std::vector<Array>, std::vector<int64_t>>;

// The callback sees the primal values (JAX: debug_callback_jvp_rule); it has no outputs, so no
// tangents.
Outs debug_callback_jvp(const std::vector<Array>& primals, const std::vector<Array>&, const Params& p) {
  (void)minijax::bind(DebugCallbackParams::primitive(), primals, p);
  return {{}, {}};
}

// Under vmap the callback runs once per element of the batch, in order, with that element's
// values (mapped operands indexed along their batch dimension, unmapped ones as they are).
BOuts debug_callback_batch(const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params& p) {
  const int64_t n = batch_axis_size(args, dims);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<Array> element;
    element.reserve(args.size());
    for (size_t k = 0; k < args.size(); ++k) {
      if (dims[k] == kNotMapped) {
        element.push_back(args[k]);
        continue;
      }
      const Array& x = args[k];
      std::vector<int64_t> start(x.ndim(), 0), limit(x.shape());
      start[size_t(dims[k])] = i;
      limit[size_t(dims[k])] = i + 1;
      element.push_back(lax::squeeze(lax::slice(x, start, limit), {dims[k]}));
    }
    (void)minijax::bind(DebugCallbackParams::primitive(), element, p);
  }
  return {{}, {}};
}

const Registrar reg([] {
  auto& p = get_or_create_primitive("debug_callback");
  p.jvp = debug_callback_jvp;
  p.no_transpose_reason = "not linear: it has no outputs, and its operands are primal values";
  p.batch = debug_callback_batch;
});

}  // namespace

}  // namespace minijax
