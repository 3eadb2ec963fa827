// minijax public-API bad-input cases: dtypes, memory kinds, Array members, pytrees, files, profiler.
// Owns misc_cases(): the declarations outside numpy, lax, transformations and sharding.
#include "api/bad_input.h"

#include <xtensor/xarray.hpp>

namespace bad_input {
namespace {
namespace mj = minijax;
using mj::Array;
using mj::DType;
using mj::IOError;
using mj::ShapeError;
using mj::TypeError;
using mj::ValueError;

Array abstract4() { return mj::ShapeDtypeStruct{{4}}; }
const std::string kNoDir = "/nonexistent_minijax_dir/sub";

// check_trace_depth with config().max_trace_depth = 0 (a bad setting), restored afterwards.
void check_trace_depth_at_zero(std::source_location loc) {
  struct Restore {
    int depth = mj::config().max_trace_depth;
    ~Restore() { mj::config().max_trace_depth = depth; }
  } restore;
  mj::config().max_trace_depth = 0;
  mj::check_trace_depth(loc);
}

}  // namespace


std::vector<Case> misc_cases() {
  return {
      // Names and sizes.
      BAD("minijax::dtype_from_name", ValueError, mj::dtype_from_name("float16"), "float16"),
      BAD("minijax::memory_kind_from_name", ValueError, mj::memory_kind_from_name("hbm"), "hbm", "pinned_host"),
      BAD("minijax::checked_nbytes", ValueError, mj::checked_nbytes({int64_t(1) << 62, 8}, DType::f64), "more than 2^63"),
      BAD("minijax::promote_types", TypeError, mj::promote_types({DType::f32, false}, {DType::token, false}), "promote", "Tok"),
      // Array members: wrong axis, wrong element type, non-scalar items, abstract values.
      BAD("minijax::Array::dim", ShapeError, x23().dim(2), "Array::dim", "axis 2", "f32[2,3]", "rank 2"),
      BAD("minijax::Array::operator[]", mj::IndexError, x23()[2], "Array::operator[]", "index 2 is out of bounds", "size 2",
          "f32[2,3]"),
      BAD("minijax::Array::at", mj::IndexError, x23().at(-3), "Array::at", "index -3 is out of bounds"),
      BAD("minijax::Array::data", TypeError, x23().data<int32_t>(), "f32", "i32"),
      Case{"minijax::Array::mutable_data", [] {
        Array a = x23();
        expect_error<TypeError>([&] { (void)a.mutable_data<double>(); }, {"f32", "f64"});
      }},
      BAD("minijax::Array::raw_data", ValueError, abstract4().raw_data(), "abstract"),
      BAD("minijax::Array::item", ValueError, x23().item<float>(), "item()", "[2,3]"),
      BAD("minijax::Array::item_f64", ValueError, x23().item_f64(), "item()", "[2,3]"),
      BAD_ANY_SITE("minijax::Array::operator bool", ValueError, bool(x23()), "item()", "[2,3]"),
      // Debugging: placeholders that do not match the arguments; an empty Array.
      BAD("minijax::debug::print", ValueError, mj::debug::print("{} and {}", x4()), "{} and {}", "more placeholders"),
      BAD_ANY_SITE("minijax::debug::callback", ValueError, mj::debug::callback([](const Array&) {}, Array()),
                   "debug::callback", "empty"),
      BAD("minijax::Array::concrete", ValueError, abstract4().concrete(), "abstract"),
      BAD("minijax::Array::concrete_impl", ValueError, abstract4().concrete_impl(), "abstract"),
      BAD("minijax::Array::is_ready", ValueError, abstract4().is_ready(), "ready", "abstract f32[4]"),
      BAD("minijax::Array::sharding", ValueError, abstract4().sharding(), "abstract f32[4]"),
      BAD("minijax::Array::addressable_shards", ValueError, abstract4().addressable_shards(), "shards", "abstract f32[4]"),
      BAD_ANY_SITE("minijax::Array::allocate", ValueError, Array::allocate(mj::ShapedArray{{2, -5}}), "-5"),
      BAD_ANY_SITE("minijax::Array::empty", ValueError, Array::empty(mj::ShapedArray{{-1}}), "-1"),
      BAD_ANY_SITE("minijax::Array::from_buffer", ValueError, Array::from_buffer(mj::ShapedArray{{4}}, nullptr), "Array::from_buffer", "null", "f32[4]"),
      BAD("minijax::to_xtensor", ValueError, mj::to_xtensor<float>(Array()), "to_xtensor", "empty"),
      // Pytrees whose structures differ.
      BAD("minijax::tree_unflatten", TypeError, mj::tree_unflatten(std::vector<Array>{x4(), x4()}, {x4()}), "tree_unflatten", "2", "1"),
      BAD("minijax::tree_check_same", TypeError, mj::tree_check_same(std::vector<Array>{x4()}, std::vector<Array>{x4(), x4()}), "structure"),
      BAD("minijax::tree_map", TypeError,
          mj::tree_map([](const Array& a, const Array& b) { return a + b; }, std::vector<Array>{x4()}, std::vector<Array>{x4(), x4()}),
          "structure"),
      // Primitives by name and their rules.
      BAD_ANY_SITE("minijax::primitive", ValueError, mj::primitive("no_such_primitive"), "no_such_primitive"),
      BAD("minijax::bind1", ValueError, mj::bind1("no_such_primitive", {x4()}, {}), "no_such_primitive"),
      BAD("minijax::bind", ShapeError, mj::bind(mj::primitive("add"), {x23(), x4()}, {}), "add", "f32[2,3]", "f32[4]"),
      BAD("minijax::abstract_eval", ShapeError,
          mj::abstract_eval(mj::primitive("add"), {mj::ShapedArray{{2, 3}}, mj::ShapedArray{{4}}}, {}, std::source_location::current()), "add", "f32[2,3]", "f32[4]"),
      BAD("minijax::find_top_trace", ValueError, mj::find_top_trace({x4(), Array()}, std::source_location::current()), "empty"),
      BAD("minijax::check_trace_depth", ValueError, check_trace_depth_at_zero(std::source_location::current()), "max_trace_depth", "0"),
      // Programs handed back to the library with sizes that do not match.
      BAD_ANY_SITE("minijax::dce_jaxpr", ValueError,
          mj::dce_jaxpr(*mj::make_jaxpr([](const Array& a) { return mj::sin(a); })(x4()).jaxpr, {true, true}, false),
          "dce_jaxpr", "2", "1"),
      BAD_ANY_SITE("minijax::eqn_to_string", mj::IndexError,
          mj::eqn_to_string(*mj::make_jaxpr([](const Array& a) { return mj::sin(a); })(x4()).jaxpr, 7), "7"),
      BAD_ANY_SITE("minijax::run_spmd", ValueError,
          mj::run_spmd(mj::make_jaxpr([](const Array& a) { return mj::sin(a); })(x4()),
                       mj::Mesh({0, 1}, {2}, {"x"}), {{x4()}}),
          "run_spmd", "2 devices", "given for 1"),
      BAD("minijax::execute", TypeError,
          mj::execute(mj::jit([](const Array& a) { return mj::sin(a); }).lower(x4()).compile().executable()->loaded, {x4(), x4()}),
          "takes 1 inputs, got 2"),
      BAD_ANY_SITE("minijax::lax::full", ShapeError, mj::lax::full({-2}, 1.0, DType::f32, false), "-2"),
      BAD_ANY_SITE("minijax::lax::scalar", TypeError, mj::lax::scalar(1.0, DType::token, false), "Tok"),
      BAD("minijax::axis_name_param", ValueError, mj::axis_name_param({"x", "x"}, "all_gather"), "all_gather", "'x'", "repeated"),
      BAD_ANY_SITE("minijax::axis_names_str", ValueError, mj::axis_names_str({"x", "x"}), "'x'", "repeated"),
      BAD_ANY_SITE("minijax::collective_stats", ValueError, mj::collective_stats(-3), "collective_stats", "-3", "negative"),
      BAD_ANY_SITE("minijax::axis_names_of", ValueError, mj::axis_names_of(mj::Params{}), "axis_name"),
      BAD_ANY_SITE("minijax::throw_bad_dispatch", TypeError, mj::throw_bad_dispatch(DType::token), "Tok"),
      BAD_ANY_SITE("minijax::throw_resource_exhausted", mj::ResourceExhaustedError,
          mj::throw_resource_exhausted(mj::MemoryKind::device, 3, 4096, 100, 200, 1024, "test"), "device", "3", "4096", "1024"),
      // Files: missing folders, foreign or truncated contents, structures that do not match.
      BAD("minijax::save_npy", IOError, mj::save_npy(kNoDir + "/a.npy", x4()), "save_npy", kNoDir),
      BAD("minijax::load_npy", IOError, mj::load_npy(temp_file("foreign.npy", "hello, not numpy")), "load_npy", "foreign.npy"),
      BAD("minijax::save_npz", IOError, mj::save_npz(kNoDir + "/a.npz", std::map<std::string, Array>{{"w", x4()}}), "save_npz", kNoDir),
      BAD("minijax::load_npz", IOError, mj::load_npz(temp_file("foreign.npz", "PK\x03\x04truncated")), "load_npz", "foreign.npz"),
      BAD("minijax::save_safetensors", IOError,
          mj::save_safetensors(kNoDir + "/a.safetensors", std::map<std::string, Array>{{"w", x4()}}), "save_safetensors", kNoDir),
      BAD("minijax::load_safetensors", IOError,
          mj::load_safetensors(temp_file("short.safetensors", std::string("\xff\xff\x00\x00\x00\x00\x00\x00{}", 10))),
          "load_safetensors", "short.safetensors"),
      BAD("minijax::load_safetensors_metadata", IOError,
          mj::load_safetensors_metadata(temp_file("tiny.safetensors", "abc")), "load_safetensors_metadata", "tiny.safetensors"),
      BAD("minijax::profiler::start_trace", IOError, mj::profiler::start_trace(kNoDir + "/t.json"), "start_trace", kNoDir),
      BAD("minijax::profiler::stop_trace", ValueError, mj::profiler::stop_trace(), "stop_trace", "no trace"),
      BAD_ANY_SITE("minijax::dispatch_dtype", TypeError, mj::dispatch_dtype(DType::token, []<class T>() { return 0; }), "Tok"),
      // Accessors of an empty (default-constructed) Array take no call site: the library's line is recorded.
      BAD_ANY_SITE("minijax::Array::aval", ValueError, Array().aval(), "empty"),
      BAD_ANY_SITE("minijax::Array::shape", ValueError, Array().shape(), "empty"),
      BAD_ANY_SITE("minijax::Array::dtype", ValueError, Array().dtype(), "empty"),
      BAD_ANY_SITE("minijax::Array::ndim", ValueError, Array().ndim(), "empty"),
      BAD_ANY_SITE("minijax::Array::size", ValueError, Array().size(), "empty"),
      BAD_ANY_SITE("minijax::Array::memory_kind", ValueError, Array().memory_kind(), "empty"),
      BAD_ANY_SITE("minijax::Array::weak_type", ValueError, Array().weak_type(), "empty"),
  };
}

}  // namespace bad_input
