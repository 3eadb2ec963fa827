// minijax reference SPMD executor: lockstep interpretation of one program over a mesh, with the
// collectives evaluated across device groups and live-bytes / traffic statistics.
#include "jit/reference/reference_executor.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "core/collective_params.h"
#include "core/collectives.h"
#include "core/errors.h"
#include "core/lax.h"
#include "core/lax_params.h"
#include "core/primitive.h"
#include "core/trace.h"
#include "core/views/collectives.h"
#include "core/views/control_flow.h"
#include "sharding/collective_groups.h"
#include "sharding/plan_reshard.h"

namespace minijax {
namespace {

constexpr size_t kNever = std::numeric_limits<size_t>::max();
using Env = std::unordered_map<Var, Array, VarHash>;

// Block `b` of `n` equal blocks of x along dim d.
Array block(const Array& x, int64_t d, int64_t b, int64_t n) {
  std::vector<int64_t> lo(size_t(x.ndim()), 0), hi = x.shape();
  int64_t s = x.shape()[size_t(d)] / n;
  lo[size_t(d)] = b * s;
  hi[size_t(d)] = (b + 1) * s;
  return lax::slice(x, lo, hi);
}

int64_t bytes_of(const Array& a) { return a.aval().nbytes(); }

class Executor {
 public:
  Executor(const Mesh& mesh, SpmdStats* stats) : mesh_(mesh), n_(mesh.num_devices()), stats_(stats) {
    live_.assign(n_, 0);
    peak_.assign(n_, 0);
  }

  void count_args(const std::vector<std::vector<Array>>& args) {
    for (size_t d = 0; d < n_; ++d)
      for (auto& a : args[d]) live_[d] += bytes_of(a);
    bump();
  }

  // Runs j on every device; `ins[d]` = values of constvars then invars; `outer` is the index of
  // the top-level equation a nested body belongs to (for the stats). Values produced here are
  // counted while alive; at the end the outputs this run produced are uncounted again (the
  // caller counts its equation's outputs itself).
  std::vector<std::vector<Array>> run(const Jaxpr& j, const std::vector<std::vector<Array>>& ins, bool top,
                                      size_t outer = kNever) {
    std::unordered_map<Var, size_t, VarHash> last;
    for (size_t i = 0; i < j.eqns.size(); ++i)
      for (auto& a : j.eqns[i].inputs)
        if (auto* v = std::get_if<Var>(&a)) last[*v] = i;
    for (auto& a : j.outvars)
      if (auto* v = std::get_if<Var>(&a)) last[*v] = kNever;

    std::vector<Env> env(n_);
    std::unordered_map<Var, bool, VarHash> owned;  // produced here (or a top-level argument)
    std::vector<Var> inv = j.constvars;
    inv.insert(inv.end(), j.invars.begin(), j.invars.end());
    for (size_t d = 0; d < n_; ++d)
      for (size_t k = 0; k < inv.size(); ++k) env[d][inv[k]] = ins[d][k];
    for (auto& v : inv) {
      if (top) owned[v] = true;
      if (!last.count(v)) release(env, v, top);
    }

    for (size_t i = 0; i < j.eqns.size(); ++i) {
      const Eqn& e = j.eqns[i];
      std::vector<std::vector<Array>> args(n_);
      for (size_t d = 0; d < n_; ++d)
        for (auto& a : e.inputs)
          args[d].push_back(std::holds_alternative<Literal>(a) ? std::get<Literal>(a).value : env[d].at(std::get<Var>(a)));
      std::vector<std::vector<Array>> outs = eval_eqn(e, args, top ? i : outer);
      for (size_t d = 0; d < n_; ++d)
        for (size_t k = 0; k < e.outputs.size(); ++k) {
          env[d][e.outputs[k]] = outs[d][k];
          live_[d] += bytes_of(outs[d][k]);
        }
      bump();
      for (auto& v : e.outputs) owned[v] = true;
      for (auto& a : e.inputs)
        if (auto* v = std::get_if<Var>(&a); v && last.count(*v) && last[*v] == i && env[0].count(*v))
          release(env, *v, owned.count(*v) != 0);
      for (auto& v : e.outputs)
        if (!last.count(v)) release(env, v, true);
    }

    std::vector<std::vector<Array>> res(n_);
    for (size_t d = 0; d < n_; ++d)
      for (auto& a : j.outvars)
        res[d].push_back(std::holds_alternative<Literal>(a) ? std::get<Literal>(a).value : env[d].at(std::get<Var>(a)));
    if (!top) {
      std::vector<Var> held;
      for (auto& kv : env[0])
        if (owned.count(kv.first)) held.push_back(kv.first);
      for (auto& v : held) release(env, v, true);
    }
    return res;
  }

