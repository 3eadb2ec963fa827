// minijax samples: the sharded Fashion-MNIST train step (jit with in/out shardings on a (4, 2)
// mesh) and the loop that runs it next to the single-device step, comparing the losses.
#include "samples/fashion_mnist_sharded_lib.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "samples/common/checkpoint.h"

namespace fmnist {

mj::JitOptions train_step_options(const std::shared_ptr<const mj::Mesh>& m) {
  auto ns = [&](mj::P spec) {
    return std::optional<mj::NamedSharding>(mj::NamedSharding{m, std::move(spec), mj::MemoryKind::device});
  };
  using mj::None;
  using mj::P;
  mj::JitOptions o;
  o.name = "train_step";
  // Leaves in order: the MLP (w1, b1, w2, b2, w3, b3), x, y.
  o.in_shardings = {ns(P(None{}, "model")), ns(P("model")), ns(P("model", None{})), ns(P()),
                    ns(P()), ns(P()), ns(P("data", None{})), ns(P("data"))};
  // Leaves in order: the loss, then the updated MLP in its input shardings.
  o.out_shardings = {ns(P())};
  o.out_shardings.insert(o.out_shardings.end(), o.in_shardings.begin(), o.in_shardings.begin() + 6);
  return o;
}

Dataset process_rows(const Dataset& full, int64_t batch, int process, int processes) {
  if (processes < 1 || batch % processes != 0)
    throw mj::ValueError("fashion_mnist_sharded: batch " + std::to_string(batch) + " must divide over " +
                         std::to_string(processes) + " processes");
  const int64_t share = batch / processes, batches = full.n / batch, pixels = 784;
  Dataset d;
  d.n = batches * share;
  d.images.reserve(size_t(d.n * pixels));
  d.labels.reserve(size_t(d.n));
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t lo = b * batch + process * share;
    d.images.insert(d.images.end(), full.images.begin() + lo * pixels, full.images.begin() + (lo + share) * pixels);
    d.labels.insert(d.labels.end(), full.labels.begin() + lo, full.labels.begin() + lo + share);
  }
  return d;
}

std::vector<StepReport> train_sharded(const Dataset& train_set, const ShardedConfig& cfg,
                                      const std::shared_ptr<const mj::Mesh>& mesh) {
  const int np = mj::process_count();
  const int64_t total = cfg.total_examples > 0 ? cfg.total_examples : train_set.n;
  const int64_t data = mesh->axis_size("data"), model = mesh->axis_size("model");
  if (cfg.batch <= 0 || cfg.batch % data != 0)
    throw mj::ValueError("fashion_mnist_sharded: batch " + std::to_string(cfg.batch) +
                         " must be a positive multiple of the 'data' axis size " + std::to_string(data));
  if (cfg.hidden <= 0 || cfg.hidden % model != 0)
    throw mj::ValueError("fashion_mnist_sharded: hidden " + std::to_string(cfg.hidden) +
                         " must be a positive multiple of the 'model' axis size " + std::to_string(model));
  const int64_t batches = total / cfg.batch, share = cfg.batch / np;
  if (batches == 0)
    throw mj::ValueError("fashion_mnist_sharded: " + std::to_string(total) +
                         " examples hold no full batch of " + std::to_string(cfg.batch));
  const float lr = float(cfg.lr);
  auto step_fn = [lr](const MLP& p, const mj::Array& x, const mj::Array& y) {
    auto [loss, g] = mj::value_and_grad(
        [](const MLP& q, const mj::Array& a, const mj::Array& b) { return loss_fn(q, a, b); })(p, x, y);
    MLP next{p.w1 - g.w1 * lr, p.b1 - g.b1 * lr, p.w2 - g.w2 * lr,
             p.b2 - g.b2 * lr, p.w3 - g.w3 * lr, p.b3 - g.b3 * lr};
    return std::make_tuple(loss, next);
  };
  auto sharded = mj::jit(step_fn, train_step_options(mesh));
  auto single = mj::jit(step_fn, "train_step");
  namespace ms = minijax::samples;
  MLP p_sharded = init_mlp(cfg.seed, cfg.hidden);
  auto meta = ms::run_metadata("fashion_mnist_sharded", cfg.seed, cfg.batch, cfg.lr, total);
  meta["hidden"] = std::to_string(cfg.hidden);
  int64_t first = 0;
  if (!cfg.resume_dir.empty()) {
    const std::string path = ms::checkpoint_path(cfg.resume_dir);
    ms::check_run_metadata(path, mj::load_safetensors_metadata(path), meta);
    auto c = mj::load_safetensors(path, ShardedCheckpoint{p_sharded, mj::zeros({}, mj::i32)});
    ms::check_finite(path, mj::flatten_with_path(c));
    p_sharded = c.params;
    first = c.step.item<int64_t>();
    if (first < 0)
      throw mj::ValueError("--resume: checkpoint '" + path + "' holds step " + std::to_string(first));
    if (cfg.on_checkpoint) cfg.on_checkpoint("resumed from " + path + " after step " + std::to_string(first));
  }
  auto save = [&](int64_t steps_done) {
    // The parameters are sharded over "model" only, inside each process: every process holds
    // them whole, and process 0 writes them.
    if (mj::process_index() != 0) return;
    ms::detail::create_checkpoint_dir(cfg.save_dir);
    auto m = meta;
    m["step"] = std::to_string(steps_done);
    mj::save_safetensors(ms::checkpoint_path(cfg.save_dir),
                         ShardedCheckpoint{p_sharded, mj::full({}, int32_t(steps_done), mj::i32)}, m,
                         mj::SafetensorsSaveOptions{.crc32 = true});
    if (cfg.on_checkpoint)
      cfg.on_checkpoint("saved " + ms::checkpoint_path(cfg.save_dir) + " (step " + std::to_string(steps_done) + ")");
  };
  MLP p_single = p_sharded;
  std::vector<StepReport> reports;
  int64_t s = first;
  for (; s < cfg.steps; ++s) {
    // This process's rows of the batch (all of it in one process), made one global batch.
    auto [x_local, y_local] = make_batch(train_set, {}, (s % batches) * share, share);
    mj::Array x = x_local, y = y_local;
    if (np > 1) {
      x = mj::make_array_from_process_local_data({mesh, mj::P("data", mj::None{})}, x_local);
      y = mj::make_array_from_process_local_data({mesh, mj::P("data")}, y_local);
    }
    StepReport r;
    r.step = s + 1;
    auto [loss, next] = sharded(p_sharded, x, y);
    p_sharded = next;
    r.loss_sharded = loss.item<double>();
    auto run = sharded.last_run();
    r.collectives = mj::collectives_text(run->stats, run->lowered->program);
    r.num_collectives = run->stats.collectives.size();
    for (auto& c : run->stats.collectives)
      r.max_bytes_received += *std::max_element(c.bytes_received.begin(), c.bytes_received.end());
    r.loss_single = std::numeric_limits<double>::quiet_NaN();
    if (cfg.single_device && np == 1) {
      auto [loss1, next1] = single(p_single, x, y);
      p_single = next1;
      r.loss_single = loss1.item<double>();
    }
    if (cfg.on_step) cfg.on_step(r);
    reports.push_back(std::move(r));
    if (s + 1 < cfg.steps && cfg.should_stop && cfg.should_stop()) {
      ++s;
      break;
    }
  }
  if (!cfg.save_dir.empty()) save(s);
  return reports;
}

}  // namespace fmnist
