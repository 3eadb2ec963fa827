// minijax buffer planning: buffer classes (views and in-place updates merged by union-find),
// storage per class, body destinations, donation, and the best-fit heap placement of temporaries.
#include "memory/plan_buffers.h"

#include <algorithm>
#include <functional>
#include <sstream>

#include "core/bodies.h"
#include "core/errors.h"
#include "core/primitive.h"
#include "core/views/control_flow.h"
#include "core/views/memory_ops.h"
#include "memory/analyze_liveness.h"
#include "memory/buffer_rules.h"

namespace minijax {

int64_t arena_size(const ShapedArray& a) {
  if (a.is_token()) return 0;
  return (a.nbytes() + 63) / 64 * 64;
}

const Scratch* BufferPlan::scratch_of(const Eqn& e) const {
  if (e.outputs.empty()) return nullptr;
  auto it = scratch.find(e.outputs[0].id());
  return it == scratch.end() ? nullptr : &it->second;
}

const Location& BufferPlan::at(const Var& v) const {
  auto it = where.find(v);
  if (it == where.end())
    throw ValueError("buffer plan: no location for a value of type " + v.aval().str() +
                     " (values inside fusions have none)");
  return it->second;
}

std::string BufferPlan::str(const Jaxpr& program) const {
  // One line per program input/output and per arena; each equation's output locations.
  std::ostringstream os;
  static const char* kinds[] = {"device", "pinned_host", "unpinned_host"};
  for (size_t k = 0; k < 3; ++k)
    if (arena_bytes[k]) os << "  arena " << kinds[k] << ": " << arena_bytes[k] << " B (temporaries without reuse: "
                           << unplanned_bytes[k] << " B)\n";
  for (size_t k = 0; k < outputs.size(); ++k) {
    const OutputPlan& o = outputs[k];
    os << "  output " << k << ": ";
    switch (o.kind) {
      case OutputPlan::fresh: os << "own buffer"; break;
      case OutputPlan::donated_param: os << "in donated input " << o.index << "'s buffer"; break;
      case OutputPlan::param: os << "input " << o.index << "'s buffer (unchanged)"; break;
      case OutputPlan::same_as: os << "same buffer as output " << o.index; break;
      case OutputPlan::literal: os << "a constant"; break;
    }
    os << "\n";
  }
  for (size_t i = 0; i < program.eqns.size(); ++i) {
    const Eqn& e = program.eqns[i];
    os << "  eqn " << i << " " << e.primitive->name;
    if (CallParams::is(e) && is_fusion(*e.primitive)) {
      if (auto n = call_params(e).name) os << " " << *n;
    }
    os << " ->";
    for (auto& v : e.outputs) {
      auto it = where.find(v);
      if (it == where.end()) {
        os << " (none)";
        continue;
      }
      const Location& l = it->second;
      switch (l.place) {
        case Place::param: os << " input " << l.index; break;
        case Place::output: os << " output " << l.index; break;
        case Place::temp: os << " " << kinds[l.index] << "+" << l.offset; break;
        case Place::view: os << " view"; break;
        case Place::loop_slice: os << " slice"; break;
        case Place::literal: os << " literal"; break;
        case Place::undefined: os << " unallocated"; break;
      }
      os << " (" << v.aval().str() << ")";
    }
    os << "\n";
  }
  return os.str();
}

namespace {

constexpr int64_t kNever = -2;

// One buffer class: values that share bytes.
struct Class {
  int64_t bytes = 0;
  MemoryKind kind = MemoryKind::device;
  int64_t first = INT64_MAX, last = kNever;
  int param = -1;             // top level: the program input it is
  int output = -1;            // top level: the first program output it holds
  bool fixed = false;         // storage given by the enclosing scope or a destination
  Location fixed_loc;
  bool writable = true;       // may be overwritten in place
  int carry = -1;             // body: the carry whose incoming buffer this is
  bool undefined = false;     // an allocate_buffer only loops read, as a carry's initial value
  std::vector<Var> members;
  int64_t offset = 0;         // temp placement
};

// A temporary interval for the heap: a class, or a nested body's region.
struct Interval {
  int64_t first, last, bytes;
  int64_t* offset;
};

// Greedy best-fit placement, largest first (XLA's GlobalDecreasingSizeBestFitHeap).
int64_t place(std::vector<Interval>& items) {
  std::vector<Interval*> order;
  for (auto& it : items)
    if (it.bytes > 0) order.push_back(&it);
  std::stable_sort(order.begin(), order.end(), [](const Interval* a, const Interval* b) {
    if (a->bytes != b->bytes) return a->bytes > b->bytes;
    return a->first < b->first;
  });
  std::vector<Interval*> placed;
  int64_t top = 0;
  for (Interval* it : order) {
    std::vector<std::pair<int64_t, int64_t>> busy;  // [start, end) of overlapping placed items
    for (Interval* p : placed)
      if (!(p->last < it->first || it->last < p->first)) busy.push_back({*p->offset, *p->offset + p->bytes});
    std::sort(busy.begin(), busy.end());
    int64_t best = -1, best_gap = INT64_MAX, cursor = 0;
    for (auto& [s, e] : busy) {
      if (s - cursor >= it->bytes && s - cursor < best_gap) best = cursor, best_gap = s - cursor;
      cursor = std::max(cursor, e);
    }
    if (best < 0) best = cursor;
    *it->offset = best;
    top = std::max(top, best + it->bytes);
    placed.push_back(it);
  }
  return top;
}

using Shifts = std::vector<std::pair<int64_t*, int>>;

// The outputs of allocate_buffer equations of j that are read only as the initial value of a
// scan's carry (their contents are never read: the loop writes its carry before reading it).
std::unordered_map<uint64_t, bool> carry_only_allocations(const Jaxpr& j) {
  std::unordered_map<uint64_t, bool> only;
  for (const Eqn& e : j.eqns)
    if (AllocateBufferParams::is(e)) only[e.outputs.at(0).id()] = true;
  if (only.empty()) return only;
  auto spoil = [&](const Atom& a) {
    if (auto* v = std::get_if<Var>(&a); v && only.count(v->id())) only[v->id()] = false;
  };
  for (const Eqn& e : j.eqns) {
    // A scan's carry operands are its own buffers (consts and xs are read in place).
    const bool scan = ScanParams::is(e);
    const BodyLayout l = scan ? body_layout(e) : BodyLayout{};
    for (size_t a = 0; a < e.inputs.size(); ++a)
      if (!scan || a < l.carry_begin() || a >= l.xs_begin()) spoil(e.inputs[a]);
  }
  for (const Atom& a : j.outvars) spoil(a);
  return only;
}

struct BodySpec {
  std::vector<Location> in_locs;   // per invar: its fixed storage
  std::vector<int> in_carry;       // per invar: carry index (-1: none)
  std::vector<Location> out_dest;  // per outvar: where it must end up
  std::vector<int> out_carry;      // per outvar: carry index (-1: none)
};

class ScopePlanner {
 public:
  ScopePlanner(BufferPlan& plan, const Jaxpr& j) : plan_(plan), j_(j), live_(analyze_liveness(j)) {
    for (const Eqn& e : j.eqns) {
      const BufferRule* rule = buffer_rule(e);
      const std::vector<int> views = rule && rule->views ? rule->views(e) : std::vector<int>{};
      for (size_t k = 0; k < views.size() && k < e.outputs.size(); ++k)
        if (views[k] >= 0)
          if (auto* u = std::get_if<Var>(&e.inputs.at(size_t(views[k])))) view_of_[e.outputs[k].id()] = *u;
    }
  }

