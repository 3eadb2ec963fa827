// minijax JitOptions::builder(): one setter per field in any order, giving exactly the options the
// designated-initialiser form gives (so bad entries are the same errors), usable with mj::jit.
#include <gtest/gtest.h>

#include <string>

#include <minijax/minijax.h>

namespace {

using mj::Array;

void expect_same_options(const mj::JitOptions& a, const mj::JitOptions& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.in_shardings.size(), b.in_shardings.size());
  EXPECT_EQ(a.out_shardings.size(), b.out_shardings.size());
  EXPECT_EQ(a.static_argnums, b.static_argnums);
  EXPECT_EQ(a.donate_argnums, b.donate_argnums);
  EXPECT_EQ(a.dump_dir, b.dump_dir);
  EXPECT_EQ(a.keep_llvm_ir, b.keep_llvm_ir);
  EXPECT_EQ(a.share_traces, b.share_traces);
}

TEST(JitOptionsBuilder, AnyOrderGivesTheAggregatesOptions) {
  const mj::JitOptions aggregate{.name = "train_step", .static_argnums = {2}, .donate_argnums = {0, 1},
                                 .dump_dir = "/tmp/d", .keep_llvm_ir = true,
                                 .share_traces = mj::TraceSharing::never};
  const mj::JitOptions built = mj::JitOptions::builder()
                                   .share_traces(mj::TraceSharing::never)
                                   .donate_argnums({0, 1})
                                   .keep_llvm_ir(true)
                                   .name("train_step")
                                   .dump_dir("/tmp/d")
                                   .static_argnums({2})
                                   .build();
  expect_same_options(built, aggregate);
  // Nothing set: the defaults of JitOptions{}.
  expect_same_options(mj::JitOptions::builder().build(), mj::JitOptions{});
  // Shardings: one entry each, unconstrained (nullopt), as the aggregate's.
  const mj::JitOptions sh = mj::JitOptions::builder().out_shardings({std::nullopt}).in_shardings({std::nullopt, std::nullopt}).build();
  EXPECT_EQ(sh.in_shardings.size(), 2u);
  EXPECT_EQ(sh.out_shardings.size(), 1u);
  EXPECT_FALSE(sh.in_shardings[0].has_value());
}

// The builder's options donate as the aggregate's do: the donated argument is consumed.
TEST(JitOptionsBuilder, BuiltOptionsDonateAndName) {
  auto f = mj::jit([](const Array& p, const Array& g) { return p - g * 0.5; },
                   mj::JitOptions::builder().name("f").donate_argnums({0}).build());
  Array p = mj::ones({4}), g = mj::ones({4});
  Array q = f(p, g);
  EXPECT_FLOAT_EQ(q.data<float>()[3], 0.5f);  // by hand: 1 - 0.5
  EXPECT_THROW(f(p, g), mj::ValueError);      // p was donated
}

// A bad entry is the same error, word for word, with the builder and with the aggregate.
TEST(JitOptionsBuilder, BadEntriesAreTheAggregatesErrors) {
  auto fn = [](const Array& a, const Array& b) { return a + b; };
  auto message_of = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const mj::Error& e) {
      return std::string(typeid(e).name()) + ": " + e.message();
    }
    return "no error";
  };
  Array x = mj::ones({2});
  const std::string agg_donate =
      message_of([&] { (void)mj::jit(fn, mj::JitOptions{.name = "g", .donate_argnums = {5}})(x, x); });
  const std::string built_donate =
      message_of([&] { (void)mj::jit(fn, mj::JitOptions::builder().donate_argnums({5}).name("g").build())(x, x); });
  EXPECT_NE(agg_donate, "no error");
  EXPECT_EQ(built_donate, agg_donate);
  const std::string agg_static =
      message_of([&] { (void)mj::jit(fn, mj::JitOptions{.name = "g", .static_argnums = {-1}})(x, x); });
  const std::string built_static =
      message_of([&] { (void)mj::jit(fn, mj::JitOptions::builder().static_argnums({-1}).name("g").build())(x, x); });
  EXPECT_NE(agg_static, "no error");
  EXPECT_EQ(built_static, agg_static);
}

}  // namespace
