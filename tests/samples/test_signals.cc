// minijax tests: SIGINT and SIGTERM end a sample's training cleanly — the step, a checkpoint, 130/143 —
// and --resume continues from that checkpoint; a checkpoint holding a NaN is refused with status 1.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "samples/common/checkpoint.h"
#include "samples/common/idx_reader.h"
#include "samples/common/stop_signals.h"
#include "samples/temp_dir.h"

namespace {

namespace fs = std::filesystem;
namespace ms = minijax::samples;


// A sample program run with its stdout and stderr on one pipe.
class Child {
 public:
  Child(const std::string& program, const std::vector<std::string>& args) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    std::vector<std::string> argv_s{program};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 1);
      ::dup2(fds[1], 2);
      ::close(fds[0]);
      ::close(fds[1]);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    fd_ = fds[0];
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) ::close(fd_);
  }
  // Reads the output until a line starts with `prefix`; false at its end or after 60 s.
  bool wait_for_line(const std::string& prefix) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (out_.rfind("\n" + prefix) == std::string::npos && out_.rfind(prefix, 0) != 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !read_some(int(left.count()))) return false;
    }
    return true;
  }
  void signal(int sig) { ::kill(pid_, sig); }
  // Reads to the end of the output and reaps the program: its exit status, or -1 (killed by a
  // signal, or still running after 120 s: then it is killed).
  int finish() {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        ADD_FAILURE() << "the program did not end: " << out_;
        ::kill(pid_, SIGKILL);
        break;
      }
      if (!read_some(int(left.count()))) break;
    }
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  const std::string& output() const { return out_; }

 private:
  bool read_some(int timeout_ms) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    char buf[4096];
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n <= 0) return false;
    out_.append(buf, size_t(n));
    return true;
  }
  pid_t pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
  std::string out_;
};

// The first "step <n> " line's n, or -1.
int64_t first_step(const std::string& out) {
  const size_t at = out.rfind("step ", 0) == 0 ? 0 : out.find("\nstep ");
  if (at == std::string::npos) return -1;
  return std::stoll(out.substr(at + (at == 0 ? 5 : 6)));
}

// The last "step <n> " line's n, or -1.
int64_t last_step(const std::string& out) {
  const size_t at = out.rfind("\nstep ");
  if (at == std::string::npos) return first_step(out);
  return std::stoll(out.substr(at + 6));
}

int64_t item(const std::map<std::string, mj::Array>& c, const std::string& k) { return c.at(k).item<int64_t>(); }

struct Sample {
  const char* program;
  std::vector<std::string> args;  ///< beyond --limit 1280, --data-dir, --save, --resume
  const char* step_key;           ///< the checkpoint's step count
  int64_t printed_offset;         ///< the first step line a run from step k prints: k + this
  const char* poisoned;           ///< the tensor set to NaN for the refusal
};