  std::vector<int64_t> peak() const { return peak_; }

 private:
  void bump() {
    for (size_t d = 0; d < n_; ++d) peak_[d] = std::max(peak_[d], live_[d]);
  }

  void release(std::vector<Env>& env, const Var& v, bool counted) {
    for (size_t d = 0; d < n_; ++d) {
      auto it = env[d].find(v);
      if (it == env[d].end()) continue;
      if (counted) live_[d] -= bytes_of(it->second);
      env[d].erase(it);
    }
  }

  std::vector<std::vector<Array>> eval_eqn(const Eqn& e, const std::vector<std::vector<Array>>& args, size_t idx) {
    if (CollectiveParams::is(e)) return collective(e, args, idx);
    // A plain call's body runs per device (a fusion, the compiler's kernel, is bound whole).
    if (CallParams::is(e) && !is_fusion(*e.primitive))
      return call(*call_params(e).jaxpr, args, 0, args.empty() ? 0 : args[0].size(), idx);
    switch (e.primitive->body_form) {
      case BodyForm::scan: return scan(e, args, idx);
      case BodyForm::while_loop: return while_loop(e, args, idx);
      case BodyForm::cond: return cond(e, args, idx);
      default: break;
    }
    std::vector<std::vector<Array>> outs(n_);
    // A host callback (the "debug" effect: debug::print) is called by the mesh's first device
    // alone, with its replicated operands, as execute_spmd calls it.
    if (e.effects.count("debug")) {
      if (n_ > 0) outs[0] = minijax::bind(*e.primitive, args[0], e.params);
      return outs;
    }
    for (size_t d = 0; d < n_; ++d) outs[d] = minijax::bind(*e.primitive, args[d], e.params);
    return outs;
  }

  // Runs `body` in lockstep on operands [from, to) of every device (its consts first).
  std::vector<std::vector<Array>> call(const ClosedJaxpr& body, const std::vector<std::vector<Array>>& args,
                                       size_t from, size_t to, size_t idx) {
    std::vector<std::vector<Array>> ins(n_);
    for (size_t d = 0; d < n_; ++d) {
      ins[d] = body.consts;
      ins[d].insert(ins[d].end(), args[d].begin() + std::ptrdiff_t(from), args[d].begin() + std::ptrdiff_t(to));
    }
    return run(*body.jaxpr, ins, false, idx);
  }

  // The one value every device holds for a scalar (a cond index or a while predicate), as i32.
  // Lockstep needs all devices to agree (the partitioner keeps scalars replicated).
  int32_t agreed_scalar(const std::vector<Array>& per_device, const std::string& what) {
    int32_t v = 0;
    for (size_t d = 0; d < n_; ++d) {
      int32_t x = lax::convert_element_type(per_device[d], DType::i32).data<int32_t>()[0];
      if (d == 0) v = x;
      else if (x != v)
        throw ValueError("run_spmd: the " + what + " differs across devices (" + std::to_string(v) + " on device " +
                         std::to_string(mesh_.device_ids[0]) + ", " + std::to_string(x) + " on device " +
                         std::to_string(mesh_.device_ids[d]) + "); bodies run in lockstep, so it must be replicated");
    }
    return v;
  }

  void add_live(const std::vector<std::vector<Array>>& vals, int64_t sign) {
    for (size_t d = 0; d < n_; ++d)
      for (auto& a : vals[d]) live_[d] += sign * bytes_of(a);
    bump();
  }

