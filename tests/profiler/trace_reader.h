// minijax profiler tests: reads a Chrome trace-event file back (json.h) into events and track
// names, with the queries the tests make (events by category and track, interval overlap).
#pragma once
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "profiler/json.h"

namespace trace_reader {

/// One complete ("X") event; times in microseconds from the trace's start.
struct Event {
  std::string name, cat;
  int tid = 0;
  double ts = 0, dur = 0;
  json::Value args;
  double end() const { return ts + dur; }
  /// Whether the two intervals share more than an endpoint.
  bool overlaps(const Event& o) const { return ts < o.end() && o.ts < end(); }
  /// Whether o lies within this event's interval.
  bool contains(const Event& o) const { return ts <= o.ts && o.end() <= end(); }
};

struct Trace {
  std::vector<Event> events;            ///< the "X" events, in file order
  std::map<int, std::string> threads;   ///< tid -> thread_name
  json::Value other;                    ///< "otherData"

  /// The tid of the track named `name`, -1 when none.
  int tid_of(const std::string& name) const {
    for (auto& [tid, n] : threads)
      if (n == name) return tid;
    return -1;
  }
  /// Events of category `cat` (any when empty) on track `tid` (any when -1), in file order.
  std::vector<Event> select(const std::string& cat, int tid = -1) const {
    std::vector<Event> r;
    for (auto& e : events)
      if ((cat.empty() || e.cat == cat) && (tid < 0 || e.tid == tid)) r.push_back(e);
    return r;
  }
};

/// Parses the trace file at `path` (std::runtime_error when it is not the expected format).
inline Trace read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  const json::Value doc = json::parse(ss.str());
  Trace t;
  if (doc.has("otherData")) t.other = doc["otherData"];
  for (const json::Value& e : doc["traceEvents"].arr()) {
    const std::string& ph = e["ph"].str();
    if (ph == "M") {
      if (e["name"].str() == "thread_name") t.threads[int(e["tid"].num())] = e["args"]["name"].str();
      continue;
    }
    if (ph != "X") throw std::runtime_error("unexpected event phase " + ph);
    Event x;
    x.name = e["name"].str();
    x.cat = e["cat"].str();
    x.tid = int(e["tid"].num());
    x.ts = e["ts"].num();
    x.dur = e["dur"].num();
    x.args = e["args"];
    if (int(e["pid"].num()) != int(getpid())) throw std::runtime_error("an event of another pid");
    t.events.push_back(std::move(x));
  }
  return t;
}

/// A fresh path for a trace file of test `name` in the temporary directory.
inline std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("minijax_profiler_" + std::to_string(getpid()) + "_" + name + ".json"))
      .string();
}

}  // namespace trace_reader
