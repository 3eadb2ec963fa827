// minijax pass pack_dot_operands: transposes inserted before dot_generals whose operands a GEMM
// cannot read in place, with the dimension numbers rewritten to the packed order.
#include "jit/passes/pack_dot_operands.h"

#include <algorithm>
#include <unordered_map>

#include "core/bodies.h"
#include "core/lax.h"
#include "core/lax_params.h"
#include "core/primitive.h"
#include "core/views/array_ops.h"
#include "jit/passes/dot_layout.h"

namespace minijax {

namespace {

std::vector<int64_t> free_dims(size_t rank, const std::vector<int64_t>& batch, const std::vector<int64_t>& contract) {
  std::vector<int64_t> f;
  for (int64_t d = 0; d < int64_t(rank); ++d)
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contract.begin(), contract.end(), d) == contract.end())
      f.push_back(d);
  return f;
}

std::vector<int64_t> iota(int64_t from, size_t n) {
  std::vector<int64_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = from + int64_t(i);
  return v;
}

// Transposes `a` by perm into a new equation appended to `out`; returns the new value.
Var transpose(std::vector<Eqn>& out, const Atom& a, const std::vector<int64_t>& perm) {
  const ShapedArray& in = atom_aval(a);
  ShapedArray t = in;
  for (size_t i = 0; i < perm.size(); ++i) t.shape[i] = in.shape[size_t(perm[i])];
  Var v(t);
  Eqn e;
  e.primitive = &primitive("transpose");
  e.inputs = {a};
  e.outputs = {v};
  e.params = TransposeParams{perm}.to_params();
  out.push_back(std::move(e));
  return v;
}

// The permutation taking the product of the swapped operands ([batch, rhs-free, lhs-free]) back
// to the product's order ([batch, lhs-free, rhs-free]).
std::vector<int64_t> unswap_permutation(size_t nb, size_t nl, size_t nr) {
  std::vector<int64_t> perm = iota(0, nb), lhs_block = iota(int64_t(nb + nr), nl), rhs_block = iota(int64_t(nb), nr);
  perm.insert(perm.end(), lhs_block.begin(), lhs_block.end());
  perm.insert(perm.end(), rhs_block.begin(), rhs_block.end());
  return perm;
}

// An f32 product whose operands both lie transposed (op(A) = A^T, op(B) = B^T) is computed as
// transpose(B A): the swapped product is a GEMM without transposes, and the one transpose kernel
// moves the (smaller or equal) output instead. oneDNN's sgemm runs its TT case at 0.3-0.7x of its
// NN speed for [128,512]x[512,512] on 2 threads; NN plus the output's transpose ran at 1.1x
// (bench/README.md, "dot_general"). OpenBLAS (f64) packs both operands anyway: left alone.
bool swap_transposed_pair(std::vector<Eqn>& out, Eqn& e, const lax::DotDimensionNumbers& d) {
  const Shape& ls = atom_aval(e.inputs[0]).shape;
  const Shape& rs = atom_aval(e.inputs[1]).shape;
  auto g = gemm_layout(ls, rs, d);
  if (!g || !g->trans_a || !g->trans_b || e.outputs[0].aval().dtype != f32 || g->m == 1 || g->n == 1) return false;
  const lax::DotDimensionNumbers sw{d.rhs_contracting, d.lhs_contracting, d.rhs_batch, d.lhs_batch};
  auto gs = gemm_layout(rs, ls, sw);
  if (!gs || gs->trans_a || gs->trans_b) return false;
  const size_t nb = d.lhs_batch.size();
  const size_t nl = ls.size() - nb - d.lhs_contracting.size(), nr = rs.size() - nb - d.rhs_contracting.size();
  const Var result = e.outputs[0];
  const auto perm = unswap_permutation(nb, nl, nr);
  ShapedArray swapped = result.aval();
  for (size_t i = 0; i < perm.size(); ++i) swapped.shape[size_t(perm[i])] = result.aval().shape[i];
  Eqn s = e;
  std::swap(s.inputs[0], s.inputs[1]);
  DotGeneralParams sp = dot_general_params(s);
  sp.dimension_numbers = sw;
  s.params = sp.to_params();
  s.outputs = {Var(swapped)};
  const Var product = s.outputs[0];
  out.push_back(std::move(s));
  Eqn t;
  t.primitive = &primitive("transpose");
  t.inputs = {product};
  t.outputs = {result};
  t.params = TransposeParams{perm}.to_params();
  out.push_back(std::move(t));
  return true;
}