  // scan (layout: consts, carry, xs; core/control_flow/scan.cc) with the body run in lockstep
  // each iteration. Counted while the loop runs: the current x slices, the carries it produced
  // and the ys stacked so far.
  std::vector<std::vector<Array>> scan(const Eqn& e, const std::vector<std::vector<Array>>& args, size_t idx) {
    const ScanParams sp = scan_params(e);
    const ClosedJaxpr& body = *sp.jaxpr;
    const size_t nc = size_t(sp.num_consts), ncar = size_t(sp.num_carry);
    const int64_t length = sp.length;
    const bool reverse = sp.reverse;
    const auto& invars = body.jaxpr->invars;
    const size_t nx = args.empty() ? 0 : args[0].size() - nc - ncar;
    const size_t ny = e.outputs.size() - ncar;
    std::vector<std::vector<Array>> carry(n_), produced(n_);
    std::vector<std::vector<std::vector<Array>>> ys(n_, std::vector<std::vector<Array>>(ny, std::vector<Array>(size_t(length))));
    for (size_t d = 0; d < n_; ++d) carry[d].assign(args[d].begin() + std::ptrdiff_t(nc), args[d].begin() + std::ptrdiff_t(nc + ncar));
    for (int64_t t = 0; t < length; ++t) {
      const int64_t i = reverse ? length - 1 - t : t;
      std::vector<std::vector<Array>> ins(n_), xs(n_);
      for (size_t d = 0; d < n_; ++d) {
        ins[d] = body.consts;
        ins[d].insert(ins[d].end(), args[d].begin(), args[d].begin() + std::ptrdiff_t(nc));
        ins[d].insert(ins[d].end(), carry[d].begin(), carry[d].end());
        for (size_t k = 0; k < nx; ++k) {
          const Array& x = args[d][nc + ncar + k];
          std::vector<int64_t> lo(size_t(x.ndim()), 0), hi = x.shape();
          lo[0] = i;
          hi[0] = i + 1;
          xs[d].push_back(lax::reshape(lax::slice(x, lo, hi), invars[nc + ncar + k].aval().shape));
        }
        ins[d].insert(ins[d].end(), xs[d].begin(), xs[d].end());
      }
      add_live(xs, 1);
      std::vector<std::vector<Array>> outs = run(*body.jaxpr, ins, false, idx);
      add_live(xs, -1);
      add_live(produced, -1);
      for (size_t d = 0; d < n_; ++d) {
        carry[d].assign(outs[d].begin(), outs[d].begin() + std::ptrdiff_t(ncar));
        produced[d] = carry[d];
        for (size_t k = 0; k < ny; ++k) {
          ys[d][k][size_t(i)] = outs[d][ncar + k];
          live_[d] += bytes_of(outs[d][ncar + k]);
        }
      }
      add_live(produced, 1);
    }
    add_live(produced, -1);
    std::vector<std::vector<Array>> res(n_);
    for (size_t d = 0; d < n_; ++d) {
      res[d] = carry[d];
      for (size_t k = 0; k < ny; ++k) {
        const ShapedArray& oaval = e.outputs[ncar + k].aval();
        if (length == 0) {
          res[d].push_back(lax::zeros_like_aval(oaval));
          continue;
        }
        std::vector<Array> rows;
        for (auto& y : ys[d][k]) {
          live_[d] -= bytes_of(y);
          Shape s = y.shape();
          s.insert(s.begin(), 1);
          rows.push_back(lax::reshape(y, s));
        }
        res[d].push_back(lax::concatenate(rows, 0));
      }
    }
    return res;
  }

