// minijax lowering of fusion bodies: element values, indices and the elemental rule table that
// turns each fusible equation into KIR (jit/codegen/kir.h), keyed by primitive (XLA's elemental emitter).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/jaxpr.h"
#include "core/primitive.h"
#include "jit/codegen/kir.h"

namespace minijax::lower {

/// One element (lanes == 1) or `lanes` consecutive elements of an array, in its compute
/// representation: f32 and bf16 as f32 (bf16 values are kept rounded to bf16 after every
/// operation, as eager computes them), f64 as f64, i32 and u32 as i32 (the dtype says which
/// operations apply), bool as i1. A value that is the same in every lane may stay scalar
/// (lanes == 1) even at a vector index; consumers widen it where needed.
struct EVal {
  kir::Value v;
  DType dtype = DType::f32;
  int lanes = 1;
};

/// The index of one array dimension: `vec` (an <lanes x i64> vector) when valid, otherwise
/// base + coef * lane for lane = 0..lanes-1 (coef 0: the same index in every lane).
struct DimIdx {
  kir::Value base;
  int64_t coef = 0;
  kir::Value vec;
  bool is_affine() const { return !vec.valid(); }
};

/// A multi-dimensional index (one DimIdx per dimension, major first) of `lanes` elements.
/// `id` identifies it for memoization: rules that read an operand at the same index pass the
/// same ElemIndex on, so a value shared by several consumers is computed once.
struct ElemIndex {
  std::vector<DimIdx> dims;
  int lanes = 1;
  uint64_t id = 0;
};

class FusionEmitter;

/// The lowering of a fusible primitive inside a fusion kernel: the values of the equation's
/// outputs at index `at` (an index of the outputs' shape). Operand values come from
/// FusionEmitter::value, at `at` (elementwise) or at a computed index (index maps).
using ElementalRule =
    std::function<std::vector<EVal>(FusionEmitter& fe, const Eqn& eqn, const ElemIndex& at)>;

/// The elemental rules, keyed by primitive name.
std::map<std::string, ElementalRule>& elemental_rules();
/// Registers an elemental rule from a static initializer.
struct RegisterElemental {
  RegisterElemental(const std::string& prim, ElementalRule rule);
};

/// Emits the body of one fusion kernel: how rules obtain operand values and build indices.
class FusionEmitter {
 public:
  /// `param_ptrs`: the buffer address of each body invar, in order.
  FusionEmitter(kir::Builder& b, const Jaxpr& body, std::vector<kir::Value> param_ptrs);

  kir::Builder& b;
  const Jaxpr& body;

  /// The values of atom `a` (a body variable or a literal) at `at` (an index of a's shape; an
  /// empty index for rank 0). Body inputs are loaded from their buffers (contiguous vector load,
  /// scalar load and splat, or gather, from the index's lane pattern); other variables are
  /// computed by their equation's elemental rule, memoized per (variable, index id).
  std::vector<EVal> value(const Atom& a, const ElemIndex& at);
  EVal value1(const Atom& a, const ElemIndex& at) { return value(a, at).at(0); }
  /// Binds variable v at index `at` to precomputed values (reduction results, for the epilogue).
  void bind(const Var& v, const ElemIndex& at, std::vector<EVal> vals);
  /// Forgets memoized values (entering a new block: values of the old one are out of scope).
  void clear_memo();
  /// Computes, once at the current position (the kernel's entry, before any loop), every rank-0
  /// value of the body that does not depend on a reduction result (bias corrections, scalar
  /// parameters): later reads of them use these values instead of recomputing them per element.
  void hoist_scalars();
  /// Flat mode (purely elementwise loop fusions): every array that is not rank 0 has the
  /// iteration space's elements and is addressed by the one linear index dims[0].
  void set_flat(bool flat) { flat_ = flat; }
  bool flat() const { return flat_; }