void pack(std::vector<Eqn>& out, Eqn e) {
  auto d = dot_general_params(e).dimension_numbers;
  const Shape& ls = atom_aval(e.inputs[0]).shape;
  const Shape& rs = atom_aval(e.inputs[1]).shape;
  if (swap_transposed_pair(out, e, d)) return;
  if (gemm_layout(ls, rs, d)) return out.push_back(std::move(e));
  const size_t nb = d.lhs_batch.size(), nk = d.lhs_contracting.size();
  auto lf = free_dims(ls.size(), d.lhs_batch, d.lhs_contracting);
  auto rf = free_dims(rs.size(), d.rhs_batch, d.rhs_contracting);
  lax::DotDimensionNumbers lp = d, rp = d;  // lhs packed / rhs packed
  lp.lhs_batch = iota(0, nb);
  lp.lhs_contracting = iota(int64_t(nb + lf.size()), nk);
  rp.rhs_batch = iota(0, nb);
  rp.rhs_contracting = iota(int64_t(nb), nk);
  auto shape_after = [](const Shape& s, const std::vector<int64_t>& perm) {
    Shape t(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) t[i] = s[size_t(perm[i])];
    return t;
  };
  std::vector<int64_t> lperm = d.lhs_batch, rperm = d.rhs_batch;
  lperm.insert(lperm.end(), lf.begin(), lf.end());
  lperm.insert(lperm.end(), d.lhs_contracting.begin(), d.lhs_contracting.end());
  rperm.insert(rperm.end(), d.rhs_contracting.begin(), d.rhs_contracting.end());
  rperm.insert(rperm.end(), rf.begin(), rf.end());
  const Shape lps = shape_after(ls, lperm), rps = shape_after(rs, rperm);
  lax::DotDimensionNumbers both = lp;
  both.rhs_batch = rp.rhs_batch;
  both.rhs_contracting = rp.rhs_contracting;
  bool pack_l = true, pack_r = true;
  lax::DotDimensionNumbers nd = both;
  if (gemm_layout(lps, rs, lp)) pack_r = false, nd = lp;
  else if (gemm_layout(ls, rps, rp)) pack_l = false, nd = rp;
  if (pack_l) e.inputs[0] = transpose(out, e.inputs[0], lperm);
  if (pack_r) e.inputs[1] = transpose(out, e.inputs[1], rperm);
  DotGeneralParams ep = dot_general_params(e);
  ep.dimension_numbers = nd;
  e.params = ep.to_params();
  out.push_back(std::move(e));
}

