// minijax kernel IR (KIR): the small typed, structured loop language lowering rules emit into.
// Owns types, instructions, functions, modules, the Builder, the text printer; no LLVM here.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace minijax::kir {

/// Scalar kinds. Integers carry no sign: signedness is chosen per instruction (SDiv vs UDiv,
/// SIToFP vs UIToFP, ...), as in LLVM. `ptr` is an untyped address (LLVM's opaque pointer).
enum class Scalar : uint8_t { i1, i8, i16, i32, i64, f32, f64, ptr, void_ };

/// A scalar or a vector of `lanes` scalars (lanes == 1: scalar).
struct Type {
  Scalar s = Scalar::void_;
  int lanes = 1;
  bool is_vector() const { return lanes > 1; }
  bool is_float() const { return s == Scalar::f32 || s == Scalar::f64; }
  bool is_int() const { return s == Scalar::i1 || s == Scalar::i8 || s == Scalar::i16 ||
                               s == Scalar::i32 || s == Scalar::i64; }
  Type scalar() const { return Type{s, 1}; }
  Type with_lanes(int n) const { return Type{s, n}; }
  bool operator==(const Type&) const = default;
};
inline constexpr Type kI1{Scalar::i1}, kI8{Scalar::i8}, kI16{Scalar::i16}, kI32{Scalar::i32},
    kI64{Scalar::i64}, kF32{Scalar::f32}, kF64{Scalar::f64}, kPtr{Scalar::ptr}, kVoid{Scalar::void_};
/// Bytes of one element of scalar kind s (i1: 1, ptr: 8, void: 0).
int scalar_bytes(Scalar s);
/// "f32", "<16 x f32>", "ptr", ...
std::string type_str(Type t);

/// Instruction opcodes. Binary arithmetic works on ints or floats of equal types (vectors
/// lane-wise); comparisons give i1 of the operands' lane count.
enum class Op : uint8_t {
  // values
  Arg, ConstInt, ConstFloat,
  // arithmetic: ints wrap (two's complement); F* are IEEE without fast-math flags
  Add, Sub, Mul, SDiv, UDiv, SRem, URem, Shl, LShr, AShr, And, Or, Xor,
  FAdd, FSub, FMul, FDiv, FRem, FNeg,
  ICmp, FCmp, Select,
  // conversions (to the instruction's type)
  SExt, ZExt, Trunc, FPExt, FPTrunc, SIToFP, UIToFP, FPToSI, FPToUI, Bitcast,
  // intrinsics (LLVM's, same names): operand types = result type
  Intrinsic,
  // vectors
  Splat, ExtractLane, InsertLane, Shuffle,
  // memory: element addressing ptr + index * element bytes (index: i64 scalar, or i64 vector for
  // gather/scatter); loads and stores of a vector type are unaligned and contiguous
  Load, Store, Gather, Scatter, MaskedLoad, MaskedStore, PtrAdd, Alloca,
  // memcpy(dst, src, nbytes i64) / memset(dst, byte i8, nbytes)
  Memcpy, Memset,
  // control flow (structured; loop-carried values go through Alloca'd locals)
  For, While, If, Call, Return,
  // the address of a module function (to pass a kernel to a runtime call)
  FuncAddr,
};

/// Comparison predicates (LLVM's): integer eq/ne/signed/unsigned; float ordered/unordered.
enum class Pred : uint8_t {
  eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge,
  foeq, fone, folt, fole, fogt, foge, fueq, fune, fult, fule, fugt, fuge, ford, funo,
};

/// A value: the id of the instruction producing it (-1: none).
struct Value {
  int id = -1;
  bool valid() const { return id >= 0; }
  bool operator==(const Value&) const = default;
};

/// A block: instruction ids in order.
struct Block {
  std::vector<int> insts;
};

/// One instruction. `args` are value operands; `imm` an integer immediate (ConstInt bits, lane
/// index, Arg index, alignment...), `fimm` a float immediate (ConstFloat), `name` the callee or
/// intrinsic name, `blocks` nested bodies (For: {body}; If: {then, else}), `mask` lane indices
/// of a Shuffle.
struct Inst {
  Inst(Op o, Type t, Pred p = Pred::eq) : op(o), type(t), pred(p) {}
  Op op;
  Type type;            ///< result type (void for stores, loops, ...)
  Pred pred = Pred::eq;
  std::vector<Value> args;
  int64_t imm = 0;
  double fimm = 0;
  std::string name;
  std::vector<Block> blocks;
  std::vector<int> mask;
  Type elem;            ///< Alloca: the allocated type; Load/Store/Gather: the element type
};

