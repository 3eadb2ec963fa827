// minijax bench: times the eager training step of the Fashion-MNIST MLP (784-512-512-10, batch 128,
// value_and_grad + Adam, the sample's own code) and prints one JSON object; --breakdown profiles it.
//
// Usage: minijax_bench_mlp_step [--steps N (100)] [--warmup W (10)] [--data-dir DIR] [--random]
//                               [--breakdown] [--no-verify]
// Data: Fashion-MNIST batches (the sample's loader; --data-dir, else $MINIJAX_FASHION_MNIST, else
// /usr/share/datasets/fashion-mnist); --random uses uniform pixels and labels of the same shapes.
// Timed per step, like the peers in ../shared/bench: batch assembly + value_and_grad + Adam update
// + reading the loss back (loss.item()).
//
// --no-verify sets mj::config().verify_jaxprs = false (the library turns it on unless NDEBUG is
// defined); the JSON reports the setting used as "verify_jaxprs".
// --breakdown adds, measured separately after the main run (so it does not perturb it):
//   phases     mean ms of make_batch, forward only (loss_fn), value_and_grad, Adam update;
//   kernels    value_and_grad staged once with make_jaxpr, then its equations run one by one through
//              each primitive's eager impl with a timer around each (values freed after their last
//              use): ms per primitive (dot_general = the GEMMs), i.e. the gradient's compute
//              without tracing; phases_ms.value_and_grad minus staged_eval_ms = tracing overhead;
//   tiny_step  the same eager step on a 4-4-4-10 MLP with batch 2: compute ~0, so its time is the
//              per-step cost of tracing, dispatch and allocation for the same operation count
//              (wall and main-thread CPU time; also with jaxpr verification off);
//   minflt     minor page faults per eager step (getrusage), i.e. fresh pages touched by allocations.
#include <sys/resource.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "autodiff/grad.h"
#include "autodiff/optimizers.h"
#include "core/api.h"
#include "core/config.h"
#include "core/primitive.h"
#include "samples/common/idx_reader.h"
#include "samples/fashion_mnist_mlp_lib.h"

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// CPU time of the calling thread: unlike wall time, insensitive to other processes on the machine.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

struct Options {
  int steps = 100;
  int warmup = 10;
  std::string data_dir;
  bool random = false;
  bool breakdown = false;
  bool no_verify = false;
};

// Batches either from Fashion-MNIST (shuffled once, fixed seed) or uniform random of the same shape.
class BatchSource {
 public:
  BatchSource(const Options& o, int64_t batch) : batch_(batch) {
    if (o.random) {
      std::mt19937 rng(0);
      data_.n = 8192;  // 64 batches, cycled
      data_.images.resize(size_t(data_.n) * 784);
      data_.labels.resize(size_t(data_.n));
      for (auto& p : data_.images) p = uint8_t(rng() & 0xff);
      for (auto& l : data_.labels) l = uint8_t(rng() % 10);
    } else {
      data_ = fmnist::load_split(minijax::samples::fashion_mnist_dir(o.data_dir), "train");
    }
    order_.resize(size_t(data_.n));
    std::iota(order_.begin(), order_.end(), 0);
    std::shuffle(order_.begin(), order_.end(), std::mt19937(1));
  }
  std::pair<mj::Array, mj::Array> next() {
    if (pos_ + batch_ > data_.n) pos_ = 0;
    auto b = fmnist::make_batch(data_, order_, pos_, batch_);
    pos_ += batch_;
    return b;
  }

 private:
  int64_t batch_;
  fmnist::Dataset data_;
  std::vector<int32_t> order_;
  int64_t pos_ = 0;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The training step exactly as fmnist::train does it.
struct Trainer {
  fmnist::MLP params;
  minijax::optim::Adam opt;
  minijax::optim::AdamState<fmnist::MLP> state;
  explicit Trainer(fmnist::MLP p) : params(std::move(p)) { state = opt.init(params); }
  double step(const mj::Array& x, const mj::Array& y) {
    auto grad_fn = mj::value_and_grad(
        [](const fmnist::MLP& p, const mj::Array& xs, const mj::Array& ys) {
          return fmnist::loss_fn(p, xs, ys);
        });
    auto [loss, grads] = grad_fn(params, x, y);
    auto [next_params, next_state] = opt.update(grads, state, params);
    params = std::move(next_params);
    state = std::move(next_state);
    return loss.item<double>();
  }
};

// A small MLP in-hid-hid-10 with deterministic uniform weights (for the overhead measurement).
fmnist::MLP tiny_mlp(int64_t in, int64_t hid) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  auto arr = [&](mj::Shape s) {
    int64_t n = 1;
    for (auto d : s) n *= d;
    std::vector<double> v(static_cast<size_t>(n));
    for (auto& e : v) e = u(rng);
    return mj::array(v, s, mj::f32);
  };
  return {arr({in, hid}), arr({hid}), arr({hid, hid}), arr({hid}), arr({hid, 10}), arr({10})};
}

