// minijax public-API bad-input cases: transformations, control flow, jit and staging.
// Owns transform_cases(): grad/vmap/jvp/vjp/jacobians, scan/cond/while, checkpoint, jit and friends.
#include "api/bad_input.h"

namespace bad_input {
namespace {
namespace mj = minijax;
namespace cp = minijax::checkpoint_policies;
using mj::Array;
using mj::DType;
using mj::ShapeError;
using mj::TypeError;
using mj::ValueError;

Array ints() { return mj::astype(iota_f32({3}), DType::i32); }
// A function of a vector whose result is a vector (not the scalar grad needs).
Array vec_fn(const Array& v) { return mj::sin(v); }
Array scalar_fn(const Array& v) { return mj::sum(mj::sin(v)); }
std::vector<Array> flat_sin(const std::vector<Array>& a) { return {mj::sin(a[0])}; }

}  // namespace

// For declarations that take no call site (variadic templates: the library's line is recorded).

std::vector<Case> transform_cases() {
  return {
      // Differentiation: a non-scalar output, an integer input, wrong tangent shapes.
      BAD("minijax::grad", TypeError, mj::grad(vec_fn)(x4()), "grad", "f32[4]"),
      BAD("minijax::value_and_grad", TypeError, mj::value_and_grad(vec_fn)(x4()), "grad", "f32[4]"),
      BAD("minijax::jvp", TypeError, mj::jvp(vec_fn, x4(), x23()), "jvp", "f32[4]", "f32[2,3]"),
      BAD("minijax::jvp_flat", TypeError, mj::jvp_flat(flat_sin, {x4()}, {x23()}), "jvp", "f32[4]", "f32[2,3]"),
      Case{"minijax::vjp", [] {  // the pullback's call site is recorded (not vjp's line inside the library)
        auto [out, pullback] = mj::vjp(vec_fn, x4());
        expect_error<TypeError>([&] { (void)pullback(x23()); }, {"vjp", "f32[4]", "f32[2,3]"});
      }},
      BAD("minijax::vjp_flat", ValueError, mj::vjp_flat(flat_sin, {Array()}), "vjp", "leaf 0", "empty"),
      BAD_ANY_SITE("minijax::linearize", ValueError, mj::linearize(vec_fn, Array()), "linearize", "leaf 0", "empty"),
      BAD("minijax::linearize_flat", ValueError, mj::linearize_flat(flat_sin, {Array()}), "linearize", "leaf 0", "empty"),
      BAD("minijax::jacfwd", TypeError, mj::jacfwd(vec_fn)(ints()), "jacfwd", "i32[3]"),
      BAD("minijax::jacrev", TypeError, mj::jacrev(vec_fn)(ints()), "jacrev", "i32[3]"),
      BAD("minijax::jacfwd_flat", TypeError, mj::jacfwd_flat(flat_sin, ints()), "jacfwd", "i32[3]"),
      BAD("minijax::jacrev_flat", TypeError, mj::jacrev_flat(flat_sin, ints()), "jacrev", "i32[3]"),
      BAD("minijax::hessian", TypeError, mj::hessian(scalar_fn)(ints()), "jacfwd", "i32[3]"),
      BAD("minijax::standard_basis", TypeError, mj::standard_basis(mj::ShapedArray{{3}, DType::i32}), "standard_basis", "i32[3]"),
      BAD("minijax::check_grads", ValueError, mj::check_grads(scalar_fn, x4(), 1, {"sideways"}), "check_grads", "sideways"),
      BAD("minijax::check_grads_flat", ValueError, mj::check_grads_flat(flat_sin, {x4()}, 0), "check_grads", "order", "0"),
      BAD("minijax::check_jvp", TypeError, mj::check_jvp(flat_sin, {ints()}, {}), "check_grads", "i32[3]"),
      BAD("minijax::check_vjp", TypeError, mj::check_vjp(flat_sin, {ints()}, {}), "check_grads", "i32[3]"),
      // vmap: axes out of range, mismatched sizes.
      BAD("minijax::vmap", ValueError, mj::vmap(vec_fn, mj::VmapOptions{.in_axes = {2}})(x23()), "vmap", "2"),
      BAD("minijax::vmap_flat", ValueError, mj::vmap_flat(flat_sin, {x23()}, {2}, {0}), "vmap", "2"),
      // Control flow: carries that change type, predicates that are not scalars, bad lengths.
      BAD("minijax::scan", ValueError,
          mj::scan([](const Array& c, mj::None) { return std::pair{c, c}; }, mj::scalar(0.0f),
                   mj::ScanOptions{.length = -1}),
          "scan", "-1"),
      BAD("minijax::scan_flat", TypeError,
          mj::scan_flat([](const std::vector<Array>& a) { return std::vector<Array>{mj::astype(a[0], DType::i32), a[1]}; },
                        {mj::scalar(0.0f)}, {x4()}, {}, "c"),
          "scan", "f32[]", "i32[]"),
      BAD("minijax::fori_loop", TypeError,
          mj::fori_loop(0, 3, [](const Array&, const Array& c) { return mj::astype(c, DType::i32); }, mj::scalar(0.0f)),
          "scan", "f32[]", "i32[]"),
      // unroll: negative values; unroll with traced bounds; bounds of different dtypes.
      BAD("minijax::scan", ValueError,
          mj::scan([](const Array& c, mj::None) { return std::pair{c, c}; }, mj::scalar(0.0f),
                   mj::ScanOptions{.length = 3, .unroll = -1}),
          "scan", "unroll=-1"),
      BAD("minijax::fori_loop", ValueError,
          mj::fori_loop(0, 3, [](const Array&, const Array& c) { return c; }, mj::scalar(0.0f), {.unroll = -3}),
          "fori_loop", "unroll=-3"),
      BAD("minijax::fori_loop", ValueError,
          mj::make_jaxpr([](const Array& hi) {
            return mj::fori_loop(0, hi, [](const Array&, const Array& c) { return c; }, mj::scalar(0.0f), {.unroll = 2});
          })(mj::scalar(3, DType::i32)),
          "fori_loop", "unroll=2", "i32[]"),
      BAD("minijax::fori_loop", TypeError,
          mj::fori_loop(mj::scalar(0, DType::u32), mj::scalar(3, DType::i32),
                        [](const Array&, const Array& c) { return c; }, mj::scalar(0.0f)),
          "fori_loop", "u32", "i32"),
      BAD("minijax::while_loop", TypeError,
          mj::while_loop([](const Array& v) { return v; }, [](const Array& v) { return v; }, x4()),
          "while_loop", "f32[4]"),
      BAD("minijax::while_flat", TypeError,
          mj::while_flat(flat_sin, flat_sin, {x4()}, "c"), "while_loop", "f32[4]"),
      BAD("minijax::cond", TypeError,
          mj::cond(x4(), [](const Array& v) { return v; }, [](const Array& v) { return v; }, x4()), "cond", "f32[4]"),
      BAD("minijax::switch_", TypeError,
          mj::switch_(mj::scalar(1.0), std::vector<std::function<Array(const Array&)>>{vec_fn}, x4()), "switch", "f32[]"),
      BAD("minijax::cond_flat", TypeError, mj::cond_flat(x4(), {flat_sin, flat_sin}, {x4()}), "cond", "f32[4]"),
      BAD("minijax::bind_cond", TypeError,
          mj::bind_cond(x4(), {mj::make_jaxpr(vec_fn)(x4()), mj::make_jaxpr(vec_fn)(x4())}, {x4()}), "cond", "f32[4]"),
      // Checkpointing: unknown memory kinds, null policies, names on empty arrays.
      BAD("minijax::checkpoint", TypeError,
          mj::grad(mj::checkpoint(vec_fn))(x4()), "grad", "f32[4]"),
      BAD("minijax::remat", TypeError, mj::grad(mj::remat(vec_fn))(x4()), "grad", "f32[4]"),
      // Asking to share the traces of a callable that cannot be identified (a capturing lambda).
      BAD("minijax::checkpoint", TypeError,
          mj::checkpoint([k = 2.f](const Array& v) { return v * k; }, {.share_traces = mj::TraceSharing::required}),
          "checkpoint", "TraceSharing::required", "cannot be identified"),
      BAD("minijax::remat", ValueError, mj::remat(static_cast<Array (*)(const Array&)>(nullptr)), "checkpoint",
          "null function pointer"),
      BAD("minijax::checkpoint_name", TypeError, mj::checkpoint_name(Array(), "h"), "checkpoint_name", "empty"),
      BAD("minijax::checkpoint_policies::offload_dot_with_no_batch_dims", ValueError,
          cp::offload_dot_with_no_batch_dims("gpu", "pinned_host"), "offload_dot_with_no_batch_dims", "gpu"),
      BAD("minijax::checkpoint_policies::save_and_offload_only_these_names", ValueError,
          cp::save_and_offload_only_these_names({}, {"a"}, "device", "pinned_hots"), "save_and_offload_only_these_names", "pinned_hots"),
      BAD("minijax::checkpoint_policies::save_from_both_policies", ValueError,
          cp::save_from_both_policies(nullptr, cp::dots_saveable()), "save_from_both_policies"),
      BAD("minijax::checkpoint_policies::custom", ValueError, cp::custom("mine", nullptr), "custom", "mine"),
      BAD_ANY_SITE("minijax::saved_residuals", ValueError, mj::saved_residuals(vec_fn, Array()), "saved_residuals", "leaf 0", "empty"),
      BAD("minijax::saved_residuals_flat", ValueError, mj::saved_residuals_flat(flat_sin, {Array()}), "saved_residuals", "leaf 0", "empty"),
      // Custom derivatives whose rules return the wrong shape.
      BAD("minijax::custom_jvp", TypeError,
          mj::jvp(mj::custom_jvp(vec_fn, [](const Array& x, const Array& t) { return std::pair{mj::sin(x), mj::sum(t)}; }),
                  x4(), x4()),
          "Custom JVP rule", "f32[4]", "f32[]"),
      BAD("minijax::custom_vjp", TypeError,
          mj::grad([](const Array& v) {
            auto f = mj::custom_vjp(vec_fn, [](const Array& x) { return std::pair{mj::sin(x), x}; },
                                    [](const Array& r, const Array& g) { return mj::sum(g * r); });
            return mj::sum(f(v));
          })(x4()),
          "Custom VJP bwd rule", "f32[4]", "f32[]"),
      BAD("minijax::custom_jvp_call", TypeError,
          mj::jvp_flat([](const std::vector<Array>& a) {
            return mj::custom_jvp_call(flat_sin, [](const std::vector<Array>& p, const std::vector<Array>& t) {
              return std::pair{std::vector<Array>{mj::sin(p[0])}, std::vector<Array>{mj::sum(t[0])}};
            }, a, "f", "f_jvp");
          }, {x4()}, {x4()}),
          "Custom JVP rule of 'f'", "f32[4]", "f32[]"),
      // Staging and evaluation of jaxprs with arguments that do not fit.
      BAD("minijax::make_jaxpr", TypeError, mj::make_jaxpr([](const Array& v) { return mj::astype(v, DType::token); })(x4()), "convert_element_type"),
      BAD("minijax::trace_to_jaxpr", ShapeError,
          mj::trace_to_jaxpr([](const std::vector<Array>& a) { return std::vector<Array>{a[0] + a[1]}; },
                             {mj::ShapedArray{{2, 3}}, mj::ShapedArray{{4}}}), "add", "[2,3]", "[4]"),
      BAD("minijax::eval_jaxpr", ShapeError, mj::eval_jaxpr(mj::make_jaxpr(vec_fn)(x4()), {x4(), x4()}), "eval_jaxpr", "1 args", "2"),
      BAD("minijax::eval_jaxpr_at", ShapeError,
          mj::eval_jaxpr_at(*mj::make_jaxpr(vec_fn)(x4()).jaxpr, {}, {}, nullptr), "eval_jaxpr_at", "1 args"),
      BAD("minijax::closed_call", ShapeError,
          mj::closed_call([](const Array& a, const Array& b) { return a + b; }, "f")(x23(), x4()), "add", "[2,3]", "[4]"),
      BAD("minijax::bind_call", TypeError,
          mj::bind_call(mj::pjit_p(), std::make_shared<mj::ClosedJaxpr>(mj::make_jaxpr(vec_fn)(x4())), "f", {x23()}), "pjit", "f32[2,3]"),
      BAD("minijax::verify_jaxpr", TypeError,
          mj::verify_jaxpr(mj::detail::parse_jaxpr_unchecked("{ lambda ; a:f32[3]. let b:f64[3] = sin a in (b,) }")),
          "sin", "f64[3]"),
      BAD("minijax::parse_jaxpr", ValueError, mj::parse_jaxpr("{ lambda ; a:f33[3]. let  in (a,) }"),
          "parse_jaxpr", "line 1, column 14", "f33"),
      // jit: static_argnums naming an Array, arguments that do not match a lowering.
      BAD("minijax::jit", TypeError, mj::jit(vec_fn, mj::JitOptions{.static_argnums = {0}})(x4()), "jit", "static"),
      BAD("minijax::jit", TypeError,
          mj::jit([k = 2.f](const Array& v) { return v * k; },
                  mj::JitOptions{.name = "scaled", .share_traces = mj::TraceSharing::required}),
          "jit 'scaled'", "TraceSharing::required", "cannot be identified"),
      BAD("minijax::Jit::Jit", ValueError,
          (mj::Jit<Array (*)(const Array&)>(nullptr, mj::JitOptions{}, std::source_location::current())),
          "jit 'jit'", "null function pointer"),
      BAD("minijax::Jit::Jit", ValueError,
          (mj::Jit<Array (*)(const Array&)>(vec_fn, mj::JitOptions{.donate_argnums = {3}}, std::source_location::current()))(x4()),
          "donate_argnums", "3"),
      BAD("minijax::Jit::operator()", TypeError, mj::jit(vec_fn)(mj::ShapeDtypeStruct{{4}}), "ShapeDtypeStruct"),
      BAD("minijax::Jit::lower", ShapeError, mj::jit([](const Array& a) { return mj::matmul(a, a); }).lower(x23()), "matmul", "[2,3]"),
      Case{"minijax::Lowered::compile", [] {  // a predicted peak beyond config().device_memory_bytes
        auto lowered = mj::jit(vec_fn).lower(mj::ShapeDtypeStruct{{1 << 20}});
        const int64_t saved = mj::config().device_memory_bytes;
        mj::config().device_memory_bytes = 1 << 20;  // below the 8 MiB of its argument and output
        expect_error<mj::ResourceExhaustedError>([&] { (void)lowered.compile(); },
                                                 {"compile", "exceeds the capacity of 1048576"});
        mj::config().device_memory_bytes = saved;
      }},
      BAD("minijax::Compiled::operator()", TypeError, mj::jit(vec_fn).lower(x4()).compile()(x23()), "f32[4]", "f32[2,3]"),
      BAD("minijax::Jit::run_spmd_shards", mj::ShardingError, mj::jit(vec_fn).run_spmd_shards(x4()), "jit", "no in_shardings or out_shardings"),
  };
}

}  // namespace bad_input