/// Linkage/inlining hints of a function.
enum class Linkage : uint8_t { external, internal };
enum class Inline : uint8_t { normal, always, never };

/// A function: typed parameters, a result type and one body block.
struct Function {
  std::string name;
  std::vector<Type> params;
  std::vector<std::string> param_names;  ///< for printing (may be empty)
  Type ret = kVoid;
  Linkage linkage = Linkage::internal;
  Inline inlining = Inline::normal;
  std::vector<Inst> insts;  ///< all instructions; Value ids index this
  Block body;
  /// Text shown above the function by the printer (e.g. the fusion it implements).
  std::string comment;
  /// Its pointer parameters address memory that nothing else writes while it runs (LLVM's
  /// `noalias`): the entry function's tables of buffer addresses, so LLVM keeps the addresses
  /// it loaded from them across the stores into the buffers (and across unrolled loop copies).
  bool noalias_ptr_params = false;
  /// Whether LLVM may unroll its loops. false: each loop it defines carries
  /// `llvm.loop.unroll.disable`, which stays with the loop when the function is inlined. The
  /// program sets it for a kernel it runs inline on the calling thread (under 2^16 elements):
  /// unrolling such a kernel changes its microseconds by little but made the MLP step's cold
  /// compile about 1.5× longer (its 12 inline kernels unrolled: object 19.2 KB, not 11.8 KB).
  bool unroll_loops = true;
  /// Its code is emitted already simplified (the outlined math functions: straight-line vector code
  /// and fixed loops): LLVM runs its cleanup passes on it once (SROA, EarlyCSE, InstCombine,
  /// SimplifyCFG) instead of the whole O2 function pipeline, which costs several times more compile
  /// time on such code for little gain. Module passes (constant propagation, inlining) still see it.
  bool light_optimization = false;
};

/// A declared external function (a runtime call, resolved when the module is loaded).
struct Extern {
  std::string name;
  std::vector<Type> params;
  Type ret = kVoid;
};

/// A module: the functions of one executable and the runtime functions they call.
struct Module {
  std::string name;
  std::vector<Function> functions;
  std::vector<Extern> externs;
  /// Index of the function called `name`, or -1.
  int find(const std::string& name) const;
  /// Declares an external (idempotent; ValueError if redeclared with another signature).
  void declare(const Extern& e);
};

/// Appends instructions to a function, block by block, like LLVM's IRBuilder. Operand types are
/// checked (ValueError naming the opcode and the types) so a lowering rule's mistake is reported
/// where it is made, not by LLVM's verifier.
class Builder {
 public:
  explicit Builder(Function& f);

  Function& function() { return *f_; }
  Type type(Value v) const;

  // ---- values ---------------------------------------------------------------------------------
  Value arg(int i);
  Value const_int(Type t, int64_t bits);
  Value const_float(Type t, double v);
  Value i1(bool b) { return const_int(kI1, b); }
  Value i32(int32_t v) { return const_int(kI32, v); }
  Value i64(int64_t v) { return const_int(kI64, v); }
  Value f32(float v) { return const_float(kF32, v); }
  Value f64(double v) { return const_float(kF64, v); }

