// minijax fuzz targets' helper: the readers take a path, so each input is written to a scratch file first.
// Owns the per-process scratch folder (/tmp/minijax_fuzz_<pid>, removed at exit) and the write.
#pragma once
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace minijax_fuzz {

/// Writes [data, data + size) to <scratch>/input<ext>, replacing the previous input, and returns
/// the path. The scratch folder is made once per process and removed when it exits.
inline std::string write_input(const uint8_t* data, size_t size, const char* ext) {
  namespace fs = std::filesystem;
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("minijax_fuzz_" + std::to_string(::getpid()));
    fs::create_directories(d);
    static fs::path keep = d;
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(keep, ec);
    });
    return d;
  }();
  std::string path = (dir / (std::string("input") + ext)).string();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  f.close();
  if (!f) std::abort();  // the scratch disk failed: not a finding of the target's
  return path;
}

}  // namespace minijax_fuzz
