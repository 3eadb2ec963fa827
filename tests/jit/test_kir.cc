// Tests of the kernel IR, its LLVM translation and the ORC wrapper: kernels built by hand, compiled,
// loaded and run; type errors, verifier errors and unknown symbols reported as exceptions.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "jit/codegen/emit_llvm.h"
#include "jit/codegen/kir.h"
#include "jit/codegen/orc.h"
#include "minijax/minijax.h"

namespace minijax {
namespace {

using namespace kir;

// out[i] = a[i] * b[i] + 1 over n floats: a vector loop of `lanes` and a scalar tail.
Module saxpy_module(int lanes) {
  Module m;
  m.name = "test";
  Function f;
  f.name = "kernel";
  f.linkage = Linkage::external;
  f.params = {kPtr, kPtr, kPtr, kI64};
  Builder b(f);
  Value a = b.arg(0), bb = b.arg(1), out = b.arg(2), n = b.arg(3);
  Value vec_end = b.mul(b.binop(Op::SDiv, n, b.i64(lanes)), b.i64(lanes));
  Type vt = kF32.with_lanes(lanes);
  b.for_(b.i64(0), vec_end, b.i64(lanes), [&](Value i) {
    Value x = b.load(vt, a, i), y = b.load(vt, bb, i);
    b.store(out, i, b.fadd(b.fmul(x, y), b.splat(b.f32(1), lanes)));
  });
  b.for_(vec_end, n, b.i64(1), [&](Value i) {
    Value x = b.load(kF32, a, i), y = b.load(kF32, bb, i);
    b.store(out, i, b.fadd(b.fmul(x, y), b.f32(1)));
  });
  b.ret();
  m.functions.push_back(std::move(f));
  return m;
}

// The object code of `m`: the pipeline's three LLVM stages (translate, optimize, codegen).
ObjectCode object_of(const Module& m) {
  std::unique_ptr<LlvmModule> l = translate_to_llvm(m);
  optimize_llvm(*l);
  return emit_object(*l);
}

// Compiles and loads saxpy_module's `m` and runs its kernel over n = 0, 1, 15, 16, 17, 100, 103
// (empty, tail only, one vector and the tail around it); `what` names the variant in failures.
void expect_saxpy_computes(const Module& m, const std::string& what) {
  auto lib = load_object(object_of(m), {}, "saxpy");
  using Fn = void (*)(const float*, const float*, float*, int64_t);
  auto fn = reinterpret_cast<Fn>(lib->lookup("kernel"));
  for (int64_t n : {0, 1, 15, 16, 17, 100, 103}) {
    std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n)), out(static_cast<size_t>(n), -7.f);
    for (int64_t i = 0; i < n; ++i) {
      a[size_t(i)] = 0.5f * float(i) - 3.f;
      b[size_t(i)] = 1.f / float(i + 1);
    }
    fn(a.data(), b.data(), out.data(), n);
    for (int64_t i = 0; i < n; ++i)  // oracle: the same two roundings done by C++ (no FMA)
      EXPECT_EQ(out[size_t(i)], a[size_t(i)] * b[size_t(i)] + 1.f) << what << " n=" << n << " i=" << i;
  }
}

TEST(Kir, VectorLoopWithTailComputesEveryElement) {
  expect_saxpy_computes(saxpy_module(host_target().vector_bytes / 4), "saxpy");
}

TEST(Kir, PrinterShowsLoopsAndTypes) {
  Module m = saxpy_module(8);
  std::string s = to_string(m);
  EXPECT_NE(s.find("define void @kernel(ptr, ptr, ptr, i64)"), std::string::npos) << s;
  EXPECT_NE(s.find("load <8 x f32>"), std::string::npos) << s;
  EXPECT_NE(s.find("for %"), std::string::npos) << s;
}

TEST(Kir, BuilderRejectsMismatchedTypes) {
  Function f;
  f.name = "bad";
  f.params = {kF32, kI32};
  Builder b(f);
  Value x = b.arg(0), y = b.arg(1);
  EXPECT_THROW(b.fadd(x, y), ValueError);
  EXPECT_THROW(b.add(x, x), ValueError);          // integer add of floats
  EXPECT_THROW(b.cast(Op::FPExt, kF32, x), ValueError);
  EXPECT_THROW(b.load(kF32, x, b.i64(0)), ValueError);  // address is not a ptr
}

TEST(Kir, ValueUsedOutsideItsBlockIsACompileError) {
  Module m;
  Function f;
  f.name = "scoped";
  f.linkage = Linkage::external;
  f.params = {kPtr};
  Builder b(f);
  Value inner;
  b.for_(b.i64(0), b.i64(4), b.i64(1), [&](Value i) { inner = b.add(i, i); });
  b.store(b.arg(0), b.i64(0), inner);  // `inner` belongs to the loop body
  b.ret();
  m.functions.push_back(std::move(f));
  try {
    object_of(m);
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("outside the block"), std::string::npos) << e.what();
  }
}

