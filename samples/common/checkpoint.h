// minijax samples: the training checkpoints behind the samples' --save DIR and --resume DIR.
// Owns TrainCheckpoint (parameters, Adam's state, the data order's key, epochs done) and its file.
#pragma once
#include <map>
#include <string>

#include <minijax/minijax.h>

namespace minijax::samples {

/// Everything a training run needs to continue exactly where it stopped after an epoch: the
/// parameters, Adam's state (mu, nu and the i32[] step count), the shuffling key the next epoch
/// splits (u32[2]: epoch e's order is permutation(split(key)[1]) and key becomes split(key)[0],
/// so the next epoch's data order follows from it alone) and the epochs completed (i32[]).
/// Saved as a pytree, so its safetensors keys are `params.<field>`, `opt.mu.<field>`,
/// `opt.nu.<field>`, `opt.step`, `key` and `epoch`.
template <class P>
struct TrainCheckpoint {
  P params;
  minijax::optim::AdamState<P> opt;
  Array key;
  Array epoch;
};

/// DIR/checkpoint.safetensors.
std::string checkpoint_path(const std::string& dir);

/// The run's settings a resumed run must share to continue identically, recorded as the file's
/// __metadata__ (strings): sample, seed, batch, lr (%.17g) and train_images; `extra` adds more.
std::map<std::string, std::string> run_metadata(const std::string& sample, uint32_t seed, int64_t batch, double lr,
                                                int64_t train_images);

/// Throws ValueError naming the file, the setting, the saved and the current value when an
/// entry of `expected` differs from (or is missing in) the file's metadata `saved`.
void check_run_metadata(const std::string& path, const std::map<std::string, std::string>& saved,
                        const std::map<std::string, std::string>& expected);

/// Writes `c` to checkpoint_path(dir) (creating dir) atomically, with `metadata` plus "epoch"
/// and a CRC-32 per tensor (SafetensorsSaveOptions::crc32, checked when it is loaded). Throws
/// IOError naming the folder when it cannot be created, and what save_safetensors throws.
/// A checkpoint written mid-epoch (a run stopped by a signal) holds the epochs completed and the
/// key that the unfinished epoch split, and Adam's step count says how far into it the run got
/// (steps_into_epoch).
template <class P>
void save_checkpoint(const std::string& dir, const TrainCheckpoint<P>& c, std::map<std::string, std::string> metadata);

/// Reads checkpoint_path(dir) into `like`'s structure after checking its metadata against
/// `expected` (check_run_metadata). Throws what load_safetensors throws (IOError naming the
/// file and the key: missing file, corrupt file — a CRC-32 mismatch included —, a parameter of
/// another shape), ValueError for a run of other settings, and ValueError naming the tensor
/// when a parameter or optimizer state holds a NaN or ±Inf (check_finite).
template <class P>
TrainCheckpoint<P> load_checkpoint(const std::string& dir, const TrainCheckpoint<P>& like,
                                   const std::map<std::string, std::string>& expected);

/// Throws ValueError naming the file `path`, the tensor (its key in the file), the first
/// non-finite element's index and value (NaN, inf or -inf) when a floating-point leaf of
/// `leaves` holds one: training would go on from garbage.
void check_finite(const std::string& path, const PathLeaves& leaves);

/// The steps already taken in the epoch a checkpoint was saved in: `step` (Adam's count) minus
/// `epochs_done` * `steps_per_epoch`, which is 0 for a checkpoint saved at an epoch's end.
/// Throws ValueError naming the file when it is outside [0, steps_per_epoch).
int64_t steps_into_epoch(const std::string& path, int64_t step, int64_t epochs_done, int64_t steps_per_epoch);

namespace detail {
/// Creates `dir` and its parents; IOError naming it on failure.
void create_checkpoint_dir(const std::string& dir);
}  // namespace detail

template <class P>
void save_checkpoint(const std::string& dir, const TrainCheckpoint<P>& c, std::map<std::string, std::string> metadata) {
  detail::create_checkpoint_dir(dir);
  metadata["epoch"] = std::to_string(c.epoch.template item<int64_t>());
  metadata["step"] = std::to_string(c.opt.step.template item<int64_t>());
  save_safetensors(checkpoint_path(dir), c, metadata, SafetensorsSaveOptions{.crc32 = true});
}

template <class P>
TrainCheckpoint<P> load_checkpoint(const std::string& dir, const TrainCheckpoint<P>& like,
                                   const std::map<std::string, std::string>& expected) {
  const std::string path = checkpoint_path(dir);
  check_run_metadata(path, load_safetensors_metadata(path), expected);
  TrainCheckpoint<P> c = load_safetensors(path, like);
  check_finite(path, flatten_with_path(c));
  return c;
}

}  // namespace minijax::samples

/// TrainCheckpoint<Model>: leaves of params, opt, then key and epoch (a template: specialized by hand).
/// (`Model`, not `P`: in a specialization named `minijax::pytree<...>` clang finds minijax::P, the
/// PartitionSpec, before a template parameter called P.)
template <class Model>
struct minijax::pytree<minijax::samples::TrainCheckpoint<Model>> {
  using T = minijax::samples::TrainCheckpoint<Model>;
  using S = minijax::optim::AdamState<Model>;
  static void flatten(const T& c, std::vector<Array>& out) {
    pytree<Model>::flatten(c.params, out);
    pytree<S>::flatten(c.opt, out);
    out.push_back(c.key);
    out.push_back(c.epoch);
  }
  static void flatten_with_path(const T& c, const std::string& prefix, PathLeaves& out) {
    detail::flatten_with_path_into(c.params, detail::join_path(prefix, "params"), out);
    detail::flatten_with_path_into(c.opt, detail::join_path(prefix, "opt"), out);
    out.emplace_back(detail::join_path(prefix, "key"), c.key);
    out.emplace_back(detail::join_path(prefix, "epoch"), c.epoch);
  }
  static T unflatten(const T& like, const Array*& next) {
    Model p = pytree<Model>::unflatten(like.params, next);
    S s = pytree<S>::unflatten(like.opt, next);
    Array key = *next++;
    Array epoch = *next++;
    return T{std::move(p), std::move(s), std::move(key), std::move(epoch)};
  }
  static std::string structure(const T& c) {
    return "TrainCheckpoint(" + pytree<Model>::structure(c.params) + ", " + pytree<S>::structure(c.opt) + ", *, *)";
  }
  static void check_same(const T& a, const T& b, std::source_location loc) {
    pytree<Model>::check_same(a.params, b.params, loc);
    pytree<S>::check_same(a.opt, b.opt, loc);
  }
};
