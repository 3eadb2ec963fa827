// minijax compiler pass schedule_offloads: each device_put between memory kinds split into
// copy_start / copy_done, placed by the equations' estimated time (offloads early, reloads late).
#include "memory/schedule_offloads.h"

#include <unordered_map>
#include <variant>

#include "core/config.h"
#include "core/lax.h"
#include "core/primitive.h"

namespace minijax {

namespace {

constexpr double kFlopsPerSecond = 20e9;  // one device (two cores, AVX2): the estimate's rate
constexpr double kBytesPerSecond = 10e9;  // memory traffic, and a copy without an emulated link

double copy_seconds(int64_t bytes) {
  const double bw = config().host_link_bytes_per_s > 0 ? config().host_link_bytes_per_s : kBytesPerSecond;
  return double(bytes) / bw;
}

bool is_var(const Atom& a) { return std::holds_alternative<Var>(a); }

bool reads(const Eqn& e, const Var& v) {
  for (const Atom& a : e.inputs)
    if (is_var(a) && std::get<Var>(a) == v) return true;
  return false;
}

// The offload-relevant device_put: a variable moved between two memory kinds.
bool is_copy_between_kinds(const Eqn& e) {
  return e.primitive->name == "device_put" && e.inputs.size() == 1 && is_var(e.inputs[0]) &&
         atom_aval(e.inputs[0]).memory_kind != e.outputs.at(0).aval().memory_kind;
}

Jaxpr schedule_body(const Jaxpr& j);

// The equation with its bodies scheduled.
Eqn with_bodies_scheduled(const Eqn& e) {
  Eqn n = e;
  for (const auto& [key, value] : e.params.items()) {
    if (auto* b = std::get_if<ClosedJaxprPtr>(&value)) {
      auto c = std::make_shared<ClosedJaxpr>(**b);
      c->jaxpr = std::make_shared<Jaxpr>(schedule_body(*(*b)->jaxpr));
      n.params.set(key, ClosedJaxprPtr(c));
    } else if (auto* bs = std::get_if<std::vector<ClosedJaxprPtr>>(&value)) {
      std::vector<ClosedJaxprPtr> out;
      for (const auto& b : *bs) {
        auto c = std::make_shared<ClosedJaxpr>(*b);
        c->jaxpr = std::make_shared<Jaxpr>(schedule_body(*b->jaxpr));
        out.push_back(c);
      }
      n.params.set(key, std::move(out));
    }
  }
  return n;
}

// One level: equations to emit before original equation k (k = size: at the end), and the
// original equations that are dropped (the device_puts split in two).
struct Schedule {
  std::vector<std::vector<Eqn>> before;
  std::vector<bool> dropped;
  std::unordered_map<Var, size_t, VarHash> available_from;  // the first slot a variable exists in
};

// The first original equation after `i` reading `v` (size when none does).
size_t first_reader(const Jaxpr& j, size_t i, const Var& v) {
  for (size_t k = i + 1; k < j.eqns.size(); ++k)
    if (reads(j.eqns[k], v)) return k;
  return j.eqns.size();
}

void place(const Jaxpr& j, size_t i, const std::vector<double>& secs, Schedule& s) {
  const Eqn& e = j.eqns[i];
  const Var x = std::get<Var>(e.inputs[0]);
  const Var b = e.outputs[0];
  const ShapedArray& out = b.aval();
  const double need = copy_seconds(out.nbytes());
  const size_t from = s.available_from.count(x) ? s.available_from.at(x) : 0;
  const size_t reader = first_reader(j, i, b);
  size_t start = from, done = reader;
  if (out.memory_kind != MemoryKind::device) {  // offload: start early, done once hidden
    double covered = 0;
    done = start;
    while (done < reader && covered < need) covered += done < secs.size() ? secs[done++] : need;
  } else {  // reload: done before the reader, start as late as hiding allows
    double covered = 0;
    start = reader;
    while (start > from && covered < need) covered += secs[--start];
  }
  Var h(out);
  Eqn cs{&primitive("copy_start"), {x}, {h}, Params{{"memory_kind", out.memory_kind}}, {}};
  Eqn cd{&primitive("copy_done"), {h, x}, {b}, Params{}, {}};
  s.before[start].push_back(std::move(cs));
  s.before[done].push_back(std::move(cd));
  s.available_from[b] = done;
  s.dropped[i] = true;
}

Jaxpr schedule_body(const Jaxpr& j) {
  const size_t n = j.eqns.size();
  std::vector<double> secs(n);
  for (size_t k = 0; k < n; ++k) secs[k] = offload_estimate_seconds(j.eqns[k]);
  Schedule s{std::vector<std::vector<Eqn>>(n + 1), std::vector<bool>(n, false), {}};
  for (size_t k = 0; k < n; ++k) {
    if (is_copy_between_kinds(j.eqns[k])) place(j, k, secs, s);
    else
      for (const Var& o : j.eqns[k].outputs) s.available_from[o] = k + 1;
  }
  Jaxpr r = j;
  r.eqns.clear();
  for (size_t k = 0; k <= n; ++k) {
    for (Eqn& e : s.before[k]) r.eqns.push_back(std::move(e));
    if (k < n && !s.dropped[k]) r.eqns.push_back(with_bodies_scheduled(j.eqns[k]));
  }
  return r;
}

double bytes_of(const Atom& a) { return double(atom_aval(a).nbytes()); }

}  // namespace

double offload_estimate_seconds(const Eqn& e) {
  const std::string& name = e.primitive->name;
  if (name == "scan" && e.params.has("jaxpr") && e.params.has("length")) {
    double body = 0;
    for (const Eqn& b : e.params.get_jaxpr("jaxpr")->jaxpr->eqns) body += offload_estimate_seconds(b);
    return body * double(e.params.get_int("length"));
  }
  if (name == "dot_general" && e.inputs.size() == 2) {
    // 2 M N K: twice the output's elements times the contracted extent.
    const ShapedArray& lhs = atom_aval(e.inputs[0]);
    const ShapedArray& out = e.outputs.at(0).aval();
    double k = 1;
    for (int64_t d : lax::dot_dimension_numbers(e.params).lhs_contracting) k *= double(lhs.shape.at(size_t(d)));
    return 2.0 * double(out.size()) * k / kFlopsPerSecond;
  }
  double bytes = 0;
  for (const Atom& a : e.inputs) bytes += bytes_of(a);
  for (const Var& v : e.outputs) bytes += double(v.aval().nbytes());
  return bytes / kBytesPerSecond;
}

Jaxpr schedule_offloads(const Jaxpr& j) { return schedule_body(j); }

}  // namespace minijax