  // Plans the scope; returns the bytes of its temporaries per kind (its region size). The offsets
  // placed in this scope and in nested ones (temps, staging buffers) are appended to `subtree`
  // with their memory kind, for the caller to move by the region's offset.
  std::array<int64_t, 3> run(const BodySpec* body, Shifts& subtree);

 private:
  Class& cls(const Var& v) { return classes_.at(find(v)); }
  uint64_t find(const Var& v) {
    uint64_t x = v.id();
    while (parent_.at(x) != x) x = parent_[x] = parent_.at(parent_.at(x));
    return x;
  }
  void make_class(const Var& v) {
    parent_[v.id()] = v.id();
    Class c;
    c.bytes = arena_size(v.aval());
    c.kind = v.aval().memory_kind;
    c.members.push_back(v);
    classes_[v.id()] = std::move(c);
    vars_[v.id()] = v;
  }
  // Merges other's class into keep's.
  void unite(const Var& keep, const Var& other) {
    uint64_t a = find(keep), b = find(other);
    if (a == b) return;
    Class& ca = classes_.at(a);
    Class& cb = classes_.at(b);
    ca.members.insert(ca.members.end(), cb.members.begin(), cb.members.end());
    ca.param = ca.param >= 0 ? ca.param : cb.param;
    ca.writable = ca.writable && cb.writable;
    if (cb.fixed && !ca.fixed) ca.fixed = true, ca.fixed_loc = cb.fixed_loc;
    ca.carry = ca.carry >= 0 ? ca.carry : cb.carry;
    parent_[b] = a;
    classes_.erase(b);
  }
  int64_t class_last_use(uint64_t root) {
    int64_t last = kNever;
    for (auto& m : classes_.at(root).members) last = std::max(last, live_.at(m).last_use);
    return last;
  }
  bool is_member_invar(uint64_t root) {
    for (auto& m : classes_.at(root).members)
      if (live_.at(m).def == -1) return true;
    return false;
  }

