// minijax tests (io): helpers the npy, npz and safetensors tests share.
// Owns a scratch folder per test, byte-level file access, running Debian's python3 + numpy, fixtures.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <minijax/minijax.h>

namespace iotest {

namespace fs = std::filesystem;

/// A fresh folder for one test, removed (with its contents) when the object goes away.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    path = fs::temp_directory_path() /
           ("minijax_io_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
            std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

inline std::vector<uint8_t> read_bytes(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& p, const std::vector<uint8_t>& b) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

/// The bytes of a hex string ("0a ff 10": spaces and newlines ignored).
inline std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out;
  std::string digits;
  for (char c : hex)
    if (std::isxdigit(static_cast<unsigned char>(c))) digits += c;
  for (size_t i = 0; i + 1 < digits.size(); i += 2) out.push_back(uint8_t(std::stoi(digits.substr(i, 2), nullptr, 16)));
  return out;
}

/// The interpreter of Debian's python3-numpy (setup.sh installs it); MINIJAX_PYTHON3 overrides.
inline std::string python3() {
  const char* env = std::getenv("MINIJAX_PYTHON3");
  return env && *env ? env : MINIJAX_PYTHON3;
}

struct PythonResult {
  int rc = -1;
  std::string output;  ///< stdout and stderr together
};

/// Runs `script` with python3 (args appended, each single-quoted) and returns its exit status and output.
inline PythonResult run_python(const ScratchDir& dir, const std::string& script, const std::vector<std::string>& args = {}) {
  const std::string file = dir / "script.py";
  {
    std::ofstream f(file);
    f << script;
  }
  std::string cmd = python3() + " '" + file + "'";
  for (const std::string& a : args) cmd += " '" + a + "'";
  cmd += " 2>&1";
  PythonResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = ::pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// Runs fn, expecting mj::IOError whose message holds every string of `parts`; returns the message.
inline std::string expect_io_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
  } catch (const mj::IOError& e) {
    const std::string m = e.what();
    for (const std::string& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "missing '" << p << "' in: " << m;
    return m;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected mj::IOError, got another exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected mj::IOError, nothing was thrown";
  return "";
}

/// The raw bytes of a concrete array.
inline std::vector<uint8_t> bytes_of(const mj::Array& a) {
  const auto* p = static_cast<const uint8_t*>(a.raw_data());
  return std::vector<uint8_t>(p, p + a.aval().nbytes());
}

/// Whether a and b have the same dtype, shape and bytes (bitwise: NaN == NaN, -0 != +0).
inline ::testing::AssertionResult same_array(const mj::Array& a, const mj::Array& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape())
    return ::testing::AssertionFailure() << a.aval().str() << " vs " << b.aval().str();
  if (bytes_of(a) != bytes_of(b)) return ::testing::AssertionFailure() << "values differ: " << a << " vs " << b;
  return ::testing::AssertionSuccess();
}

/// An array of dtype T and `shape` holding `values` (row-major).
template <class T>
mj::Array make(const mj::Shape& shape, const std::vector<T>& values) {
  mj::Array a = mj::Array::allocate(mj::ShapedArray{shape, mj::dtype_of<T>()});
  T* p = a.mutable_data<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return a;
}

inline mj::Array make_bf16(const mj::Shape& shape, const std::vector<uint16_t>& bits) {
  mj::Array a = mj::Array::allocate(mj::ShapedArray{shape, mj::bf16});
  auto* p = a.mutable_data<mj::bfloat16>();
  for (size_t i = 0; i < bits.size(); ++i) p[i].bits = bits[i];
  return a;
}

/// The fixture every interoperability test shares: one array per dtype with edge values, the
/// same in the Python scripts (kPythonFixture). Keys: b (bool), i (int32), u (uint32), f
/// (float32 with -0, a subnormal, inf, NaN), d (float64), s (a float32 scalar), e (an empty
/// float32 [0, 3]); with_bf16 adds h (bfloat16 bits: 1.0, -2.5, inf).
inline std::map<std::string, mj::Array> fixture(bool with_bf16) {
  std::map<std::string, mj::Array> m;
  m["b"] = make<bool>({2, 3}, {true, false, true, false, false, true});
  m["i"] = make<int32_t>({4}, {std::numeric_limits<int32_t>::min(), -1, 0, std::numeric_limits<int32_t>::max()});
  m["u"] = make<uint32_t>({2, 2}, {0u, 1u, 2147483648u, 4294967295u});
  m["f"] = make<float>({2, 3}, {0.0f, -0.0f, 1.0f / 3.0f, -3.25e-39f, std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::quiet_NaN()});
  m["d"] = make<double>({3}, {1.0 / 3.0, -1e300, 5e-324});
  m["s"] = make<float>({}, {42.0f});
  m["e"] = make<float>({0, 3}, {});
  if (with_bf16) m["h"] = make_bf16({3}, {0x3F80, 0xC020, 0x7F80});
  return m;
}

/// The same fixture built by numpy (an independent oracle of the values' bits), as Python source
/// defining `fixture` (a dict) and `BF16_BITS` (h's uint16 bits).
inline const char* kPythonFixture = R"PY(
import numpy as np
fixture = {
    'b': np.array([[True, False, True], [False, False, True]], dtype=np.bool_),
    'i': np.array([-2**31, -1, 0, 2**31 - 1], dtype=np.int32),
    'u': np.array([[0, 1], [2**31, 2**32 - 1]], dtype=np.uint32),
    'f': np.array([[0.0, -0.0, np.float32(1) / np.float32(3)], [-3.25e-39, np.inf, np.nan]], dtype=np.float32),
    'd': np.array([1.0 / 3.0, -1e300, 5e-324], dtype=np.float64),
    's': np.array(42.0, dtype=np.float32),
    'e': np.zeros((0, 3), dtype=np.float32),
}
BF16_BITS = np.array([0x3F80, 0xC020, 0x7F80], dtype='<u2')
def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
)PY";

}  // namespace iotest