TEST(Kir, RuntimeSymbolsResolveAndMissingOnesThrow) {
  Module m;
  m.declare(Extern{"mj_test_twice", {kF64}, kF64});
  Function f;
  f.name = "calls";
  f.linkage = Linkage::external;
  f.params = {kF64};
  f.ret = kF64;
  Builder b(f);
  b.ret(b.call("mj_test_twice", kF64, {b.arg(0)}));
  m.functions.push_back(std::move(f));
  auto obj = object_of(m);
  static double (*twice)(double) = [](double x) { return 2 * x; };
  auto lib = load_object(obj, {{"mj_test_twice", reinterpret_cast<void*>(twice)}}, "calls");
  auto fn = reinterpret_cast<double (*)(double)>(lib->lookup("calls"));
  EXPECT_EQ(fn(21.0), 42.0);
  EXPECT_THROW(lib->lookup("no_such_function"), CompileError);
  auto unresolved = load_object(obj, {}, "calls_unresolved");  // mj_test_twice is not defined
  EXPECT_THROW(unresolved->lookup("calls"), CompileError);
}

TEST(Kir, HostTargetDescribesTheCpu) {
  const HostTarget& h = host_target();
  EXPECT_FALSE(h.triple.empty());
  EXPECT_FALSE(h.cpu.empty());
  EXPECT_TRUE(h.vector_bytes == 16 || h.vector_bytes == 32 || h.vector_bytes == 64);
  EXPECT_EQ(h.llvm_version.substr(0, 3), "19.");
}

// A function with unroll_loops = false: every loop it defines carries llvm.loop.unroll.disable
// (LLVM LangRef, "'llvm.loop.unroll' Metadata"), the printer says `nounroll`, and the code
// computes what the unrolled code computes.
TEST(Kir, LoopsOfANoUnrollFunctionCarryUnrollDisable) {
  const int lanes = host_target().vector_bytes / 4;
  for (bool unroll : {true, false}) {
    Module m = saxpy_module(lanes);
    m.functions[0].unroll_loops = unroll;
    const std::string ir = to_llvm_ir(m);
    size_t marks = 0;
    for (size_t p = ir.find("!llvm.loop"); p != std::string::npos; p = ir.find("!llvm.loop", p + 1)) ++marks;
    EXPECT_EQ(marks, unroll ? 0u : 2u) << ir;  // two loops: the vector loop and its tail
    EXPECT_EQ(ir.find("llvm.loop.unroll.disable") != std::string::npos, !unroll) << ir;
    EXPECT_EQ(to_string(m).find(" nounroll {") != std::string::npos, !unroll);
    expect_saxpy_computes(m, unroll ? "unrolled" : "nounroll");
  }
}

// The program marks a kernel it runs inline on the calling thread (under 2^16 elements) nounroll
// and leaves a kernel it splits across threads to LLVM's unroller; both compute what eager does.
TEST(Kir, InlineKernelsAreNotUnrolledAndParallelOnesMayBe) {
  auto f = [](const mj::Array& small, const mj::Array& big) {
    return std::make_tuple(small * 0.75f + 1.f, big * 0.75f + 1.f);
  };
  mj::Array small = mj::arange(-3.0, 3.0, 0.006), big = mj::arange(0.0, double(1 << 17), 1.0);
  mj::JitOptions opt;
  opt.keep_llvm_ir = true;
  auto compiled = mj::jit(f, opt).lower(small, big).compile();
  const std::string text = compiled.as_text(true);
  const std::string kir = text.substr(0, text.find("; ModuleID"));
  size_t inline_kernels = 0, unrolled_kernels = 0;
  for (size_t p = kir.find("define internal void @fusion"); p != std::string::npos;
       p = kir.find("define internal void @fusion", p + 1)) {
    const std::string line = kir.substr(p, kir.find('\n', p) - p);
    (line.find(" nounroll {") != std::string::npos ? inline_kernels : unrolled_kernels) += 1;
  }
  EXPECT_EQ(inline_kernels, 1u) << kir;
  EXPECT_EQ(unrolled_kernels, 1u) << kir;
  EXPECT_NE(text.find("llvm.loop.unroll.disable", text.find("; ModuleID")), std::string::npos);
  auto [ys, yb] = compiled(small, big);
  auto [es, eb] = f(small, big);  // eager: the reference
  ASSERT_EQ(ys.size(), es.size());
  ASSERT_EQ(yb.size(), eb.size());
  for (int64_t i = 0; i < ys.size(); ++i) EXPECT_EQ(ys.data<float>()[i], es.data<float>()[i]) << i;
  for (int64_t i = 0; i < yb.size(); ++i) ASSERT_EQ(yb.data<float>()[i], eb.data<float>()[i]) << i;
}

}  // namespace
}  // namespace minijax
