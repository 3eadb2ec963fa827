// minijax bench peers: what the libtorch peer programs share — Fashion-MNIST loading (the first n
// training examples, or random bytes when the files are missing), the environment record, JSON.
#pragma once
#include <sched.h>
#include <time.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace peer {

/// The decompressed bytes of a .gz file, or empty when it cannot be opened.
inline std::vector<uint8_t> gz(const std::string& f) {
  std::vector<uint8_t> o;
  gzFile g = gzopen(f.c_str(), "rb");
  if (!g) return o;
  uint8_t b[1 << 16];
  int n;
  while ((n = gzread(g, b, sizeof b)) > 0) o.insert(o.end(), b, b + n);
  gzclose(g);
  return o;
}

/// n images (784 bytes each) and labels: Fashion-MNIST's first n examples of the split `prefix`
/// ("train" or "t10k") from $MINIJAX_FASHION_MNIST or /usr/share/datasets/fashion-mnist, else
/// uniform random bytes.
struct Data {
  std::vector<uint8_t> images, labels;
  std::string source;
};
inline Data load(int64_t n, const std::string& prefix = "train") {
  const char* env = std::getenv("MINIJAX_FASHION_MNIST");
  std::string d = env ? env : "/usr/share/datasets/fashion-mnist";
  auto xi = gz(d + "/" + prefix + "-images-idx3-ubyte.gz"), yi = gz(d + "/" + prefix + "-labels-idx1-ubyte.gz");
  Data out;
  if (xi.size() >= size_t(16 + n * 784) && yi.size() >= size_t(8 + n)) {
    out.images.assign(xi.begin() + 16, xi.begin() + 16 + n * 784);
    out.labels.assign(yi.begin() + 8, yi.begin() + 8 + n);
    out.source = "fashion-mnist";
    return out;
  }
  std::mt19937 rng(0);
  out.images.resize(size_t(n * 784));
  out.labels.resize(size_t(n));
  for (auto& p : out.images) p = uint8_t(rng() & 0xff);
  for (auto& l : out.labels) l = uint8_t(rng() % 10);
  out.source = "random";
  return out;
}

inline std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  if (!(f >> a >> b >> c)) return "unknown";
  return a + " " + b + " " + c;
}

/// "SCHED_OTHER", "SCHED_FIFO 10", ... for this process.
inline std::string sched_policy() {
  const int p = sched_getscheduler(0);
  sched_param sp{};
  sched_getparam(0, &sp);
  if (p == SCHED_FIFO) return "SCHED_FIFO " + std::to_string(sp.sched_priority);
  if (p == SCHED_RR) return "SCHED_RR " + std::to_string(sp.sched_priority);
  return p == SCHED_OTHER ? "SCHED_OTHER" : "policy " + std::to_string(p);
}

inline std::string env_json(const std::string& load_before) {
  std::string cpu = "unknown", line;
  std::ifstream f("/proc/cpuinfo");
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  char date[64];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S%z", &tm);
  auto var = [](const char* name) {
    const char* v = std::getenv(name);
    return v ? "\"" + std::string(v) + "\"" : std::string("null");
  };
  return std::string("{\"date\": \"") + date + "\", \"cpu\": \"" + cpu +
         "\", \"cpus_online\": " + std::to_string(std::thread::hardware_concurrency()) +
         ", \"loadavg_before\": \"" + load_before + "\", \"loadavg_after\": \"" + loadavg() +
         "\", \"OMP_WAIT_POLICY\": " + var("OMP_WAIT_POLICY") + ", \"OMP_NUM_THREADS\": " +
         var("OMP_NUM_THREADS") + ", \"OPENBLAS_CORETYPE\": " + var("OPENBLAS_CORETYPE") +
         ", \"MINIJAX_BENCH_LABEL\": " + var("MINIJAX_BENCH_LABEL") + ", \"sched\": \"" + sched_policy() + "\", \"git\": " + var("MINIJAX_BENCH_GIT") + "}";
}

/// {"median_ms": .., "min_ms": .., "max_ms": .., "n": ..} of per-step seconds.
inline std::string stats_json(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  char buf[160];
  std::snprintf(buf, sizeof buf, "{\"median_ms\": %.4f, \"min_ms\": %.4f, \"max_ms\": %.4f, \"n\": %zu}",
                med * 1e3, v.front() * 1e3, v.back() * 1e3, n);
  return buf;
}

}  // namespace peer
