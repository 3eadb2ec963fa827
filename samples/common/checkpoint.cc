// minijax samples: the training checkpoints behind the samples' --save DIR and --resume DIR.
// Owns the checkpoint's path, its run metadata and the check that a resume matches the run.
#include "samples/common/checkpoint.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace minijax::samples {

std::string checkpoint_path(const std::string& dir) { return dir + "/checkpoint.safetensors"; }

std::map<std::string, std::string> run_metadata(const std::string& sample, uint32_t seed, int64_t batch, double lr,
                                                int64_t train_images) {
  char lr_text[64];
  std::snprintf(lr_text, sizeof lr_text, "%.17g", lr);
  return {{"sample", sample},
          {"seed", std::to_string(seed)},
          {"batch", std::to_string(batch)},
          {"lr", lr_text},
          {"train_images", std::to_string(train_images)}};
}

void check_run_metadata(const std::string& path, const std::map<std::string, std::string>& saved,
                        const std::map<std::string, std::string>& expected) {
  for (auto& [k, v] : expected) {
    auto it = saved.find(k);
    if (it == saved.end() || it->second != v)
      throw ValueError("--resume: checkpoint '" + path + "' was saved by a run with " + k + " " +
                       (it == saved.end() ? "(not recorded)" : "'" + it->second + "'") + ", this run has '" + v +
                       "' (a resumed run continues identically only with the same settings)");
  }
}

void check_finite(const std::string& path, const PathLeaves& leaves) {
  for (auto& [key, a] : leaves) {
    const DType d = a.dtype();
    if (!is_floating(d)) continue;
    const int64_t n = a.aval().size();
    const auto* bytes = static_cast<const uint8_t*>(a.raw_data());
    for (int64_t i = 0; i < n; ++i) {
      // Exponent bits all ones: ±Inf (mantissa 0) or NaN.
      double v = 0;
      bool bad = false;
      if (d == DType::f32) {
        uint32_t u;
        std::memcpy(&u, bytes + 4 * i, 4);
        float f;
        std::memcpy(&f, &u, 4);
        bad = (u & 0x7f800000u) == 0x7f800000u, v = f;
      } else if (d == DType::f64) {
        uint64_t u;
        std::memcpy(&u, bytes + 8 * i, 8);
        std::memcpy(&v, &u, 8);
        bad = (u & 0x7ff0000000000000ull) == 0x7ff0000000000000ull;
      } else if (d == DType::bf16) {
        uint16_t u;
        std::memcpy(&u, bytes + 2 * i, 2);
        const uint32_t w = uint32_t(u) << 16;
        float f;
        std::memcpy(&f, &w, 4);
        bad = (u & 0x7f80u) == 0x7f80u, v = f;
      }
      if (bad)
        throw ValueError("--resume: checkpoint '" + path + "' holds " + (std::isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf") +
                         " in the tensor '" + key + "' (" + a.aval().str() + ", element " + std::to_string(i) +
                         " in row-major order); refusing to resume from non-finite parameters or optimizer state");
    }
  }
}

int64_t steps_into_epoch(const std::string& path, int64_t step, int64_t epochs_done, int64_t steps_per_epoch) {
  const int64_t k = step - epochs_done * steps_per_epoch;
  if (k < 0 || k >= steps_per_epoch)
    throw ValueError("--resume: checkpoint '" + path + "' holds step " + std::to_string(step) + " after " +
                     std::to_string(epochs_done) + " epochs of " + std::to_string(steps_per_epoch) +
                     " steps: not a step of the next epoch (a file of another run?)");
  return k;
}

namespace detail {
void create_checkpoint_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw IOError("--save: cannot create the folder '" + dir + "': " + ec.message());
}
}  // namespace detail

}  // namespace minijax::samples