  // while (operands: cond consts, body consts, carry): the predicate and the body run in
  // lockstep; the predicate must agree across devices.
  std::vector<std::vector<Array>> while_loop(const Eqn& e, const std::vector<std::vector<Array>>& args,
                                             size_t idx) {
    const WhileParams wp = while_params(e);
    const ClosedJaxpr& cj = *wp.cond_jaxpr;
    const ClosedJaxpr& bj = *wp.body_jaxpr;
    const size_t cn = size_t(wp.cond_nconsts), bn = size_t(wp.body_nconsts);
    std::vector<std::vector<Array>> carry(n_);
    for (size_t d = 0; d < n_; ++d) carry[d].assign(args[d].begin() + std::ptrdiff_t(cn + bn), args[d].end());
    bool produced = false;
    for (;;) {
      std::vector<std::vector<Array>> cin(n_), bin(n_);
      for (size_t d = 0; d < n_; ++d) {
        cin[d].assign(args[d].begin(), args[d].begin() + std::ptrdiff_t(cn));
        cin[d].insert(cin[d].end(), carry[d].begin(), carry[d].end());
        bin[d].assign(args[d].begin() + std::ptrdiff_t(cn), args[d].begin() + std::ptrdiff_t(cn + bn));
        bin[d].insert(bin[d].end(), carry[d].begin(), carry[d].end());
      }
      auto pred = call(cj, cin, 0, cin.empty() ? 0 : cin[0].size(), idx);
      std::vector<Array> p(n_);
      for (size_t d = 0; d < n_; ++d) p[d] = pred[d][0];
      if (!agreed_scalar(p, "while predicate")) break;
      auto next = call(bj, bin, 0, bin.empty() ? 0 : bin[0].size(), idx);
      if (produced) add_live(carry, -1);
      carry = next;
      add_live(carry, 1);
      produced = true;
    }
    if (produced) add_live(carry, -1);
    return carry;
  }

  // cond (operands: index, branch operands): the selected branch (index clamped as the eager
  // cond does) runs in lockstep; the index must agree across devices.
  std::vector<std::vector<Array>> cond(const Eqn& e, const std::vector<std::vector<Array>>& args, size_t idx) {
    const std::vector<ClosedJaxprPtr> branches = cond_params(e).branches;
    std::vector<Array> index(n_);
    for (size_t d = 0; d < n_; ++d) index[d] = args[d][0];
    int64_t b = std::clamp<int64_t>(agreed_scalar(index, "cond index"), 0, int64_t(branches.size()) - 1);
    return call(*branches[size_t(b)], args, 1, args.empty() ? 1 : args[0].size(), idx);
  }