// transpose(dot_general(a, b)) whose permutation swaps the lhs-free and rhs-free blocks of the
// product is dot_general(b, a) with the dimension numbers swapped (the transposed product, which
// a GEMM computes with swapped flags). Applied when the transpose is the product's only use, so
// no product is computed twice and no transpose kernel is left (a weight gradient, which the
// transpose rule of dot_general produces as [out, in] then transposes, is written as [in, out]).
// Source: XLA's algebraic simplifier folds transposes into dots the same way.
Jaxpr fold_transposed_dots(const Jaxpr& j) {
  std::unordered_map<uint64_t, int> uses;
  for (auto& e : j.eqns)
    for (auto& a : e.inputs)
      if (auto* v = std::get_if<Var>(&a)) ++uses[v->id()];
  for (auto& a : j.outvars)
    if (auto* v = std::get_if<Var>(&a)) ++uses[v->id()];
  Jaxpr r = j;
  r.eqns.clear();
  std::unordered_map<uint64_t, size_t> dot_at;  // product var -> index in r.eqns
  for (const Eqn& e : j.eqns) {
    if (DotGeneralParams::is(e)) dot_at[e.outputs[0].id()] = r.eqns.size();
    if (TransposeParams::is(e)) {
      auto* v = std::get_if<Var>(&e.inputs[0]);
      auto it = v ? dot_at.find(v->id()) : dot_at.end();
      if (it != dot_at.end() && uses[v->id()] == 1) {
        Eqn& d = r.eqns[it->second];
        DotGeneralParams dp = dot_general_params(d);
        const auto dn = dp.dimension_numbers;
        const size_t nb = dn.lhs_batch.size();
        const size_t nl = atom_aval(d.inputs[0]).shape.size() - nb - dn.lhs_contracting.size();
        const size_t nr = atom_aval(d.inputs[1]).shape.size() - nb - dn.rhs_contracting.size();
        std::vector<int64_t> swap = iota(0, nb), rhs_block = iota(int64_t(nb + nl), nr), lhs_block = iota(int64_t(nb), nl);
        swap.insert(swap.end(), rhs_block.begin(), rhs_block.end());
        swap.insert(swap.end(), lhs_block.begin(), lhs_block.end());
        if (transpose_params(e).permutation == swap) {
          dp.dimension_numbers = {dn.rhs_contracting, dn.lhs_contracting, dn.rhs_batch, dn.lhs_batch};
          std::swap(d.inputs[0], d.inputs[1]);
          d.params = dp.to_params();
          d.outputs[0] = e.outputs[0];
          dot_at.erase(it);
          continue;
        }
      }
    }
    r.eqns.push_back(e);
  }
  return r;
}

// convert_element_type of `a` to `to` appended to `out`; returns the new value.
Var convert(std::vector<Eqn>& out, const Atom& a, DType to) {
  ShapedArray t = atom_aval(a);
  t.dtype = to;
  t.weak_type = false;
  Var v(t);
  Eqn e;
  e.primitive = &primitive("convert_element_type");
  e.inputs = {a};
  e.outputs = {v};
  e.params = ConvertElementTypeParams{to, false}.to_params();
  out.push_back(std::move(e));
  return v;
}

// A dot_general whose preferred_element_type differs from its operands' dtype, as XLA's
// OperandUpcaster: the operands converted to the accumulation dtype when it is wider
// (lax::detail::dot_accumulation_dtype), the product computed there, and converted to the
// output dtype after when that is narrower; the GEMM then reads and writes one dtype.
void pack_upcast(std::vector<Eqn>& out, Eqn e) {
  const DType in = atom_aval(e.inputs[0]).dtype, want = e.outputs[0].aval().dtype;
  const DType acc = lax::detail::dot_accumulation_dtype(in, want);
  if (acc != in)
    for (Atom& a : e.inputs) a = convert(out, a, acc);
  DotGeneralParams ep = dot_general_params(e);
  ep.preferred_element_type = acc;
  e.params = ep.to_params();
  const Var result = e.outputs[0];
  if (acc != want) {
    ShapedArray a = result.aval();
    a.dtype = acc;
    a.weak_type = false;
    e.outputs[0] = Var(a);
  }
  const Var product = e.outputs[0];
  pack(out, std::move(e));
  if (acc == want) return;
  Eqn c;
  c.primitive = &primitive("convert_element_type");
  c.inputs = {product};
  c.outputs = {result};
  c.params = ConvertElementTypeParams{want, result.aval().weak_type}.to_params();
  out.push_back(std::move(c));
}

}  // namespace

Jaxpr pack_dot_operands(const Jaxpr& j0) {
  const Jaxpr j = fold_transposed_dots(j0);
  Jaxpr r = j;
  r.eqns.clear();
  for (const Eqn& e0 : j.eqns) {
    Eqn e = e0;
    if (has_bodies(e.params)) e.params = map_bodies(e.params, pack_dot_operands);
    if (DotGeneralParams::is(e) && atom_aval(e.inputs[0]).dtype != e.outputs[0].aval().dtype)
      pack_upcast(r.eqns, std::move(e));
    else if (DotGeneralParams::is(e)) pack(r.eqns, std::move(e));
    else r.eqns.push_back(std::move(e));
  }
  return r;
}

}  // namespace minijax