  /// A fresh index (new id) from its dims and lane count.
  ElemIndex index(std::vector<DimIdx> dims, int lanes);
  /// The rank-0 index (no dims) with `lanes` lanes.
  ElemIndex scalar_index(int lanes = 1) { return index({}, lanes); }
  /// The rank-0 index elementwise rules read rank-0 operands at while computing index `at`:
  /// `at` itself when it is rank 0, otherwise one fresh index per `at` (so a rank-0 value read
  /// by several equations at `at` is computed once there).
  const ElemIndex& scalar_for(const ElemIndex& at);
  /// An affine DimIdx: the scalar i64 `base`, coef per lane.
  static DimIdx affine(kir::Value base, int64_t coef = 0) { return DimIdx{base, coef, {}}; }
  /// The lanes of d as an explicit <lanes x i64> vector (a scalar i64 when lanes == 1).
  kir::Value dim_vector(const DimIdx& d, int lanes);
  /// d + c (c an i64 scalar), keeping the lane pattern.
  DimIdx offset(const DimIdx& d, kir::Value c);
  /// d * k for a constant k, keeping the lane pattern.
  DimIdx scale(const DimIdx& d, int64_t k);
  /// Linear element offset of `at` in a row-major array of `shape`: affine when every dim is.
  DimIdx linear_offset(const ElemIndex& at, const Shape& shape);

  // ---- values --------------------------------------------------------------------------------
  /// The KIR type of dtype d's compute representation with `lanes` lanes.
  static kir::Type compute_type(DType d, int lanes = 1);
  /// The KIR type d is stored as in memory (bf16: i16; bool: i8).
  static kir::Type storage_type(DType d, int lanes = 1);
  /// The lane count of the widest vector register for elements of dtype d.
  static int native_lanes(DType d);
  /// v splatted to `lanes` lanes (v itself when it has them already).
  EVal widen(EVal v, int lanes);
  /// Both values widened to the larger lane count.
  void match_lanes(EVal& a, EVal& c);
  /// A constant of dtype d in its compute representation; `v` is converted as eager converts a
  /// C++ double to d (bf16: rounded to nearest even; integers: truncated).
  EVal constant(DType d, double v, int lanes = 1);
  /// An integer (or bool) constant of dtype d, bits taken modulo 2^32 for i32/u32.
  EVal constant_int(DType d, int64_t v, int lanes = 1);
  /// A literal atom's value.
  EVal literal(const Literal& l, int lanes = 1);
  /// Rounds an f32 compute value of a bf16 array to bf16 precision (round to nearest even, NaN
  /// made quiet), as storing it would. Identity for other dtypes.
  EVal round_storage(EVal v);
  /// Loads element(s) of dtype d at linear element `offset` of `ptr`.
  EVal load(DType d, kir::Value ptr, const DimIdx& offset, int lanes);
  /// Stores v (dtype d) at linear element `offset` of `ptr` (vector store when contiguous).
  void store(kir::Value ptr, const DimIdx& offset, EVal v);

 private:
  std::vector<kir::Value> params_;
  std::unordered_map<uint64_t, const Eqn*> producer_;   // var id -> equation
  std::unordered_map<uint64_t, size_t> param_index_;    // var id -> body invar position
  std::map<std::pair<uint64_t, uint64_t>, std::vector<EVal>> memo_;
  uint64_t next_index_id_ = 1;
  bool flat_ = false;
  std::unordered_map<uint64_t, std::vector<EVal>> hoisted_;  // var id -> its rank-0 value
  std::unordered_map<uint64_t, ElemIndex> scalar_for_;        // index id -> scalar_for(index)