// SIGINT during a fresh run with --save, then SIGTERM during a run resumed from that checkpoint
// (and saving over it), then a run resumed from the second checkpoint to the end; each stopped
// run exits with 128 + the signal after its step, and its checkpoint loads (every CRC-32 checked)
// and holds the steps taken, from which the next run continues. Last, the checkpoint with a NaN
// written into one tensor (with a valid CRC) is refused by name with status 1 before any step.
void stop_resume_and_refuse(const Sample& s, const std::string& finish_flag, const std::string& finish_value_of_k) {
#ifndef MINIJAX_SAMPLES_BIN_DIR
  GTEST_SKIP() << "the samples are not built (MINIJAX_BUILD_SAMPLES=OFF)";
#else
  const std::string program = std::string(MINIJAX_SAMPLES_BIN_DIR) + "/" + s.program;
  TempDir dir(std::string("signals_") + s.program);
  fs::create_directories(dir.path);
  const std::string ckpt = dir / "ckpt", file = ms::checkpoint_path(ckpt);
  std::vector<std::string> base{"--limit", "1280", "--data-dir", ms::fashion_mnist_dir()};
  base.insert(base.end(), s.args.begin(), s.args.end());
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  auto checkpoint = [&] {
    const auto meta = mj::load_safetensors_metadata(file);  // every crc32: entry checked
    const auto c = mj::load_safetensors(file);
    for (auto& [k, v] : c) EXPECT_TRUE(meta.count("crc32:" + k)) << k;
    return c;
  };

  Child a(program, with({"--save", ckpt}));
  ASSERT_TRUE(a.wait_for_line("step 1 ")) << a.output();
  a.signal(SIGINT);
  ASSERT_EQ(a.finish(), 130) << a.output();
  EXPECT_NE(a.output().find("stopped by SIGINT"), std::string::npos) << a.output();
  const int64_t k1 = item(checkpoint(), s.step_key);
  // "step 1 " is printed after 2 steps (0-based lines) or 1 (1-based): at least those are saved.
  EXPECT_GE(k1, 2 - s.printed_offset) << a.output();
  EXPECT_EQ(last_step(a.output()), k1 - 1 + s.printed_offset) << "the checkpoint is as of the last step run";

  Child b(program, with({"--resume", ckpt, "--save", ckpt}));
  ASSERT_TRUE(b.wait_for_line("step " + std::to_string(k1 + s.printed_offset + 1) + " ")) << b.output();
  b.signal(SIGTERM);
  ASSERT_EQ(b.finish(), 143) << b.output();
  EXPECT_EQ(first_step(b.output()), k1 + s.printed_offset) << b.output();
  const auto c2 = checkpoint();
  const int64_t k2 = item(c2, s.step_key);
  EXPECT_GE(k2, k1 + 2);
  EXPECT_EQ(last_step(b.output()), k2 - 1 + s.printed_offset);

  auto last = base;
  for (size_t i = 0; i + 1 < last.size(); ++i)
    if (last[i] == finish_flag) last[i + 1] = finish_value_of_k == "epoch" ? std::to_string(item(c2, "epoch") + 1)
                                                                          : std::to_string(k2 + 2);
  last.insert(last.end(), {"--resume", ckpt});
  Child c(program, last);
  ASSERT_EQ(c.finish(), 0) << c.output();
  EXPECT_EQ(first_step(c.output()), k2 + s.printed_offset) << c.output();

  // A NaN in one tensor (the file otherwise sound: its CRC-32 recomputed) stops --resume.
  auto poisoned = mj::load_safetensors(file);
  mj::Array& t = poisoned.at(s.poisoned);
  mj::Array copy = mj::Array::allocate(t.aval());
  std::memcpy(copy.mutable_data<float>(), t.data<float>(), size_t(t.aval().nbytes()));
  copy.mutable_data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  t = copy;
  auto meta = mj::load_safetensors_metadata(file);
  std::erase_if(meta, [](auto& kv) { return kv.first.rfind("crc32:", 0) == 0; });
  mj::save_safetensors(file, poisoned, meta, {.crc32 = true});
  Child d(program, with({"--resume", ckpt}));
  ASSERT_EQ(d.finish(), 1) << d.output();
  EXPECT_NE(d.output().find("NaN in the tensor '" + std::string(s.poisoned) + "'"), std::string::npos) << d.output();
  EXPECT_EQ(first_step(d.output()), -1) << d.output();
#endif
}

TEST(SampleSignals, MlpStopsOnSigintAndSigtermAndResumes) {
  stop_resume_and_refuse({"fashion_mnist_mlp", {"--epochs", "1000", "--print-steps"}, "opt.step", 0, "opt.nu.b3"},
                         "--epochs", "epoch");
}

TEST(SampleSignals, RnnStopsOnSigintAndSigtermAndResumes) {
  stop_resume_and_refuse(
      {"fashion_mnist_rnn", {"--epochs", "1000", "--print-steps", "--no-eval"}, "opt.step", 0, "params.w_hh"},
      "--epochs", "epoch");
}

TEST(SampleSignals, ShardedStopsOnSigintAndSigtermAndResumes) {
  stop_resume_and_refuse({"fashion_mnist_sharded", {"--steps", "100000", "--no-single"}, "step", 1, "params.w1"},
                         "--steps", "step");
}

// The second signal: _exit(128 + the first signal), at once, while a save is under way; the file keeps a complete version (its CRC-32s check), and the next save removes the dead
// process's temporary.
TEST(SampleSignals, ASecondSignalExitsAtOnceAndTheCheckpointSurvives) {
  TempDir dir("signals_second");
  fs::create_directories(dir.path);
  const std::string file = dir / "c.safetensors";
  const auto small = std::map<std::string, mj::Array>{{"x", mj::ones({2})}};
  const auto big = std::map<std::string, mj::Array>{{"x", mj::ones({4 << 20})}};  // 16 MiB
  (void)big.at("x").raw_data();
  mj::save_safetensors(file, small, {}, {.crc32 = true});
  for (int sig : {SIGINT, SIGTERM}) {
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ms::install_stop_handlers();
      ::kill(::getpid(), sig);  // the first: recorded by the signal thread, nothing else
      for (int i = 0; i < 10000 && ms::stop_signal() == 0; ++i) ::usleep(1000);
      if (ms::stop_signal() != sig) ::_exit(3);
      (void)::write(ready[1], "r", 1);
      for (;;) mj::save_safetensors(file, big, {}, {.crc32 = true});  // "the checkpoint"
    }
    ::close(ready[1]);
    char ch;
    ASSERT_EQ(::read(ready[0], &ch, 1), 1);
    ::close(ready[0]);
    ::usleep(20000);
    ::kill(pid, sig);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
    const auto back = mj::load_safetensors(file);  // old or new, whole: CRCs check
    EXPECT_TRUE(back.at("x").size() == 2 || back.at("x").size() == (4 << 20));
  }
  mj::save_safetensors(file, small);
  for (auto& e : fs::directory_iterator(dir.path))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}

}  // namespace
