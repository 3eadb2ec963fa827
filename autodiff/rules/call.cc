// minijax autodiff and batching rules of the call primitives `pjit` and `closed_call`.
// Owns their JVP (linearize the body, stage the tangent call), transpose and batching rules.
#include <memory>

#include "autodiff/batching_util.h"
#include "autodiff/jvp.h"
#include "autodiff/linearize.h"
#include "autodiff/transpose.h"
#include "autodiff/vmap.h"
#include "core/pjit.h"
#include "core/staging.h"

namespace minijax {
namespace {

const char* jaxpr_key(const Primitive& p) { return p.name == "pjit" ? "jaxpr" : "call_jaxpr"; }

// JVP: the primal outputs are computed by linearizing the body on the primals (so they stay
// concrete eagerly); the tangents are one call of the body's linear part, whose residuals are
// passed as leading operands. Under linearize, that call is what lands in the linear jaxpr.
JvpRule call_jvp(const Primitive& p) {
  return [&p](const std::vector<Array>& primals, const std::vector<Array>& tangents,
              const Params& params) {
    ClosedJaxprPtr body = params.get_jaxpr(jaxpr_key(p));
    std::string name = params.has("name") ? params.get_string("name") : std::string("call");
    FlatFn fn = [body](const std::vector<Array>& xs) { return eval_jaxpr(*body, xs); };
    LinearizeResult lr = linearize_flat(fn, primals);
    auto lin = std::make_shared<ClosedJaxpr>();
    lin->jaxpr = std::make_shared<Jaxpr>(convert_constvars_jaxpr(*lr.linear.jaxpr));
    std::vector<Array> args = lr.linear.consts;
    for (size_t i = 0; i < tangents.size(); ++i)
      args.push_back(instantiate_zero(tangents[i], primals[i].aval()));
    auto touts = bind_call(p, lin, "jvp(" + name + ")", args);
    for (size_t i = 0; i < touts.size(); ++i)
      if (lr.out_zero[i]) touts[i] = Array();
    return std::pair{lr.primal_outs, touts};
  };
}

// Transpose: the body is linear in the undefined operands; it is transposed inline.
TransposeRule call_transpose(const Primitive& p) {
  return [&p](const std::vector<Array>& cts_out, const std::vector<Array>& args,
              const std::vector<ShapedArray>& avals, const Params& params) {
    ClosedJaxprPtr body = params.get_jaxpr(jaxpr_key(p));
    std::vector<bool> linear;
    for (auto& a : args) linear.push_back(!a.defined());
    return backward_pass(*body->jaxpr, body->consts, args, linear, cts_out);
  };
}

// Batching: the body is vmapped and staged as a new call (batch dims moved to the front).
BatchRule call_batch(const Primitive& p) {
  return [&p](const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params& params) {
    ClosedJaxprPtr body = params.get_jaxpr(jaxpr_key(p));
    std::string name = params.has("name") ? params.get_string("name") : std::string("call");
    int64_t size = batch_axis_size(args, dims);
    std::vector<Array> moved;
    std::vector<int64_t> in_axes;
    std::vector<ShapedArray> in_avals;
    for (size_t i = 0; i < args.size(); ++i) {
      if (dims[i] == kNotMapped) {
        moved.push_back(args[i]);
        in_axes.push_back(kNotMapped);
      } else {
        moved.push_back(move_batch_dim(args[i], dims[i], 0));
        in_axes.push_back(0);
      }
      in_avals.push_back(moved.back().aval());
    }
    FlatFn fn = [body](const std::vector<Array>& xs) { return eval_jaxpr(*body, xs); };
    size_t nout = body->jaxpr->outvars.size();
    ClosedJaxpr batched = trace_to_jaxpr(
        [&](const std::vector<Array>& xs) {
          return vmap_flat(fn, xs, in_axes, std::vector<int64_t>(nout, 0));
        },
        in_avals);
    (void)size;
    auto bj = std::make_shared<ClosedJaxpr>();
    bj->jaxpr = std::make_shared<Jaxpr>(convert_constvars_jaxpr(*batched.jaxpr));
    std::vector<Array> call_args = batched.consts;
    call_args.insert(call_args.end(), moved.begin(), moved.end());
    auto outs = bind_call(p, bj, "vmap(" + name + ")", call_args);
    return std::pair{outs, std::vector<int64_t>(outs.size(), 0)};
  };
}

Registrar reg([] {
  for (const char* n : {"pjit", "closed_call"}) {
    Primitive& p = get_or_create_primitive(n);
    p.jvp = call_jvp(p);
    p.transpose = call_transpose(p);
    p.batch = call_batch(p);
  }
});

}  // namespace
}  // namespace minijax