  // ---- arithmetic -----------------------------------------------------------------------------
  Value binop(Op op, Value a, Value b);
  Value add(Value a, Value b) { return binop(Op::Add, a, b); }
  Value sub(Value a, Value b) { return binop(Op::Sub, a, b); }
  Value mul(Value a, Value b) { return binop(Op::Mul, a, b); }
  Value fadd(Value a, Value b) { return binop(Op::FAdd, a, b); }
  Value fsub(Value a, Value b) { return binop(Op::FSub, a, b); }
  Value fmul(Value a, Value b) { return binop(Op::FMul, a, b); }
  Value fdiv(Value a, Value b) { return binop(Op::FDiv, a, b); }
  Value fneg(Value a);
  Value icmp(Pred p, Value a, Value b);
  Value fcmp(Pred p, Value a, Value b);
  Value select(Value c, Value a, Value b);
  /// A conversion (SExt ... Bitcast) of v to type t (lanes must match v's).
  Value cast(Op op, Type t, Value v);
  /// An LLVM intrinsic by its name without the type suffix ("sqrt", "fabs", "fma", "floor",
  /// "ceil", "trunc", "rint", "round", "roundeven", "copysign", "minnum", "maxnum", "minimum",
  /// "maximum", "smin", "smax", "umin", "umax", "abs", "ctpop"); overloaded on `t`. Every operand
  /// in `args` has type `t`; `flags` are the intrinsic's immediate operands after them, of any
  /// type (llvm.abs's i1 "INT_MIN is poison").
  Value intrinsic(const std::string& name, Type t, std::vector<Value> args, std::vector<Value> flags = {});

  // ---- vectors --------------------------------------------------------------------------------
  /// A vector of `lanes` copies of scalar v (v itself when lanes == 1).
  Value splat(Value v, int lanes);
  Value extract(Value v, int lane);
  Value insert(Value v, Value scalar, int lane);
  /// Lanes of a (and b, indices >= lanes of a) picked by mask.
  Value shuffle(Value a, Value b, std::vector<int> mask);
  /// <0, 1, ..., lanes-1> of type t (i64 by default).
  Value lane_iota(int lanes, Type t = kI64);

  // ---- memory ---------------------------------------------------------------------------------
  /// Loads `t` (scalar or contiguous vector) at ptr + index * bytes(t.s).
  Value load(Type t, Value ptr, Value index);
  void store(Value ptr, Value index, Value v);
  /// Loads lane k from ptr + index[k] * bytes(t.s) (index: <lanes x i64>).
  Value gather(Type t, Value ptr, Value index);
  void scatter(Value ptr, Value index, Value v);
  /// Contiguous vector load/store of the lanes whose mask (i1 vector) is set; masked-off lanes
  /// of a load are `passthru`.
  Value masked_load(Type t, Value ptr, Value index, Value mask, Value passthru);
  void masked_store(Value ptr, Value index, Value v, Value mask);
  /// ptr + bytes (bytes: i64).
  Value ptr_add(Value ptr, Value bytes);
  /// A stack slot of `count` elements of type t (loop-carried values, pointer arrays); returns its
  /// address. Allocated once per call of the function (in its entry block).
  Value stack_slot(Type t, int64_t count = 1);
  /// As stack_slot, but declared at the top of the function's body rather than in the current
  /// block, so any block emitted afterwards may use it (a value is otherwise scoped to its block).
  Value function_stack_slot(Type t, int64_t count = 1);
  void memcpy(Value dst, Value src, Value nbytes);
  void memset(Value dst, Value byte, Value nbytes);

  // ---- control flow ---------------------------------------------------------------------------
  /// for (i = lo; i < hi; i += step) body(i); i has lo's type (an integer scalar).
  void for_(Value lo, Value hi, Value step, const std::function<void(Value)>& body);
  void if_(Value cond, const std::function<void()>& then_body,
           const std::function<void()>& else_body = nullptr);
  /// while (cond()) body(): `cond` emits the test (its block) and returns an i1 of that block.
  void while_(const std::function<Value()>& cond, const std::function<void()>& body);
  /// The address of module function `name` (a ptr), e.g. a kernel handed to a runtime call.
  Value func_addr(const std::string& name);
  /// Calls a module function or a declared extern by name; returns its value (invalid if void).
  Value call(const std::string& callee, Type ret, std::vector<Value> args);
  void ret(Value v = Value{});

 private:
  Value emit(Inst inst);
  Block& current();
  // Open blocks, innermost last: (instruction id, block index); (-1, 0) is the function body.
  // Ids, not pointers: appending instructions reallocates f_->insts.
  std::vector<std::pair<int, int>> stack_;
  Function* f_;
};

/// The printed form of a function / module (one instruction per line, nested blocks indented),
/// e.g. `%4 = fmul <16 x f32> %2, %3`. Deterministic: equal functions print equally.
std::string to_string(const Function& f);
std::string to_string(const Module& m);

}  // namespace minijax::kir
