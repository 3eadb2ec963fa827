// minijax lowering of the random-bit primitive threefry2x32: its elemental rule (the 20-round
// Threefry-2x32 block on u32 lanes) and the program rule for operands broadcast numpy-style.
#include "core/errors.h"
#include "core/fusion.h"
#include "core/views/control_flow.h"
#include "jit/codegen/lower/elementwise_util.h"
#include "jit/codegen/lower/program.h"

namespace minijax::lower {

using kir::Op;
using kir::Value;

namespace {

// Operand `a` of an elementwise equation at output index `at`, numpy-broadcast: rank 0 at the
// empty index, the output's shape at `at` itself, otherwise dims aligned at the end with size-1
// dims read at 0 (eager's broadcast_strides).
EVal broadcast_operand(FusionEmitter& fe, const Atom& a, const ElemIndex& at, const Shape& out) {
  const Shape& s = atom_aval(a).shape;
  if (s.empty()) return fe.value1(a, fe.scalar_for(at));
  if (s == out || fe.flat()) return fe.value1(a, at);
  std::vector<DimIdx> dims;
  const size_t off = out.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i)
    dims.push_back(s[i] == 1 ? FusionEmitter::affine(fe.b.i64(0)) : at.dims.at(off + i));
  return fe.value1(a, fe.index(std::move(dims), at.lanes));
}

// Threefry-2x32, 20 rounds, as eager's threefry_block (core/primitives/random_ops.cc; JAX's
// _threefry2x32_lowering, Random123's threefry2x32_R(20)): key schedule ks = (k0, k1, k0^k1^C),
// rotations {13,15,26,6} and {17,29,16,24} alternating, injections after every 4 rounds. u32 lanes
// wrap (i32 add is the same bits).
std::vector<EVal> threefry2x32(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  const Shape& out = e.outputs[0].aval().shape;
  std::vector<EVal> x;
  int L = 1;
  for (auto& in : e.inputs) {
    x.push_back(broadcast_operand(fe, in, at, out));
    L = std::max(L, x.back().lanes);
  }
  for (auto& v : x) v = fe.widen(v, L);
  kir::Builder& b = fe.b;
  auto c = [&](uint32_t k) { return splat_i32(fe, int32_t(k), L); };
  auto rotl = [&](Value v, uint32_t r) {
    return b.binop(Op::Or, b.binop(Op::Shl, v, c(r)), b.binop(Op::LShr, v, c(32u - r)));
  };
  static constexpr uint32_t kRot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const Value ks[3] = {x[0].v, x[1].v, b.binop(Op::Xor, b.binop(Op::Xor, x[0].v, x[1].v), c(0x1BD11BDAu))};
  Value x0 = b.add(x[2].v, ks[0]), x1 = b.add(x[3].v, ks[1]);
  for (uint32_t g = 0; g < 5; ++g) {
    for (uint32_t r : kRot[g % 2]) {
      x0 = b.add(x0, x1);
      x1 = rotl(x1, r);
      x1 = b.binop(Op::Xor, x1, x0);
    }
    x0 = b.add(x0, ks[(g + 1) % 3]);
    x1 = b.add(x1, b.add(ks[(g + 2) % 3], c(g + 1)));
  }
  return {EVal{x0, DType::u32, L}, EVal{x1, DType::u32, L}};
}

const RegisterElemental r_threefry("threefry2x32", threefry2x32);

// threefry2x32 left unfused (operands broadcast numpy-style; docs/compiler.md, "Which primitives
// are fused"): lowered as a one-equation loop fusion whose body is the equation itself, the
// elemental rule reading each operand through its broadcast index.
void lower_unfused_threefry(ProgramEmitter& pe, const Eqn& e) {
  auto body = std::make_shared<Jaxpr>();
  Eqn inner = e;
  inner.inputs.clear();
  std::vector<Atom> operands;
  for (auto& in : e.inputs) {
    if (auto* l = std::get_if<Literal>(&in)) {
      inner.inputs.push_back(*l);
      continue;
    }
    Var v(atom_aval(in));
    body->invars.push_back(v);
    inner.inputs.push_back(v);
    operands.push_back(in);
  }
  inner.outputs.clear();
  for (auto& o : e.outputs) inner.outputs.push_back(Var(o.aval()));
  for (auto& o : inner.outputs) body->outvars.push_back(o);
  body->eqns.push_back(inner);
  Eqn f;
  f.primitive = &fusion_p();
  f.inputs = operands;
  f.outputs = e.outputs;
  CallParams fp;
  fp.body_key = fusion_p().body_params.at(0);
  fp.jaxpr = std::make_shared<const ClosedJaxpr>(ClosedJaxpr{body, {}});
  fp.kind = "loop";
  fp.name = "threefry";
  f.params = fp.to_params();
  pe.call_fusion(f);
}

const RegisterProgramRule reg_threefry("threefry2x32", "fused loop", lower_unfused_threefry);

}  // namespace

}  // namespace minijax::lower