  void try_in_place(size_t i, const Eqn& e, size_t k, const BodySpec* body);
  void build_classes(const BodySpec* body);
  std::array<int64_t, 3> place_temporaries(bool top);
  void record_locations(bool top, Shifts& subtree);
  // The value v is a view of (through view rules only, e.g. copy_done or reshape), or v itself.
  Var view_source(const Var& v) const {
    auto it = view_of_.find(v.id());
    return it == view_of_.end() ? v : view_source(it->second);
  }
  std::array<int64_t, 3> plan_nested(size_t i, const Eqn& e);
  void plan_scratch(size_t i, const Eqn& e);
  void body_destinations(const BodySpec& spec);
  void top_outputs();
  void donate();

  BufferPlan& plan_;
  const Jaxpr& j_;
  Liveness live_;
  std::unordered_map<uint64_t, uint64_t> parent_;
  std::unordered_map<uint64_t, Class> classes_;
  std::unordered_map<uint64_t, Var> vars_;
  std::unordered_map<uint64_t, Var> view_of_;  // output id -> the operand it is a view of
  std::vector<std::pair<size_t, std::array<int64_t, 3>>> regions_;  // nested regions per eqn
  std::vector<std::array<int64_t, 3>> region_offsets_;
  std::vector<Shifts> region_temps_;
  std::vector<int64_t> staging_offsets_;
  std::vector<std::pair<const ShapedArray*, size_t>> staging_;  // aval of each staged copy, its EndCopy
};

void ScopePlanner::try_in_place(size_t i, const Eqn& e, size_t k, const BodySpec* body) {
  const BufferRule* rule = buffer_rule(e);
  if (!rule || !rule->in_place) return;
  const Var& out = e.outputs[k];
  for (int idx : rule->in_place(e, k)) {
    const Var* u = std::get_if<Var>(&e.inputs.at(size_t(idx)));
    if (!u || !parent_.count(u->id())) continue;
    uint64_t r = find(*u);
    Class& c = classes_.at(r);
    if (c.bytes != arena_size(out.aval()) || c.kind != out.aval().memory_kind) continue;
    if (class_last_use(r) != int64_t(i)) continue;  // read later: must survive
    if (!c.writable) continue;
    if (c.carry >= 0) {  // a carry's buffer: only its own new value may overwrite it
      if (!body) continue;
      size_t uses = 0;
      bool is_its_carry = false;
      for (size_t o = 0; o < j_.outvars.size(); ++o)
        if (auto* v = std::get_if<Var>(&j_.outvars[o]); v && view_source(*v) == out) {
          ++uses;
          is_its_carry |= body->out_carry[o] == c.carry;
        }
      if (uses != 1 || !is_its_carry) continue;
    }
    // Another operand of e in the same class would be read at other indices: refuse.
    bool shared = false;
    for (size_t x = 0; x < e.inputs.size(); ++x)
      if (int(x) != idx)
        if (auto* w = std::get_if<Var>(&e.inputs[x]); w && parent_.count(w->id()) && find(*w) == r) shared = true;
    if (shared) continue;
    unite(*u, out);
    return;
  }
}

// Liveness of nested bodies: their inputs are views of this scope's values, their temporaries
// live in a region reserved at equation i.
std::array<int64_t, 3> ScopePlanner::plan_nested(size_t i, const Eqn& e) {
  std::array<int64_t, 3> region{};
  auto view_of = [&](const Atom& a) {
    Location l;
    if (auto* lit = std::get_if<Literal>(&a)) {
      l.place = Place::literal;
      l.literal = *lit;
    } else {
      l.place = Place::view;
      l.base = std::get<Var>(a);
    }
    return l;
  };
  auto view_var = [](const Var& v) {
    Location l;
    l.place = Place::view;
    l.base = v;
    return l;
  };
  // Bodies that never run at the same time (a while's predicate and body, cond branches) share
  // the region: its size is their maximum.
  auto run_body = [&](const Jaxpr& body, const BodySpec& spec, std::array<int64_t, 3>& into) {
    ScopePlanner sp(plan_, body);
    Shifts temps;
    auto r = sp.run(&spec, temps);
    for (size_t k = 0; k < 3; ++k) into[k] = std::max(into[k], r[k]);
    return temps;
  };
  const BodyForm form = e.primitive->body_form;
  Shifts body_temps;
  if (form == BodyForm::scan) {
    const ScanParams p = scan_params(e);
    const BodyLayout lay = body_layout(e);
    const Jaxpr& body = *p.jaxpr->jaxpr;
    const size_t nc = lay.num_consts, ncar = lay.num_carry;
    const int64_t length = p.length;
    const bool rev = p.reverse;
    BodySpec s;
    for (size_t a = 0; a < e.inputs.size(); ++a) {
      Location l;
      if (a < nc) l = view_of(e.inputs[a]);
      else if (a < nc + ncar) l = view_var(e.outputs[a - nc]);
      else {
        l.place = Place::loop_slice;
        l.base = std::get<Var>(e.inputs[a]);
        l.stride = arena_size(body.invars[a].aval()) == 0 ? 0 : body.invars[a].aval().nbytes();
        l.length = length, l.reversed = rev, l.loop = &e;
      }
      s.in_locs.push_back(l);
      s.in_carry.push_back(a >= nc && a < nc + ncar ? int(a - nc) : -1);
    }
    for (size_t o = 0; o < body.outvars.size(); ++o) {
      Location d;
      if (o < ncar) d = view_var(e.outputs[o]);
      else {
        d.place = Place::loop_slice;
        d.base = e.outputs[o];
        d.stride = atom_aval(body.outvars[o]).nbytes();
        d.length = length, d.reversed = rev, d.loop = &e;
      }
      s.out_dest.push_back(d);
      s.out_carry.push_back(o < ncar ? int(o) : -1);
    }
    body_temps = run_body(body, s, region);
  } else if (form == BodyForm::while_loop) {
    const WhileParams p = while_params(e);
    const BodyLayout lay = body_layout(e);
    const Jaxpr& cj = *p.cond_jaxpr->jaxpr;
    const Jaxpr& bj = *p.body_jaxpr->jaxpr;
    const size_t cn = lay.num_cond_consts, bn = lay.num_body_consts;
    const size_t ncar = e.outputs.size();
    BodySpec cs, bs;
    for (size_t a = 0; a < cn; ++a) cs.in_locs.push_back(view_of(e.inputs[a])), cs.in_carry.push_back(-1);
    for (size_t a = 0; a < bn; ++a) bs.in_locs.push_back(view_of(e.inputs[cn + a])), bs.in_carry.push_back(-1);
    for (size_t k = 0; k < ncar; ++k) {
      Location l = view_var(e.outputs[k]);
      cs.in_locs.push_back(l), cs.in_carry.push_back(-1);  // read only in the predicate
      bs.in_locs.push_back(l), bs.in_carry.push_back(int(k));
      bs.out_dest.push_back(l), bs.out_carry.push_back(int(k));
    }
    cs.out_carry.push_back(-1);
    Location pred;  // the predicate: stays a temp of the cond scope (no destination)
    pred.place = Place::temp;
    cs.out_dest.push_back(pred);
    auto t1 = run_body(cj, cs, region);
    auto t2 = run_body(bj, bs, region);
    body_temps = t1;
    body_temps.insert(body_temps.end(), t2.begin(), t2.end());
  } else if (form == BodyForm::cond) {
    const BodyLayout lay = body_layout(e);  // index | operands
    for (auto& br : cond_params(e).branches) {
      BodySpec s;
      for (size_t a = lay.num_index; a < e.inputs.size(); ++a)
        s.in_locs.push_back(view_of(e.inputs[a])), s.in_carry.push_back(-1);
      for (size_t o = 0; o < e.outputs.size(); ++o) s.out_dest.push_back(view_var(e.outputs[o])), s.out_carry.push_back(-1);
      auto t = run_body(*br->jaxpr, s, region);
      body_temps.insert(body_temps.end(), t.begin(), t.end());
    }
  } else {
    return region;
  }
  regions_.push_back({i, region});
  region_temps_.push_back(std::move(body_temps));
  return region;
}

// An equation's workspace: a region of the device arena reserved at equation i, like a body's.
void ScopePlanner::plan_scratch(size_t i, const Eqn& e) {
  const BufferRule* rule = buffer_rule(e);
  if (!rule || !rule->scratch || e.outputs.empty()) return;
  const ScratchNeed need = rule->scratch(e);
  if (need.slot_bytes <= 0 || need.slots <= 0) return;
  Scratch& s = plan_.scratch[e.outputs[0].id()];
  s.slot_bytes = (need.slot_bytes + 63) / 64 * 64;
  s.slots = need.slots;
  std::array<int64_t, 3> region{};
  region[size_t(MemoryKind::device)] = s.slot_bytes * s.slots;
  regions_.push_back({i, region});
  region_temps_.push_back({{&s.offset, int(MemoryKind::device)}});
}

void ScopePlanner::body_destinations(const BodySpec& spec) {
  ScopePlan& sp = plan_.scopes[&j_];
  std::unordered_map<uint64_t, int> outvar_uses;
  for (auto& o : j_.outvars)
    if (auto* v = std::get_if<Var>(&o)) ++outvar_uses[v->id()];
  std::vector<bool> direct(j_.outvars.size(), false);
  for (size_t o = 0; o < j_.outvars.size(); ++o) {
    if (spec.out_dest[o].place == Place::temp) continue;  // the while predicate: stays where it is
    const Var* v = std::get_if<Var>(&j_.outvars[o]);
    bool ok = v && parent_.count(v->id()) && outvar_uses[v->id()] == 1;
    if (ok) {
      uint64_t r = find(*v);
      Class& c = classes_.at(r);
      if (c.fixed && c.carry >= 0 && c.carry == spec.out_carry[o] && live_.at(*v).def >= 0) {
        direct[o] = true;  // computed in place of its own incoming carry: already there
        continue;
      }
      ok = !is_member_invar(r) && !c.fixed && c.kind == atom_aval(j_.outvars[o]).memory_kind;
      if (ok && spec.out_carry[o] >= 0) {
        // The incoming carry's buffer must be dead when the class's first value (the new value
        // or one computed in place before it) is written there.
        int64_t first = INT64_MAX;
        for (auto& m : c.members) first = std::min(first, live_.at(m).def);
        for (auto& [root, cc] : classes_)
          if (cc.carry == spec.out_carry[o] && class_last_use(root) >= first) ok = false;
      }
      if (ok) {
        c.fixed = true;
        c.fixed_loc = spec.out_dest[o];
        direct[o] = true;
      }
    }
  }
  // End copies; a copy reading a carry buffer that another copy overwrites goes through staging.
  std::unordered_map<int, bool> overwritten;
  for (size_t o = 0; o < j_.outvars.size(); ++o)
    if (!direct[o] && spec.out_carry[o] >= 0) {
      const Var* v = std::get_if<Var>(&j_.outvars[o]);
      bool identity = v && parent_.count(v->id()) && classes_.at(find(*v)).carry == spec.out_carry[o] &&
                      classes_.at(find(*v)).members.size() == 1;
      if (!identity) overwritten[spec.out_carry[o]] = true;
    }
  for (size_t o = 0; o < j_.outvars.size(); ++o) {
    if (direct[o] || spec.out_dest[o].place == Place::temp) continue;
    EndCopy c;
    c.outvar = o;
    if (auto* v = std::get_if<Var>(&j_.outvars[o]); v && parent_.count(v->id())) {
      int carry = classes_.at(find(*v)).carry;
      // A ys (no carry destination) reading a carry buffer is copied before any carry's copy
      // (jit/codegen/lower/program.cc end_copies), so only a carry reading another carry's buffer stages.
      c.staged = carry >= 0 && spec.out_carry[o] >= 0 && overwritten.count(carry) && carry != spec.out_carry[o];
    }
    if (c.staged) staging_.push_back({&atom_aval(j_.outvars[o]), sp.end_copies.size()});
    sp.end_copies.push_back(c);
  }
}

void ScopePlanner::top_outputs() {
  plan_.outputs.assign(j_.outvars.size(), OutputPlan{});
  for (size_t k = 0; k < j_.outvars.size(); ++k) {
    OutputPlan& op = plan_.outputs[k];
    if (auto* lit = std::get_if<Literal>(&j_.outvars[k])) {
      op.kind = OutputPlan::literal;
      op.value = lit->value;
      continue;
    }
    Class& c = cls(std::get<Var>(j_.outvars[k]));
    if (c.output >= 0) {
      op.kind = OutputPlan::same_as;
      op.index = c.output;
      continue;
    }
    c.output = int(k);
    if (c.param >= 0) {
      bool donated = plan_.donated[size_t(c.param)];
      op.kind = donated ? OutputPlan::donated_param : OutputPlan::param;
      op.index = c.param;
      if (donated) plan_.donation_used[size_t(c.param)] = true;
    }
  }
}

// A donated input dead before an output (of its size and kind) is produced holds that output.
void ScopePlanner::donate() {
  for (size_t k = 0; k < plan_.outputs.size(); ++k) {
    if (plan_.outputs[k].kind != OutputPlan::fresh) continue;
    Class& oc = cls(std::get<Var>(j_.outvars[k]));
    for (auto& [root, pc] : classes_) {
      if (pc.param < 0 || !plan_.donated[size_t(pc.param)] || plan_.donation_used[size_t(pc.param)]) continue;
      if (pc.output >= 0 || pc.bytes != oc.bytes || pc.kind != oc.kind || pc.last >= oc.first) continue;
      plan_.donation_used[size_t(pc.param)] = true;
      plan_.outputs[k].kind = OutputPlan::donated_param;
      plan_.outputs[k].index = pc.param;
      oc.param = pc.param;  // storage: the input's buffer
      break;
    }
  }
}

// Classes of this scope: its inputs (program inputs, or the storage the enclosing scope gives a
// body), and every equation's outputs, merged with operands they view or overwrite in place.
void ScopePlanner::build_classes(const BodySpec* body) {
  const bool top = body == nullptr;
  for (size_t a = 0; a < j_.invars.size(); ++a) {
    const Var& v = j_.invars[a];
    make_class(v);
    Class& c = classes_.at(v.id());
    if (top) {
      c.param = int(a);
      c.writable = plan_.donated[a];
    } else {
      c.fixed = true;
      c.fixed_loc = body->in_locs[a];
      c.carry = body->in_carry[a];
      c.writable = c.carry >= 0;
    }
  }
  const auto unallocated = carry_only_allocations(j_);
  for (size_t i = 0; i < j_.eqns.size(); ++i) {
    const Eqn& e = j_.eqns[i];
    for (auto& o : e.outputs) {
      make_class(o);
      if (auto it = unallocated.find(o.id()); it != unallocated.end() && it->second) {
        Class& c = classes_.at(o.id());
        c.undefined = true;
        c.bytes = 0;
        c.writable = false;
      }
    }
    const BufferRule* rule = buffer_rule(e);
    std::vector<int> views = rule && rule->views ? rule->views(e) : std::vector<int>{};
    for (size_t k = 0; k < e.outputs.size(); ++k) {
      if (k < views.size() && views[k] >= 0) {
        const Var* u = std::get_if<Var>(&e.inputs.at(size_t(views[k])));
        if (u && parent_.count(u->id()) && arena_size(u->aval()) == arena_size(e.outputs[k].aval())) {
          unite(*u, e.outputs[k]);
          continue;
        }
      }
      try_in_place(i, e, k, body);
    }
    plan_nested(i, e);
    plan_scratch(i, e);
  }
}

// Temporaries, nested regions and staging buffers placed per memory kind; returns the sizes.
std::array<int64_t, 3> ScopePlanner::place_temporaries(bool top) {
  std::array<int64_t, 3> size{};
  region_offsets_.assign(regions_.size(), {});
  staging_offsets_.assign(staging_.size(), 0);
  for (int kind = 0; kind < 3; ++kind) {
    std::vector<Interval> items;
    for (auto& [root, c] : classes_)
      if (!c.fixed && !c.undefined && c.param < 0 && !(top && c.output >= 0) && int(c.kind) == kind) {
        items.push_back({c.first, c.last, c.bytes, &c.offset});
        plan_.unplanned_bytes[size_t(kind)] += c.bytes;
      }
    for (size_t r = 0; r < regions_.size(); ++r)
      items.push_back({int64_t(regions_[r].first), int64_t(regions_[r].first), regions_[r].second[size_t(kind)],
                       &region_offsets_[r][size_t(kind)]});
    const int64_t n = int64_t(j_.eqns.size());
    for (size_t s = 0; s < staging_.size(); ++s)
      if (int(staging_[s].first->memory_kind) == kind)
        items.push_back({n, n, arena_size(*staging_[s].first), &staging_offsets_[s]});
    size[size_t(kind)] = place(items);
  }
  return size;
}

// Every member's location; the offsets placed here and below are handed up in `subtree`.
void ScopePlanner::record_locations(bool top, Shifts& subtree) {
  for (auto& [root, c] : classes_) {
    Location l;
    if (c.param >= 0) l.place = Place::param, l.index = c.param;
    else if (top && c.output >= 0) l.place = Place::output, l.index = c.output;
    else if (c.fixed) l = c.fixed_loc;
    else if (c.undefined) l.place = Place::undefined;
    else l.place = Place::temp, l.index = int(c.kind), l.offset = c.offset;
    for (auto& m : c.members) {
      if (m.aval().is_token()) continue;
      Location& where = plan_.where[m] = l;
      if (l.place == Place::temp && !c.fixed) subtree.push_back({&where.offset, where.index});
    }
  }
  // Nested regions move with this scope's placement of them.
  for (size_t r = 0; r < regions_.size(); ++r)
    for (auto& [off, kind] : region_temps_[r]) {
      *off += region_offsets_[r][size_t(kind)];
      subtree.push_back({off, kind});
    }
  if (!top) {
    ScopePlan& sp = plan_.scopes[&j_];
    for (size_t s = 0; s < staging_.size(); ++s) {
      EndCopy& c = sp.end_copies[staging_[s].second];
      c.staging_offset = staging_offsets_[s];
      subtree.push_back({&c.staging_offset, int(staging_[s].first->memory_kind)});
    }
  }
}

std::array<int64_t, 3> ScopePlanner::run(const BodySpec* body, Shifts& subtree) {
  const bool top = body == nullptr;
  build_classes(body);
  if (top) top_outputs();
  else body_destinations(*body);
  for (auto& [root, c] : classes_) {
    for (auto& m : c.members) {
      const LiveInterval& li = live_.at(m);
      c.first = std::min(c.first, li.def);
      c.last = std::max(c.last, li.last_use);
    }
    if (c.param >= 0) c.first = -1;
    if (top && c.output >= 0) c.last = int64_t(j_.eqns.size());
  }
  if (top) donate();
  std::array<int64_t, 3> size = place_temporaries(top);
  record_locations(top, subtree);
  return size;
}

}  // namespace

BufferPlan plan_buffers(const Jaxpr& program, const std::vector<bool>& donated) {
  BufferPlan plan;
  if (!donated.empty() && donated.size() != program.invars.size())
    throw ValueError("plan_buffers: " + std::to_string(donated.size()) + " donation flags for " +
                     std::to_string(program.invars.size()) + " inputs");
  plan.donated = donated.empty() ? std::vector<bool>(program.invars.size(), false) : donated;
  plan.donation_used.assign(program.invars.size(), false);
  ScopePlanner top(plan, program);
  Shifts temps;
  plan.arena_bytes = top.run(nullptr, temps);
  return plan;
}

}  // namespace minijax
