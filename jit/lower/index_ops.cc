// minijax elemental lowering of index maps: broadcast_in_dim and transpose read their operand at
// an index computed from the output index (lane patterns kept, so contiguous reads stay vector loads).
#include "core/errors.h"
#include "jit/lower/elementwise_util.h"

namespace minijax::lower {

namespace {

// out[i...] = x[j...] with j_k = i_{broadcast_dimensions[k]} (0 where x's dim k has size 1).
std::vector<EVal> broadcast_in_dim(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  const auto& bd = e.params.get_ints("broadcast_dimensions");
  const Shape& xs = atom_aval(e.inputs[0]).shape;
  std::vector<DimIdx> dims;
  for (size_t k = 0; k < bd.size(); ++k)
    dims.push_back(xs[k] == 1 ? FusionEmitter::affine(fe.b.i64(0)) : at.dims.at(size_t(bd[k])));
  return {fe.value1(e.inputs[0], fe.index(std::move(dims), at.lanes))};
}

// out[i_0, ..., i_{r-1}] = x[j] with j_{perm[k]} = i_k.
std::vector<EVal> transpose(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  const auto& perm = e.params.get_ints("permutation");
  std::vector<DimIdx> dims(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) dims[size_t(perm[k])] = at.dims.at(k);
  return {fe.value1(e.inputs[0], fe.index(std::move(dims), at.lanes))};
}

const RegisterElemental r_bcast("broadcast_in_dim", broadcast_in_dim);
const RegisterElemental r_transpose("transpose", transpose);

}  // namespace

}  // namespace minijax::lower