  /// Computes, deepest first and without recursion, the values at `at` of the chain of
  /// elementwise equations that v's value at `at` reads (each at `at`, rank-0 operands at
  /// scalar_for(at)), so that v's rule finds its operands memoized: the emitter's recursion
  /// depth is the number of index-changing equations on a path, not the chain's length.
  void evaluate_elementwise_operands(const Var& v, const ElemIndex& at);
};

/// The lowering of a reduction primitive (the root of a "reduction" fusion). The kernel keeps an
/// accumulator (one or more values, e.g. argmax's value and index) per output element or lane:
/// `init` gives its starting value, `combine` adds one input element x found at position `pos`
/// (the i64 index along the reduced axis, for arg-reductions), `merge` joins two accumulators of
/// disjoint parts (a's part before b's, for the fixed-order horizontal and block combination),
/// `finish` gives the output value.
struct ReductionRule {
  std::function<std::vector<EVal>(FusionEmitter&, const Eqn&, DType in_dtype, int lanes)> init;
  std::function<std::vector<EVal>(FusionEmitter&, const Eqn&, const std::vector<EVal>& acc, EVal x,
                                  const DimIdx& pos)> combine;
  std::function<std::vector<EVal>(FusionEmitter&, const Eqn&, const std::vector<EVal>& a,
                                  const std::vector<EVal>& b)> merge;
  std::function<EVal(FusionEmitter&, const Eqn&, const std::vector<EVal>& acc)> finish;
  /// Whether partial results are joined in the fixed pairwise order of sums (docs/compiler.md,
  /// "Numerics"; jit/codegen/lower/kernels.cc reduce_point): sums and products, whose rounding depends on
  /// the order. Other rules (max/min, arg-reductions: exact in any order) keep one running result.
  bool pairwise = true;
};
/// The reduction rules, keyed by primitive name.
std::map<std::string, ReductionRule>& reduction_rules();
struct RegisterReduction {
  RegisterReduction(const std::string& prim, ReductionRule rule);
};

/// What emit_fusion_kernel built: a function `name(ptr bufs, i64 begin, i64 end)` that computes
/// the fusion for outer indices [begin, end) of its iteration space; `bufs` holds the addresses
/// of the fusion's operands then of its outputs. Iterations of different outer indices are
/// independent (the caller may split [0, outer_extent) across threads).
struct KernelInfo {
  std::string name;
  std::string kind;                 ///< "loop" or "reduction"
  Shape space;                      ///< the iteration space the loops run over (collapsed)
  int64_t outer_extent = 1;         ///< the range [0, outer_extent) of the kernel's outer index
  int64_t work_per_outer = 1;       ///< elements computed (loop) or read (reduction) per outer index
  int lanes = 1;                    ///< vector lanes of the innermost loop
  /// Whether the outer index is the vectorized one (a loop fusion of rank 1, a reduction whose
  /// result has rank 1 and keeps the input's innermost dim): a caller splitting [0, outer_extent)
  /// must then start each chunk at a multiple of `lanes` (program.cc rounds mj_rt_parallel_for's
  /// grain so): when outer_extent is a multiple of lanes the kernel has no scalar tail loop, and a
  /// misaligned chunk would run whole vectors past its end.
  bool outer_vectorized = false;
  std::string describe() const;     ///< e.g. "loop f32[1048576] x16 lanes"
};

/// Emits the kernel of `fusion` (a `fusion` equation, see docs/compiler.md) into `m` as function
/// `name`. Throws ValueError naming the primitive when a body equation has no elemental or
/// reduction rule. `watch`: outputs (f32 results of a loop fusion, else ValueError) whose stored
/// elements the kernel checks for NaN or -inf; `bufs` then holds, after the outputs' addresses,
/// one i32 flag address per watched output, which a call over [begin, end) that stored such an
/// element sets to 1 (mj_rt_raise_flag) and otherwise leaves alone.
KernelInfo emit_fusion_kernel(kir::Module& m, const Eqn& fusion, const std::string& name,
                              const std::vector<size_t>& watch = {});

/// The elementwise values of eqn's operands at `at` (rank-0 operands read at the empty index),
/// for the rules of elementwise primitives.
std::vector<EVal> operands_at(FusionEmitter& fe, const Eqn& eqn, const ElemIndex& at);

}  // namespace minijax::lower