  std::vector<std::vector<Array>> collective(const Eqn& e, const std::vector<std::vector<Array>>& args, size_t idx) {
    using Kind = CollectiveParams::Kind;
    const std::string& name = e.primitive->name;
    const CollectiveParams p = collective_params(e);
    CollectiveGroups g = collective_groups(mesh_, p.axis_name);
    if (p.moves_data() && p.axis_size != g.size)
      throw ShardingError(name + ": axis_size=" + std::to_string(p.axis_size) + " but the axes " +
                          param_to_string(axis_name_param(p.axis_name)) + " of " + mesh_.str() + " hold " +
                          std::to_string(g.size) + " devices");
    const int64_t n = g.size;
    std::vector<std::vector<Array>> outs(n_);
    CollectiveStats cs{idx, name, std::vector<int64_t>(n_, 0), std::vector<int64_t>(n_, 0), p.axis_name};
    const ShapedArray& oaval = e.outputs[0].aval();
    for (auto& m : g.members) {
      std::vector<Array> x;
      for (size_t pos : m) x.push_back(args[pos].empty() ? Array() : args[pos][0]);
      std::vector<Array> y(static_cast<size_t>(n));
      if (p.kind == Kind::axis_index) {
        for (int64_t r = 0; r < n; ++r) {
          y[size_t(r)] = Array::allocate(oaval);
          y[size_t(r)].mutable_data<int32_t>()[0] = int32_t(r);
        }
      } else if (p.kind == Kind::all_gather) {
        int64_t d = p.gather_dimension;
        std::vector<Array> parts = x;
        if (!p.tiled)
          for (auto& a : parts) {
            Shape s = a.shape();
            s.insert(s.begin() + d, 1);
            a = lax::reshape(a, s);
          }
        Array cat = lax::concatenate(parts, d);
        for (int64_t r = 0; r < n; ++r) {
          y[size_t(r)] = cat;
          cs.bytes_sent[m[size_t(r)]] = cs.bytes_received[m[size_t(r)]] = (n - 1) * bytes_of(x[0]);
        }
      } else if (p.kind == Kind::all_reduce || p.kind == Kind::reduce_scatter) {
        const std::string red = p.kind == Kind::all_reduce ? p.reduction : "sum";
        Array acc = x[0];
        for (int64_t r = 1; r < n; ++r)
          acc = red == "sum"   ? lax::add(acc, x[size_t(r)])
                : red == "max" ? lax::max(acc, x[size_t(r)])
                : red == "min" ? lax::min(acc, x[size_t(r)])
                : red == "and" ? lax::and_(acc, x[size_t(r)])
                : red == "or"  ? lax::or_(acc, x[size_t(r)])
                               : minijax::bind1(primitive("xor"), {acc, x[size_t(r)]});
        acc = lax::convert_element_type(acc, oaval.dtype);
        for (int64_t r = 0; r < n; ++r) {
          size_t pos = m[size_t(r)];
          if (p.kind == Kind::all_reduce) {
            // Two phases (reduce_scatter of the pieces, all_gather of the reduced pieces), the
            // model plan_reshard's all_reduce step uses: (n-1)·piece_r + (E - piece_r) each way.
            y[size_t(r)] = acc;
            const auto pieces = all_reduce_pieces(x[0].shape(), n);
            const int64_t item = int64_t(itemsize(x[0].dtype())), e = x[0].aval().size();
            const int64_t mine = pieces[size_t(r)];
            const int64_t moved = x[0].ndim() == 0 ? (n - 1) * e : (n - 1) * mine + (e - mine);
            cs.bytes_sent[pos] = cs.bytes_received[pos] = moved * item;
          } else {
            y[size_t(r)] = block(acc, p.scatter_dimension, r, n);
            cs.bytes_sent[pos] = cs.bytes_received[pos] = (n - 1) * (bytes_of(x[0]) / n);
          }
        }
      } else if (p.kind == Kind::all_to_all) {
        int64_t sd = p.split_dimension, cd = p.concat_dimension;
        for (int64_t r = 0; r < n; ++r) {
          std::vector<Array> parts;
          for (int64_t s = 0; s < n; ++s) parts.push_back(block(x[size_t(s)], sd, r, n));
          y[size_t(r)] = lax::concatenate(parts, cd);
          cs.bytes_sent[m[size_t(r)]] = cs.bytes_received[m[size_t(r)]] = (n - 1) * (bytes_of(x[0]) / n);
        }
      } else if (p.kind == Kind::collective_permute) {
        const auto& st = p.source_target_pairs;
        for (size_t k = 0; k < st.size(); k += 2) {
          y[size_t(st[k + 1])] = x[size_t(st[k])];
          if (st[k] != st[k + 1]) {
            cs.bytes_sent[m[size_t(st[k])]] += bytes_of(x[0]);
            cs.bytes_received[m[size_t(st[k + 1])]] += bytes_of(x[0]);
          }
        }
        for (auto& v : y)
          if (!v.defined()) v = lax::zeros_like_aval(oaval);
      } else {
        ragged(args, m, y, cs);
      }
      for (int64_t r = 0; r < n; ++r) outs[m[size_t(r)]] = {y[size_t(r)]};
    }
    if (stats_ && p.moves_data()) stats_->collectives.push_back(std::move(cs));
    return outs;
  }