// Runs the step's staged jaxpr equation by equation through the primitives' eager impls, adding
// the time of each equation to its primitive's total. Returns the output arrays.
std::vector<mj::Array> timed_eval(const mj::ClosedJaxpr& cj, const std::vector<mj::Array>& args,
                                  std::map<std::string, double>& ms,
                                  std::map<std::string, int>& count) {
  const mj::Jaxpr& j = *cj.jaxpr;
  std::unordered_map<mj::Var, mj::Array, mj::VarHash> env;
  for (size_t i = 0; i < j.constvars.size(); ++i) env[j.constvars[i]] = cj.consts[i];
  for (size_t i = 0; i < j.invars.size(); ++i) env[j.invars[i]] = args[i];
  auto read = [&](const mj::Atom& a) -> mj::Array {
    if (auto* l = std::get_if<mj::Literal>(&a)) return l->value;
    return env.at(std::get<mj::Var>(a));
  };
  // Values are dropped after their last use, as an evaluator (and eager code) would do, so the
  // allocator can reuse their memory.
  std::unordered_map<mj::Var, size_t, mj::VarHash> last_use;
  for (size_t k = 0; k < j.eqns.size(); ++k)
    for (auto& a : j.eqns[k].inputs)
      if (auto* v = std::get_if<mj::Var>(&a)) last_use[*v] = k;
  for (auto& a : j.outvars)
    if (auto* v = std::get_if<mj::Var>(&a)) last_use[*v] = j.eqns.size();
  for (size_t k = 0; k < j.eqns.size(); ++k) {
    const mj::Eqn& e = j.eqns[k];
    std::vector<mj::Array> in;
    for (auto& a : e.inputs) in.push_back(read(a));
    for (auto& a : e.inputs)
      if (auto* v = std::get_if<mj::Var>(&a); v && last_use[*v] == k) env.erase(*v);
    std::vector<mj::ShapedArray> out_avals;
    for (auto& v : e.outputs) out_avals.push_back(v.aval());
    // Allocation alone (malloc + zero fill of each output, as Array::allocate does).
    auto t0 = clock_type::now();
    for (auto& a : out_avals) mj::Array::allocate(a);
    ms["(allocate outputs only)"] += ms_since(t0);
    t0 = clock_type::now();
    std::vector<mj::Array> out = e.primitive->impl(in, e.params, out_avals);
    ms[e.primitive->name] += ms_since(t0);
    count[e.primitive->name] += 1;
    in.clear();
    for (size_t i = 0; i < e.outputs.size(); ++i)
      if (!e.outputs[i].is_dropvar() && last_use.count(e.outputs[i])) env[e.outputs[i]] = out[i];
  }
  std::vector<mj::Array> outs;
  for (auto& a : j.outvars) outs.push_back(read(a));
  return outs;
}

std::string json_map(const std::map<std::string, double>& m, int reps) {
  std::vector<std::pair<std::string, double>> v(m.begin(), m.end());
  std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::string s = "{";
  char buf[128];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s\"%s\": %.4f", i ? ", " : "", v[i].first.c_str(),
                  v[i].second / reps);
    s += buf;
  }
  return s + "}";
}

std::string json_counts(const std::map<std::string, int>& m, int reps) {
  std::string s = "{";
  bool first = true;
  for (auto& [k, c] : m) {
    s += (first ? "\"" : ", \"") + k + "\": " + std::to_string(c / reps);
    first = false;
  }
  return s + "}";
}

