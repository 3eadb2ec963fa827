// minijax samples: the training checkpoints behind the samples' --save DIR and --resume DIR.
// Owns the checkpoint's path, its run metadata and the check that a resume matches the run.
#include "samples/common/checkpoint.h"

#include <cstdio>
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

namespace detail {
void create_checkpoint_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw IOError("--save: cannot create the folder '" + dir + "': " + ec.message());
}
}  // namespace detail

}  // namespace minijax::samples
