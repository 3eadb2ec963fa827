// minijax buffer rules: the table of views and in-place updates for the primitives that have them
// (reshape, squeeze, expand_dims, bitcast_convert_type, optimization_barrier, device_put,
// sharding_constraint, one-device collectives, dynamic_update_slice, ...) and the linear-algebra
// workspaces.
#include "memory/buffer_rules.h"

#include <array>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "core/bodies.h"
#include "core/linalg_kernels.h"
#include "core/primitive.h"
#include "core/views/collectives.h"
#include "core/views/control_flow.h"
#include "core/views/gather_scatter.h"
#include "core/views/linalg.h"

namespace minijax {

namespace {

std::map<std::string, BufferRule>& table() {
  static std::map<std::string, BufferRule> t;
  return t;
}

std::vector<int> none_in_place(const Eqn&, size_t) { return {}; }

// Output 0 is a view of input 0 (a row-major buffer reinterpreted).
BufferRule view_of_first() {
  return {[](const Eqn&) { return std::vector<int>{0}; }, none_in_place};
}

const bool registered = [] {
  for (const char* p : {"reshape", "squeeze", "expand_dims"}) register_buffer_rule(p, view_of_first());
  // optimization_barrier: output k is input k.
  register_buffer_rule("optimization_barrier",
                       {[](const Eqn& e) {
                          std::vector<int> v(e.outputs.size());
                          for (size_t k = 0; k < v.size(); ++k) v[k] = int(k);
                          return v;
                        },
                        none_in_place});
  // bitcast_convert_type: the same row-major bytes under another dtype (and shape, 4 <-> 8 bytes).
  register_buffer_rule("bitcast_convert_type", view_of_first());
  // copy_done returns the destination copy_start allocated (memory/split_copies.h); its
  // second operand, the source, is only kept alive until the copy completes.
  register_buffer_rule("copy_done", view_of_first());
  // copy_update_start writes its update into a slice of its first operand, in place (the result
  // is that buffer, complete once its copy_done has run).
  register_buffer_rule("copy_update_start",
                       {[](const Eqn& e) { return std::vector<int>(e.outputs.size(), -1); },
                        [](const Eqn&, size_t k) { return k == 0 ? std::vector<int>{0} : std::vector<int>{}; }});
  // device_put within one memory kind is the identity; across kinds it is a copy. On one device a
  // sharding_constraint is only its memory kind: the same rule.
  for (const char* p : {"device_put", "sharding_constraint"})
    register_buffer_rule(p, {[](const Eqn& e) {
                               std::vector<int> v(e.outputs.size(), -1);
                               for (size_t k = 0; k < v.size() && k < e.inputs.size(); ++k)
                                 if (atom_aval(e.inputs[k]).memory_kind == e.outputs[k].aval().memory_kind) v[k] = int(k);
                               return v;
                             },
                             none_in_place});
  // Collectives over a group of one device (axis_size 1, a program compiled for one device) return
  // their operand's bytes; collective_permute only when a pair sends rank 0 to itself (else zeros).
  auto one_device = [](const Eqn& e) { return collective_params(e).axis_size == 1; };
  for (const char* p : {"all_gather", "all_reduce", "reduce_scatter", "all_to_all"})
    register_buffer_rule(p, {[one_device](const Eqn& e) { return std::vector<int>{one_device(e) ? 0 : -1}; },
                             none_in_place});
  register_buffer_rule("collective_permute", {[one_device](const Eqn& e) {
                                                const auto st = collective_params(e).source_target_pairs;
                                                bool self = false;
                                                for (size_t i = 0; i + 1 < st.size(); i += 2)
                                                  self |= st[i] == 0 && st[i + 1] == 0;
                                                return std::vector<int>{one_device(e) && self ? 0 : -1};
                                              },
                                              none_in_place});
  const BufferRule update{[](const Eqn& e) { return std::vector<int>(e.outputs.size(), -1); },
                          [](const Eqn&, size_t k) { return k == 0 ? std::vector<int>{0} : std::vector<int>{}; }};
  register_buffer_rule("dynamic_update_slice", update);
  for (const char* p : scatter_primitive_names()) register_buffer_rule(p, update);
  // cholesky and triangular_solve replace a matrix (the operand, b) with its factor or solution,
  // in place when it dies there, as JAX's LAPACK calls alias it (operand_output_aliases); the
  // runtime (jit/runtime/linalg.h) copies only when the buffers differ.
  register_buffer_rule("cholesky", update);
  register_buffer_rule("triangular_solve", {update.views, [](const Eqn&, size_t k) {
                         return k == 0 ? std::vector<int>{1} : std::vector<int>{};
                       }});
  // lu, qr, eigh and svd call LAPACK with a workspace per task (core/linalg_kernels.h sizes it
  // with LAPACK's own queries); lu's factors and eigh's eigenvectors replace the operand in place.
  const auto matrix = [](const Eqn& e) {
    const ShapedArray& a = atom_aval(e.inputs.at(0));
    const int64_t m = a.shape[a.shape.size() - 2], n = a.shape.back();
    int64_t batch = 1;
    for (size_t i = 0; i + 2 < a.shape.size(); ++i) batch *= a.shape[i];
    return std::array<int64_t, 4>{int32_t(a.dtype), m, n, batch};
  };
  const auto slots = [](int64_t batch) { return linalg_kernels::workspace_slots(batch); };
  const auto in_place_0 = [](const Eqn&, size_t k) { return k == 0 ? std::vector<int>{0} : std::vector<int>{}; };
  const auto no_in_place = [](const Eqn&, size_t) { return std::vector<int>{}; };
  register_buffer_rule("lu", {update.views, in_place_0, [=](const Eqn& e) {
                         const auto [dt, m, n, batch] = matrix(e);
                         return ScratchNeed{linalg_kernels::lu_workspace_bytes(int32_t(dt), m, n), slots(batch)};
                       }});
  register_buffer_rule("qr", {update.views, no_in_place, [=](const Eqn& e) {
                         const auto [dt, m, n, batch] = matrix(e);
                         return ScratchNeed{
                             linalg_kernels::qr_workspace_bytes(int32_t(dt), m, n, qr_params(e).full_matrices),
                             slots(batch)};
                       }});
  register_buffer_rule("eigh", {update.views, in_place_0, [=](const Eqn& e) {
                         const auto [dt, m, n, batch] = matrix(e);
                         return ScratchNeed{linalg_kernels::eigh_workspace_bytes(int32_t(dt), n), slots(batch)};
                       }});
  register_buffer_rule("svd", {update.views, no_in_place, [=](const Eqn& e) {
                         const auto [dt, m, n, batch] = matrix(e);
                         const SvdParams sp = svd_params(e);
                         return ScratchNeed{linalg_kernels::svd_workspace_bytes(int32_t(dt), m, n, sp.full_matrices,
                                                                                sp.compute_uv),
                                            slots(batch)};
                       }});
  // A loop's carry buffers are its carry outputs' (memory/plan_buffers.h); an initial value that
  // dies at the loop is computed in place of its carry's buffer, so the loop copies nothing in.
  register_buffer_rule("scan", {[](const Eqn& e) { return std::vector<int>(e.outputs.size(), -1); },
                                [](const Eqn& e, size_t k) {
                                  const BodyLayout l = body_layout(e);  // consts | carry | xs
                                  return k < l.num_carry ? std::vector<int>{int(l.carry_begin() + k)}
                                                         : std::vector<int>{};
                                }});
  register_buffer_rule("while", {[](const Eqn& e) { return std::vector<int>(e.outputs.size(), -1); },
                                 [](const Eqn& e, size_t k) {
                                   // cond_consts | body_consts | carry
                                   return std::vector<int>{int(body_layout(e).carry_begin() + k)};
                                 }});
  register_buffer_rule("fusion",
                       {[](const Eqn& e) { return std::vector<int>(e.outputs.size(), -1); },
                        [](const Eqn& e, size_t k) {
                          std::vector<int> r;
                          const CallParams c = call_params(e);
                          if (c.kind != "loop") return r;
                          const Jaxpr& body = *c.jaxpr->jaxpr;
                          // Element i of the output overwrites element i of the operand only
                          // when both have one item size (an f64 result over a bool operand
                          // would clobber operand elements not yet read).
                          const size_t out_item = itemsize(e.outputs.at(k).aval().dtype);
                          for (size_t i = 0; i < e.inputs.size(); ++i)
                            if (itemsize(atom_aval(e.inputs[i]).dtype) == out_item && fusion_reads_elementwise(body, i))
                              r.push_back(int(i));
                          return r;
                        }});
  return true;
}();

}  // namespace

void register_buffer_rule(const std::string& primitive, BufferRule rule) { table()[primitive] = std::move(rule); }

const BufferRule* buffer_rule(const Eqn& eqn) {
  (void)registered;
  auto it = table().find(eqn.primitive->name);
  return it == table().end() ? nullptr : &it->second;
}

bool fusion_reads_elementwise(const Jaxpr& body, size_t i) {
  const Var& start = body.invars.at(i);
  const Shape& shape = start.aval().shape;
  std::unordered_set<uint64_t> tainted{start.id()};
  for (auto& e : body.eqns) {
    bool reads = false;
    for (auto& in : e.inputs)
      if (auto* v = std::get_if<Var>(&in); v && tainted.count(v->id())) reads = true;
    if (!reads) continue;
    if (e.primitive->op_class != OpClass::elementwise) return false;
    for (auto& o : e.outputs) {
      if (o.aval().shape != shape) return false;
      tainted.insert(o.id());
    }
  }
  return true;
}

}  // namespace minijax
