// minijax samples tests: a temporary folder per test (removed before and after), shared by
// test_resume.cc and test_signals.cc.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>

/// <tmp>/minijax_<name>_<pid>, removed when made (not created: a save creates it) and when destroyed.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("minijax_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string str() const { return path.string(); }
  /// The path of `n` inside the folder.
  std::string operator/(const std::string& n) const { return (path / n).string(); }
};