std::string breakdown(const Options& o, BatchSource& src) {
  const int reps = std::max(10, o.steps / 4);
  char buf[512];
  std::string out = "{";

  // Phases of the eager step, each timed on its own.
  Trainer tr(fmnist::init_mlp(0));
  double t_batch = 0, t_fwd = 0, t_vg = 0, t_adam = 0;
  auto grad_fn = mj::value_and_grad(
      [](const fmnist::MLP& p, const mj::Array& xs, const mj::Array& ys) {
        return fmnist::loss_fn(p, xs, ys);
      });
  for (int i = 0; i < reps + 3; ++i) {
    bool timed = i >= 3;
    auto t0 = clock_type::now();
    auto [x, y] = src.next();
    double a = ms_since(t0);
    t0 = clock_type::now();
    double fl = fmnist::loss_fn(tr.params, x, y).item<double>();
    double b = ms_since(t0);
    t0 = clock_type::now();
    auto [loss, grads] = grad_fn(tr.params, x, y);
    double c = ms_since(t0);
    t0 = clock_type::now();
    auto [next_params, next_state] = tr.opt.update(grads, tr.state, tr.params);
    tr.params = std::move(next_params);
    tr.state = std::move(next_state);
    double d = ms_since(t0);
    (void)fl;
    if (timed) t_batch += a, t_fwd += b, t_vg += c, t_adam += d;
  }
  std::snprintf(buf, sizeof buf,
                "\"phases_ms\": {\"make_batch\": %.4f, \"forward_only\": %.4f, "
                "\"value_and_grad\": %.4f, \"adam_update\": %.4f}",
                t_batch / reps, t_fwd / reps, t_vg / reps, t_adam / reps);
  out += buf;

  // Kernel time: value_and_grad staged once, then evaluated through the impls with a timer per
  // equation. (The Adam update is left out: eagerly, with concrete operands, it may take a fused
  // path that staging does not show; its eager time is phases_ms.adam_update.)
  auto vg_fn = [](const fmnist::MLP& p, const mj::Array& x, const mj::Array& y) {
    return mj::value_and_grad([](const fmnist::MLP& q, const mj::Array& xs, const mj::Array& ys) {
      return fmnist::loss_fn(q, xs, ys);
    })(p, x, y);
  };
  auto [x0, y0] = src.next();
  mj::ClosedJaxpr cj = mj::make_jaxpr(vg_fn)(tr.params, x0, y0);
  std::vector<mj::Array> args;
  auto flat_params = mj::tree_flatten(tr.params);
  std::map<std::string, double> kms;
  std::map<std::string, int> kcount;
  double kernel_total = 0;
  for (int i = 0; i < reps + 3; ++i) {
    auto [x, y] = src.next();
    args.clear();
    args.insert(args.end(), flat_params.begin(), flat_params.end());
    args.push_back(x);
    args.push_back(y);
    std::map<std::string, double> m;
    std::map<std::string, int> c;
    auto t0 = clock_type::now();
    timed_eval(cj, args, m, c);
    double total = ms_since(t0);
    if (i >= 3) {
      for (auto& [k, v] : m) kms[k] += v;
      for (auto& [k, v] : c) kcount[k] += v;
      kernel_total += total;
    }
  }
  const double alloc = kms["(allocate outputs only)"];
  kms.erase("(allocate outputs only)");
  double sum_impl = 0;
  for (auto& [k, v] : kms) sum_impl += v;
  double gemm = kms.count("dot_general") ? kms["dot_general"] : 0.0;
  std::snprintf(buf, sizeof buf,
                ", \"staged_eqns\": %zu, \"kernels_ms_total\": %.4f, \"kernels_ms_dot_general\": "
                "%.4f, \"kernels_ms_other\": %.4f, \"staged_eval_ms\": %.4f, "
                "\"allocate_outputs_only_ms\": %.4f",
                cj.jaxpr->eqns.size(), sum_impl / reps, gemm / reps, (sum_impl - gemm) / reps,
                kernel_total / reps, alloc / reps);
  out += buf;
  out += ", \"kernels_ms_by_primitive\": " + json_map(kms, reps);
  out += ", \"eqn_count_by_primitive\": " + json_counts(kcount, reps);

  // Tiny step: same operations, negligible arithmetic; with jaxpr verification as configured and
  // with it off (verification runs on the linear jaxpr of every grad).
  {
    const bool verify_setting = mj::config().verify_jaxprs;
    mj::Array x = mj::array(std::vector<double>{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8}, {2, 4});
    mj::Array y = mj::array(std::vector<double>{3, 7}, {2}, mj::i32);
    for (bool verify : {verify_setting, false}) {
      mj::config().verify_jaxprs = verify;
      Trainer tiny(tiny_mlp(4, 4));
      for (int i = 0; i < 20; ++i) tiny.step(x, y);
      auto t0 = clock_type::now();
      double c0 = thread_cpu_ms();
      const int n = 200;
      for (int i = 0; i < n; ++i) tiny.step(x, y);
      std::snprintf(buf, sizeof buf,
                    ", \"tiny_step%s_ms\": %.4f, \"tiny_step%s_thread_cpu_ms\": %.4f",
                    verify ? "" : "_verify_off", ms_since(t0) / n, verify ? "" : "_verify_off",
                    (thread_cpu_ms() - c0) / n);
      out += buf;
      if (!verify_setting) break;
    }
    mj::config().verify_jaxprs = verify_setting;
  }

  // Page faults per full eager step.
  {
    Trainer t2(fmnist::init_mlp(0));
    for (int i = 0; i < 3; ++i) {
      auto [x, y] = src.next();
      t2.step(x, y);
    }
    long f0 = minor_faults();
    for (int i = 0; i < reps; ++i) {
      auto [x, y] = src.next();
      t2.step(x, y);
    }
    std::snprintf(buf, sizeof buf, ", \"minflt_per_step\": %.1f",
                  double(minor_faults() - f0) / reps);
    out += buf;
  }
  return out + "}";
}

void usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [--steps N (100)] [--warmup W (10)] [--data-dir DIR] [--random] "
               "[--breakdown] [--no-verify]\n",
               prog);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage(argv[0]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--steps") o.steps = std::atoi(value().c_str());
    else if (a == "--warmup") o.warmup = std::atoi(value().c_str());
    else if (a == "--data-dir") o.data_dir = value();
    else if (a == "--random") o.random = true;
    else if (a == "--breakdown") o.breakdown = true;
    else if (a == "--no-verify") o.no_verify = true;
    else if (a == "-h" || a == "--help") { usage(argv[0]); return 0; }
    else { usage(argv[0]); return 2; }
  }
  if (o.steps <= 0 || o.warmup < 0) {
    std::fprintf(stderr, "--steps must be > 0 and --warmup >= 0\n");
    return 2;
  }
  if (o.no_verify) mj::config().verify_jaxprs = false;
  try {
    const int64_t batch = 128;
    BatchSource src(o, batch);
    Trainer tr(fmnist::init_mlp(0));
    for (int i = 0; i < o.warmup; ++i) {
      auto [x, y] = src.next();
      tr.step(x, y);
    }
    std::vector<double> per_step;
    double first_loss = 0, last_loss = 0;
    auto t_all = clock_type::now();
    double cpu_all = thread_cpu_ms();
    for (int i = 0; i < o.steps; ++i) {
      auto t0 = clock_type::now();
      auto [x, y] = src.next();
      double l = tr.step(x, y);
      per_step.push_back(ms_since(t0));
      if (i == 0) first_loss = l;
      last_loss = l;
    }
    double total = ms_since(t_all);
    double cpu_total = thread_cpu_ms() - cpu_all;
    std::string extra = o.breakdown ? ", \"breakdown\": " + breakdown(o, src) : "";
    std::printf(
        "{\"name\": \"minijax_mlp_step\", \"ms_per_step\": %.4f, \"steps\": %d, \"warmup\": %d, "
        "\"batch\": %lld, \"model\": \"784-512-512-10\", \"data\": \"%s\", \"ms_median\": %.4f, "
        "\"ms_min\": %.4f, \"ms_max\": %.4f, \"loss_first\": %.4f, \"loss_last\": %.4f, "
        "\"main_thread_cpu_ms_per_step\": %.4f, \"verify_jaxprs\": %s%s}\n",
        total / o.steps, o.steps, o.warmup, (long long)batch,
        o.random ? "random" : "fashion-mnist", median(per_step),
        *std::min_element(per_step.begin(), per_step.end()),
        *std::max_element(per_step.begin(), per_step.end()), first_loss, last_loss,
        cpu_total / o.steps, mj::config().verify_jaxprs ? "true" : "false", extra.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minijax_bench_mlp_step: %s\n", e.what());
    return 1;
  }
  return 0;
}