  // XLA RaggedAllToAll on one group: sender i's rows [in_off_i[j], +send_i[j]) land in receiver
  // j's output at rows out_off_i[j]; receiver j expects recv_j[i] == send_i[j] rows from i.
  void ragged(const std::vector<std::vector<Array>>& args, const std::vector<size_t>& m, std::vector<Array>& y,
              CollectiveStats& cs) {
    const size_t n = m.size();
    auto ints = [&](size_t rank, size_t k) { return args[m[rank]][k].data<int32_t>(); };
    const Array& out0 = args[m[0]][1];
    const int64_t row_bytes = out0.ndim() ? int64_t(itemsize(out0.dtype())) *
                                                shape_size(Shape(out0.shape().begin() + 1, out0.shape().end()))
                                          : 0;
    for (size_t j = 0; j < n; ++j) {
      const Array& base = args[m[j]][1];
      Array o = Array::allocate(base.aval().strip_weak());
      if (base.aval().nbytes() > 0) std::memcpy(const_cast<void*>(o.raw_data()), base.raw_data(), size_t(base.aval().nbytes()));
      for (size_t i = 0; i < n; ++i) {
        const Array& in = args[m[i]][0];
        int64_t rows = ints(i, 3)[j], src = ints(i, 2)[j], dst = ints(i, 4)[j], expect = ints(j, 5)[i];
        if (rows != expect)
          throw ValueError("ragged_all_to_all: rank " + std::to_string(i) + " sends " + std::to_string(rows) +
                           " rows to rank " + std::to_string(j) + ", whose recv_sizes expects " + std::to_string(expect));
        if (rows < 0 || src < 0 || dst < 0 || src + rows > in.shape()[0] || dst + rows > base.shape()[0])
          throw ValueError("ragged_all_to_all: rank " + std::to_string(i) + " -> rank " + std::to_string(j) + ": rows [" +
                           std::to_string(src) + ", " + std::to_string(src + rows) + ") of input " + in.aval().str() +
                           " to rows [" + std::to_string(dst) + ", " + std::to_string(dst + rows) + ") of output " +
                           base.aval().str() + " fall outside the buffers");
        if (rows > 0)
          std::memcpy(static_cast<char*>(const_cast<void*>(o.raw_data())) + dst * row_bytes,
                      static_cast<const char*>(in.raw_data()) + src * row_bytes, size_t(rows * row_bytes));
        if (i != j) {
          cs.bytes_sent[m[i]] += rows * row_bytes;
          cs.bytes_received[m[j]] += rows * row_bytes;
        }
      }
      y[j] = o;
    }
  }

  const Mesh& mesh_;
  size_t n_;
  SpmdStats* stats_;
  std::vector<int64_t> live_, peak_;
};

}  // namespace

std::vector<std::vector<Array>> run_spmd(const ClosedJaxpr& program, const Mesh& mesh,
                                         const std::vector<std::vector<Array>>& per_device_args, SpmdStats* stats) {
  const Jaxpr& j = *program.jaxpr;
  if (program.consts.size() != j.constvars.size())
    throw ValueError("run_spmd: the program has " + std::to_string(j.constvars.size()) + " constvars but " +
                     std::to_string(program.consts.size()) + " consts");
  if (per_device_args.size() != mesh.num_devices())
    throw ValueError("run_spmd: " + mesh.str() + " has " + std::to_string(mesh.num_devices()) +
                     " devices but arguments were given for " + std::to_string(per_device_args.size()));
  std::vector<std::vector<Array>> ins(mesh.num_devices());
  for (size_t d = 0; d < mesh.num_devices(); ++d) {
    const auto& a = per_device_args[d];
    if (a.size() != j.invars.size())
      throw ValueError("run_spmd: the program takes " + std::to_string(j.invars.size()) + " arguments, device " +
                       std::to_string(mesh.device_ids[d]) + " got " + std::to_string(a.size()));
    for (size_t k = 0; k < a.size(); ++k)
      if (!a[k].defined() || a[k].shape() != j.invars[k].aval().shape || a[k].dtype() != j.invars[k].aval().dtype)
        throw ValueError("run_spmd: argument " + std::to_string(k) + " of device " + std::to_string(mesh.device_ids[d]) +
                         " is " + (a[k].defined() ? a[k].aval().str() : std::string("undefined")) +
                         ", the program expects the local shard " + j.invars[k].aval().str());
    ins[d] = program.consts;
    ins[d].insert(ins[d].end(), a.begin(), a.end());
  }
  Executor ex(mesh, stats);
  if (stats) stats->collectives.clear();
  ex.count_args(ins);
  auto out = ex.run(j, ins, true);
  if (stats) stats->peak_live_bytes = ex.peak();
  return out;
}

std::vector<std::vector<Array>> run_spmd(const Jaxpr& program, const Mesh& mesh,
                                         const std::vector<std::vector<Array>>& per_device_args, SpmdStats* stats) {
  if (!program.constvars.empty())
    throw ValueError("run_spmd: the program has " + std::to_string(program.constvars.size()) +
                     " constvars; pass the ClosedJaxpr so their values are known");
  ClosedJaxpr c{std::make_shared<const Jaxpr>(program), {}};
  return run_spmd(c, mesh, per_device_args, stats);
}

}  // namespace minijax
