// minijax host offload in loops: finding a scan's per-iteration slice copies, removing them from a
// body, and the small equation builders (scan, index step, reshape, copies) the rewrites share.
#include "memory/offload_loops.h"

#include <algorithm>
#include <unordered_set>
#include <variant>

#include "core/errors.h"
#include "core/fusion.h"
#include "core/primitive.h"
#include "core/views/array_ops.h"
#include "core/views/control_flow.h"

namespace minijax::offload {

namespace {

bool is_var(const Atom& a) { return std::holds_alternative<Var>(a); }

bool is_host(MemoryKind k) { return k != MemoryKind::device; }

// Where each variable of `j` is defined: the index of its equation.
std::unordered_map<Var, size_t, VarHash> definitions(const Jaxpr& j) {
  std::unordered_map<Var, size_t, VarHash> d;
  for (size_t k = 0; k < j.eqns.size(); ++k)
    for (const Var& o : j.eqns[k].outputs) d[o] = k;
  return d;
}

// Whether body invar `xb` is read only by copy_starts to `device` (through optimization_barriers)
// and their copy_dones; sets `slices` to the copies' param. False when it is not copied at all.
bool is_reloaded(const Jaxpr& b, const Var& xb, int64_t& slices) {
  std::unordered_set<Var, VarHash> derived{xb}, handles;
  bool copied = false;
  auto in_derived = [&](const Atom& a) { return is_var(a) && derived.count(std::get<Var>(a)); };
  for (const Eqn& e : b.eqns) {
    bool reads = false;
    for (const Atom& a : e.inputs) reads = reads || in_derived(a);
    if (!reads) continue;
    if (OptimizationBarrierParams::is(e)) {
      for (size_t k = 0; k < e.inputs.size(); ++k)
        if (in_derived(e.inputs[k])) derived.insert(e.outputs[k]);
    } else if (CopyParams::is(e, CopyParams::Kind::start) && copy_params(e).memory_kind == MemoryKind::device &&
               in_derived(e.inputs[0])) {
      copied = true;
      slices = copy_params(e).slice_count();
      handles.insert(e.outputs[0]);
    } else if (CopyDoneParams::is(e) && is_var(e.inputs[0]) && handles.count(std::get<Var>(e.inputs[0])) &&
               !in_derived(e.inputs[0])) {
      continue;  // the pair's done: its source operand only keeps the value alive
    } else {
      return false;
    }
  }
  for (const Atom& a : b.outvars)
    if (in_derived(a)) return false;
  return copied;
}

}  // namespace

ScanParts scan_parts(const Eqn& scan) {
  ScanParts s;
  const ScanParams p = scan_params(scan);
  s.body = p.jaxpr->jaxpr.get();
  s.nc = size_t(p.num_consts);
  s.ncar = size_t(p.num_carry);
  s.length = p.length;
  s.reverse = p.reverse;
  return s;
}

int64_t SliceCopies::min_slice_bytes(const Eqn& scan) const {
  const ScanParts s = scan_parts(scan);
  int64_t m = 0;
  auto take = [&](int64_t b) { m = m == 0 ? b : std::min(m, b); };
  for (size_t x : reload_xs) take(s.body->invars[s.nc + s.ncar + x].aval().nbytes());
  for (size_t y : offload_ys) take(atom_aval(s.body->outvars[s.ncar + y]).nbytes());
  return m;
}

SliceCopies find_slice_copies(const Eqn& scan) {
  SliceCopies f;
  if (!ScanParams::is(scan)) return f;
  const ScanParts s = scan_parts(scan);
  const Jaxpr& b = *s.body;
  for (size_t x = 0; x < s.num_xs(); ++x) {
    const Var& xb = b.invars[s.nc + s.ncar + x];
    int64_t slices = 1;
    if (is_host(xb.aval().memory_kind) && is_reloaded(b, xb, slices)) {
      f.reload_xs.push_back(x);
      f.reload_slices.push_back(slices);
    }
  }
  const auto def = definitions(b);
  std::unordered_map<Var, int, VarHash> reads;  // equation operands and outvars
  for (const Eqn& e : b.eqns)
    for (const Atom& a : e.inputs)
      if (is_var(a)) ++reads[std::get<Var>(a)];
  for (const Atom& a : b.outvars)
    if (is_var(a)) ++reads[std::get<Var>(a)];
  for (size_t y = 0; y < s.num_ys(); ++y) {
    const Atom& out = b.outvars[s.ncar + y];
    if (!is_var(out)) continue;
    const Var& yv = std::get<Var>(out);
    if (!is_host(yv.aval().memory_kind) || reads[yv] != 1 || !def.count(yv)) continue;
    const Eqn& done = b.eqns[def.at(yv)];
    if (!CopyDoneParams::is(done) || done.inputs.size() != 2 || !is_var(done.inputs[0]) ||
        !is_var(done.inputs[1]))
      continue;
    const Var& h = std::get<Var>(done.inputs[0]);
    const Var& r = std::get<Var>(done.inputs[1]);
    if (!def.count(h) || reads[h] != 1 || r.aval().memory_kind != MemoryKind::device) continue;
    const Eqn& start = b.eqns[def.at(h)];
    if (!CopyParams::is(start, CopyParams::Kind::start) || !(atom_var(start.inputs[0]) == r)) continue;
    f.offload_ys.push_back(y);
    f.offload_src.push_back(r);
    f.offload_slices.push_back(copy_params(start).slice_count());
  }
  return f;
}

Jaxpr strip_slice_copies(const Jaxpr& body, const ScanParts& s, const SliceCopies& found) {
  Jaxpr r = body;
  r.eqns.clear();
  std::unordered_map<Var, Atom, VarHash> sub;
  for (size_t x : found.reload_xs) {
    Var& old = r.invars[s.nc + s.ncar + x];
    ShapedArray a = old.aval();
    a.memory_kind = MemoryKind::device;
    Var fresh(a);
    sub[old] = fresh;
    old = fresh;
  }
  // The offloads' copy pairs: their outputs (handle and value) are dropped with them.
  std::unordered_set<Var, VarHash> offload_vars;
  const auto def = definitions(body);
  for (size_t k = 0; k < found.offload_ys.size(); ++k) {
    const Var& y = std::get<Var>(body.outvars[s.ncar + found.offload_ys[k]]);
    offload_vars.insert(y);
    offload_vars.insert(std::get<Var>(body.eqns[def.at(y)].inputs[0]));
  }
  auto subst = [&](const Atom& a) -> Atom {
    if (!is_var(a)) return a;
    auto it = sub.find(std::get<Var>(a));
    return it == sub.end() ? a : it->second;
  };
  std::unordered_set<Var, VarHash> identity_copies;  // handles of reloads that became device->device
  for (const Eqn& e : body.eqns) {
    if (!e.outputs.empty() && offload_vars.count(e.outputs[0])) continue;
    Eqn n = e;
    for (Atom& a : n.inputs) a = subst(a);
    if (CopyParams::is(e, CopyParams::Kind::start) && is_host(atom_aval(e.inputs[0]).memory_kind) &&
        atom_aval(n.inputs[0]).memory_kind == copy_params(e).memory_kind) {
      sub[e.outputs[0]] = n.inputs[0];
      identity_copies.insert(e.outputs[0]);
      continue;
    }
    if (CopyDoneParams::is(e) && is_var(e.inputs[0]) && identity_copies.count(std::get<Var>(e.inputs[0]))) {
      sub[e.outputs[0]] = n.inputs[0];
      continue;
    }
    if (OptimizationBarrierParams::is(e))
      for (size_t k = 0; k < n.outputs.size(); ++k)
        if (!(atom_aval(n.inputs[k]) == atom_aval(e.inputs[k]))) {
          Var fresh(atom_aval(n.inputs[k]));
          sub[e.outputs[k]] = fresh;
          n.outputs[k] = fresh;
        }
    r.eqns.push_back(std::move(n));
  }
  for (Atom& a : r.outvars) a = subst(a);
  for (size_t k = 0; k < found.offload_ys.size(); ++k) r.outvars[s.ncar + found.offload_ys[k]] = subst(found.offload_src[k]);
  return r;
}

Eqn make_scan(const Eqn& like, const Jaxpr& body, std::vector<Atom> inputs, std::vector<Var> outputs, size_t nc,
              size_t ncar, int64_t length) {
  Eqn e;
  e.primitive = like.primitive;
  e.params = like.params;
  e.effects = like.effects;
  auto cj = std::make_shared<ClosedJaxpr>();
  cj->jaxpr = std::make_shared<Jaxpr>(body);
  e.params.set("jaxpr", ClosedJaxprPtr(cj));
  e.params.set("num_consts", int64_t(nc));
  e.params.set("num_carry", int64_t(ncar));
  e.params.set("length", length);
  e.params.set("linear", std::vector<int64_t>(inputs.size(), 0));
  e.inputs = std::move(inputs);
  e.outputs = std::move(outputs);
  return e;
}

Literal index_literal(int64_t v) {
  Array a = Array::allocate(ShapedArray{{}, DType::i32, false, MemoryKind::device});
  *a.mutable_data<int32_t>() = int32_t(v);
  return Literal{a};
}

Eqn add_to_index(const Var& in, const Var& out, int64_t delta) {
  Var a(in.aval()), b(out.aval());
  auto body = std::make_shared<Jaxpr>();
  body->invars = {a};
  body->eqns.push_back(Eqn{&primitive("add"), {a, index_literal(delta)}, {b}, Params{}, {}});
  body->outvars = {b};
  auto cj = std::make_shared<ClosedJaxpr>();
  cj->jaxpr = body;
  CallParams p;
  p.body_key = fusion_p().body_params.at(0);
  p.jaxpr = cj;
  p.kind = "loop";
  p.name = "fusion.index";
  return Eqn{&fusion_p(), {in}, {out}, p.to_params(), {}};
}

Eqn reshape_to(const Atom& in, const Var& out) {
  return Eqn{&primitive("reshape"),
             {in},
             {out},
             ReshapeParams{out.aval().shape, std::nullopt}.to_params(),
             {}};
}

Eqn allocate_buffer(const Var& out) {
  const ShapedArray& a = out.aval();
  return Eqn{&AllocateBufferParams::primitive(), {}, {out}, AllocateBufferParams{a.shape, a.dtype, a.memory_kind}.to_params(),
             {}};
}

Eqn copy_eqn(const CopyParams& copy, std::vector<Atom> operands, const Var& out) {
  return Eqn{&copy.primitive(), std::move(operands), {out}, copy.to_params(), {}};
}

Eqn copy_done(const Var& h, const std::vector<Atom>& sources, const Var& out) {
  std::vector<Atom> in{h};
  in.insert(in.end(), sources.begin(), sources.end());
  return Eqn{&CopyDoneParams::primitive(), std::move(in), {out}, CopyDoneParams{}.to_params(), {}};
}

Eqn with_bodies(const Eqn& e, const std::function<Jaxpr(const Jaxpr&)>& f) {
  Eqn n = e;
  for (const auto& [key, value] : e.params.items()) {
    if (auto* b = std::get_if<ClosedJaxprPtr>(&value)) {
      auto c = std::make_shared<ClosedJaxpr>(**b);
      c->jaxpr = std::make_shared<Jaxpr>(f(*(*b)->jaxpr));
      n.params.set(key, ClosedJaxprPtr(c));
    } else if (auto* bs = std::get_if<std::vector<ClosedJaxprPtr>>(&value)) {
      std::vector<ClosedJaxprPtr> out;
      for (const auto& b : *bs) {
        auto c = std::make_shared<ClosedJaxpr>(*b);
        c->jaxpr = std::make_shared<Jaxpr>(f(*b->jaxpr));
        out.push_back(c);
      }
      n.params.set(key, std::move(out));
    }
  }
  return n;
}

bool is_copy_start(const Eqn& e) { return CopyParams::is(e); }

MemoryKind copy_destination_kind(const Eqn& start) {
  const CopyParams c = copy_params(start);
  if (c.kind == CopyParams::Kind::update_start) return atom_aval(start.inputs.at(0)).memory_kind;
  return c.memory_kind;
}

}  // namespace minijax::offload
