// minijax kernel IR: the Builder's type checks and instruction construction, and the printer.
// Owns everything declared in jit/codegen/kir.h.
#include "jit/codegen/kir.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/errors.h"

namespace minijax::kir {

int scalar_bytes(Scalar s) {
  switch (s) {
    case Scalar::i1: case Scalar::i8: return 1;
    case Scalar::i16: return 2;
    case Scalar::i32: case Scalar::f32: return 4;
    case Scalar::i64: case Scalar::f64: case Scalar::ptr: return 8;
    case Scalar::void_: return 0;
  }
  return 0;
}

static const char* scalar_name(Scalar s) {
  switch (s) {
    case Scalar::i1: return "i1";
    case Scalar::i8: return "i8";
    case Scalar::i16: return "i16";
    case Scalar::i32: return "i32";
    case Scalar::i64: return "i64";
    case Scalar::f32: return "f32";
    case Scalar::f64: return "f64";
    case Scalar::ptr: return "ptr";
    case Scalar::void_: return "void";
  }
  return "?";
}

std::string type_str(Type t) {
  if (t.lanes == 1) return scalar_name(t.s);
  return "<" + std::to_string(t.lanes) + " x " + scalar_name(t.s) + ">";
}

int Module::find(const std::string& n) const {
  for (size_t i = 0; i < functions.size(); ++i)
    if (functions[i].name == n) return int(i);
  return -1;
}

void Module::declare(const Extern& e) {
  for (auto& x : externs) {
    if (x.name != e.name) continue;
    if (x.params != e.params || !(x.ret == e.ret))
      throw ValueError("kir: extern " + e.name + " redeclared with another signature");
    return;
  }
  externs.push_back(e);
}

// ---- Builder ------------------------------------------------------------------------------------

namespace {
[[noreturn]] void fail(const std::string& what) { throw ValueError("kir: " + what); }

const char* op_name(Op op);

void need(bool ok, Op op, const std::string& why) {
  if (!ok) fail(std::string(op_name(op)) + ": " + why);
}
}  // namespace

Builder::Builder(Function& f) : f_(&f) { stack_.push_back({-1, 0}); }

Block& Builder::current() {
  auto [inst, block] = stack_.back();
  return inst < 0 ? f_->body : f_->insts[size_t(inst)].blocks[size_t(block)];
}

Type Builder::type(Value v) const {
  if (v.id < 0 || size_t(v.id) >= f_->insts.size()) fail("use of an invalid value");
  return f_->insts[size_t(v.id)].type;
}

Value Builder::emit(Inst inst) {
  for (Value a : inst.args)
    if (a.id < 0 || size_t(a.id) >= f_->insts.size())
      fail(std::string(op_name(inst.op)) + ": operand is not a value of this function");
  int id = int(f_->insts.size());
  f_->insts.push_back(std::move(inst));
  current().insts.push_back(id);
  return Value{id};
}

Value Builder::arg(int i) {
  if (i < 0 || size_t(i) >= f_->params.size())
    fail("arg " + std::to_string(i) + " of " + f_->name + ", which has " +
         std::to_string(f_->params.size()) + " parameters");
  Inst in{Op::Arg, f_->params[size_t(i)]};
  in.imm = i;
  return emit(std::move(in));
}

Value Builder::const_int(Type t, int64_t bits) {
  need(t.is_int(), Op::ConstInt, "type " + type_str(t) + " is not an integer type");
  Inst in{Op::ConstInt, t};
  in.imm = bits;
  return emit(std::move(in));
}

Value Builder::const_float(Type t, double v) {
  need(t.is_float(), Op::ConstFloat, "type " + type_str(t) + " is not a float type");
  Inst in{Op::ConstFloat, t};
  in.fimm = v;
  return emit(std::move(in));
}

Value Builder::binop(Op op, Value a, Value b) {
  Type ta = type(a), tb = type(b);
  need(ta == tb, op, "operand types differ: " + type_str(ta) + " and " + type_str(tb));
  bool fl = op == Op::FAdd || op == Op::FSub || op == Op::FMul || op == Op::FDiv || op == Op::FRem;
  need(fl ? ta.is_float() : ta.is_int(), op, "operand type " + type_str(ta));
  Inst in{op, ta};
  in.args = {a, b};
  return emit(std::move(in));
}

Value Builder::fneg(Value a) {
  need(type(a).is_float(), Op::FNeg, "operand type " + type_str(type(a)));
  Inst in{Op::FNeg, type(a)};
  in.args = {a};
  return emit(std::move(in));
}

Value Builder::icmp(Pred p, Value a, Value b) {
  Type ta = type(a);
  need(ta == type(b) && (ta.is_int() || ta.s == Scalar::ptr), Op::ICmp,
       "operand types " + type_str(ta) + ", " + type_str(type(b)));
  need(p <= Pred::uge, Op::ICmp, "float predicate");
  Inst in{Op::ICmp, Type{Scalar::i1, ta.lanes}, p};
  in.args = {a, b};
  return emit(std::move(in));
}

Value Builder::fcmp(Pred p, Value a, Value b) {
  Type ta = type(a);
  need(ta == type(b) && ta.is_float(), Op::FCmp,
       "operand types " + type_str(ta) + ", " + type_str(type(b)));
  need(p >= Pred::foeq, Op::FCmp, "integer predicate");
  Inst in{Op::FCmp, Type{Scalar::i1, ta.lanes}, p};
  in.args = {a, b};
  return emit(std::move(in));
}

Value Builder::select(Value c, Value a, Value b) {
  Type tc = type(c), ta = type(a);
  need(ta == type(b), Op::Select, "arm types " + type_str(ta) + ", " + type_str(type(b)));
  need(tc.s == Scalar::i1 && (tc.lanes == ta.lanes || tc.lanes == 1), Op::Select,
       "condition type " + type_str(tc) + " for arms " + type_str(ta));
  Inst in{Op::Select, ta};
  in.args = {c, a, b};
  return emit(std::move(in));
}

Value Builder::cast(Op op, Type t, Value v) {
  Type tv = type(v);
  need(tv.lanes == t.lanes, op, "lane counts differ: " + type_str(tv) + " to " + type_str(t));
  bool ok = false;
  int bv = scalar_bytes(tv.s), bt = scalar_bytes(t.s);
  switch (op) {
    case Op::SExt: case Op::ZExt: ok = tv.is_int() && t.is_int() && (bt > bv || tv.s == Scalar::i1); break;
    case Op::Trunc: ok = tv.is_int() && t.is_int() && (bt < bv || t.s == Scalar::i1); break;
    case Op::FPExt: ok = tv.s == Scalar::f32 && t.s == Scalar::f64; break;
    case Op::FPTrunc: ok = tv.s == Scalar::f64 && t.s == Scalar::f32; break;
    case Op::SIToFP: case Op::UIToFP: ok = tv.is_int() && t.is_float(); break;
    case Op::FPToSI: case Op::FPToUI: ok = tv.is_float() && t.is_int(); break;
    case Op::Bitcast: ok = bv == bt && tv.s != Scalar::ptr && t.s != Scalar::ptr; break;
    default: ok = false;
  }
  need(ok, op, "cannot convert " + type_str(tv) + " to " + type_str(t));
  Inst in{op, t};
  in.args = {v};
  return emit(std::move(in));
}

Value Builder::intrinsic(const std::string& name, Type t, std::vector<Value> args, std::vector<Value> flags) {
  for (Value a : args)
    need(type(a) == t, Op::Intrinsic, name + ": operand " + type_str(type(a)) + " for " + type_str(t));
  Inst in{Op::Intrinsic, t};
  in.name = name;
  in.args = std::move(args);
  in.args.insert(in.args.end(), flags.begin(), flags.end());
  return emit(std::move(in));
}

Value Builder::splat(Value v, int lanes) {
  Type tv = type(v);
  need(tv.lanes == 1, Op::Splat, "operand is a vector " + type_str(tv));
  if (lanes == 1) return v;
  Inst in{Op::Splat, tv.with_lanes(lanes)};
  in.args = {v};
  return emit(std::move(in));
}

Value Builder::extract(Value v, int lane) {
  Type tv = type(v);
  need(lane >= 0 && lane < tv.lanes, Op::ExtractLane, "lane " + std::to_string(lane) + " of " + type_str(tv));
  if (tv.lanes == 1) return v;
  Inst in{Op::ExtractLane, tv.scalar()};
  in.args = {v};
  in.imm = lane;
  return emit(std::move(in));
}

Value Builder::insert(Value v, Value scalar, int lane) {
  Type tv = type(v);
  need(type(scalar) == tv.scalar() && lane >= 0 && lane < tv.lanes, Op::InsertLane,
       type_str(type(scalar)) + " into lane " + std::to_string(lane) + " of " + type_str(tv));
  Inst in{Op::InsertLane, tv};
  in.args = {v, scalar};
  in.imm = lane;
  return emit(std::move(in));
}

Value Builder::shuffle(Value a, Value b, std::vector<int> mask) {
  Type ta = type(a);
  need(ta == type(b) && !mask.empty(), Op::Shuffle, "operands " + type_str(ta) + ", " + type_str(type(b)));
  for (int m : mask) need(m >= 0 && m < 2 * ta.lanes, Op::Shuffle, "mask index " + std::to_string(m));
  Inst in{Op::Shuffle, ta.with_lanes(int(mask.size()))};
  in.args = {a, b};
  in.mask = std::move(mask);
  return emit(std::move(in));
}

Value Builder::lane_iota(int lanes, Type t) {
  if (lanes == 1) return const_int(t, 0);
  // A vector constant built by insertions; LLVM folds it to a constant vector.
  Value v = splat(const_int(t, 0), lanes);
  for (int k = 1; k < lanes; ++k) v = insert(v, const_int(t, k), k);
  return v;
}

static void need_ptr_index(Builder& b, Op op, Value ptr, Value index, int lanes_expected) {
  need(b.type(ptr) == kPtr, op, "address is " + type_str(b.type(ptr)) + ", not ptr");
  Type ti = b.type(index);
  need(ti.s == Scalar::i64 && ti.lanes == lanes_expected, op,
       "index is " + type_str(ti) + ", expected " + type_str(kI64.with_lanes(lanes_expected)));
}

Value Builder::load(Type t, Value ptr, Value index) {
  need_ptr_index(*this, Op::Load, ptr, index, 1);
  need(t.s != Scalar::void_, Op::Load, "void type");
  Inst in{Op::Load, t};
  in.args = {ptr, index};
  in.elem = t.scalar();
  return emit(std::move(in));
}

void Builder::store(Value ptr, Value index, Value v) {
  need_ptr_index(*this, Op::Store, ptr, index, 1);
  Inst in{Op::Store, kVoid};
  in.args = {ptr, index, v};
  in.elem = type(v).scalar();
  emit(std::move(in));
}

Value Builder::gather(Type t, Value ptr, Value index) {
  need_ptr_index(*this, Op::Gather, ptr, index, t.lanes);
  if (t.lanes == 1) return load(t, ptr, index);
  Inst in{Op::Gather, t};
  in.args = {ptr, index};
  in.elem = t.scalar();
  return emit(std::move(in));
}

void Builder::scatter(Value ptr, Value index, Value v) {
  Type tv = type(v);
  need_ptr_index(*this, Op::Scatter, ptr, index, tv.lanes);
  if (tv.lanes == 1) return store(ptr, index, v);
  Inst in{Op::Scatter, kVoid};
  in.args = {ptr, index, v};
  in.elem = tv.scalar();
  emit(std::move(in));
}

Value Builder::masked_load(Type t, Value ptr, Value index, Value mask, Value passthru) {
  need_ptr_index(*this, Op::MaskedLoad, ptr, index, 1);
  need(type(mask) == Type{Scalar::i1, t.lanes} && type(passthru) == t, Op::MaskedLoad,
       "mask " + type_str(type(mask)) + " / passthru " + type_str(type(passthru)) + " for " + type_str(t));
  Inst in{Op::MaskedLoad, t};
  in.args = {ptr, index, mask, passthru};
  in.elem = t.scalar();
  return emit(std::move(in));
}

void Builder::masked_store(Value ptr, Value index, Value v, Value mask) {
  need_ptr_index(*this, Op::MaskedStore, ptr, index, 1);
  need(type(mask) == Type{Scalar::i1, type(v).lanes}, Op::MaskedStore,
       "mask " + type_str(type(mask)) + " for " + type_str(type(v)));
  Inst in{Op::MaskedStore, kVoid};
  in.args = {ptr, index, v, mask};
  in.elem = type(v).scalar();
  emit(std::move(in));
}

Value Builder::ptr_add(Value ptr, Value bytes) {
  need(type(ptr) == kPtr && type(bytes) == kI64, Op::PtrAdd,
       type_str(type(ptr)) + " + " + type_str(type(bytes)));
  Inst in{Op::PtrAdd, kPtr};
  in.args = {ptr, bytes};
  return emit(std::move(in));
}

Value Builder::stack_slot(Type t, int64_t count) {
  need(count >= 1, Op::Alloca, "count " + std::to_string(count));
  Inst in{Op::Alloca, kPtr};
  in.elem = t;
  in.imm = count;
  return emit(std::move(in));
}

Value Builder::function_stack_slot(Type t, int64_t count) {
  need(count >= 1, Op::Alloca, "count " + std::to_string(count));
  Inst in{Op::Alloca, kPtr};
  in.elem = t;
  in.imm = count;
  const int id = int(f_->insts.size());
  f_->insts.push_back(std::move(in));
  f_->body.insts.insert(f_->body.insts.begin(), id);
  return Value{id};
}

void Builder::memcpy(Value dst, Value src, Value nbytes) {
  need(type(dst) == kPtr && type(src) == kPtr && type(nbytes) == kI64, Op::Memcpy, "operand types");
  Inst in{Op::Memcpy, kVoid};
  in.args = {dst, src, nbytes};
  emit(std::move(in));
}

void Builder::memset(Value dst, Value byte, Value nbytes) {
  need(type(dst) == kPtr && type(byte) == kI8 && type(nbytes) == kI64, Op::Memset, "operand types");
  Inst in{Op::Memset, kVoid};
  in.args = {dst, byte, nbytes};
  emit(std::move(in));
}

void Builder::for_(Value lo, Value hi, Value step, const std::function<void(Value)>& body) {
  Type t = type(lo);
  need(t.is_int() && t.lanes == 1 && type(hi) == t && type(step) == t, Op::For,
       "bounds " + type_str(t) + ", " + type_str(type(hi)) + ", " + type_str(type(step)));
  Inst in{Op::For, t};  // the instruction's value is the induction variable
  in.args = {lo, hi, step};
  in.blocks.resize(1);
  Value iv = emit(std::move(in));
  stack_.push_back({iv.id, 0});
  body(iv);
  stack_.pop_back();
}

void Builder::if_(Value cond, const std::function<void()>& then_body,
                  const std::function<void()>& else_body) {
  need(type(cond) == kI1, Op::If, "condition is " + type_str(type(cond)));
  Inst in{Op::If, kVoid};
  in.args = {cond};
  in.blocks.resize(2);
  Value id = emit(std::move(in));
  stack_.push_back({id.id, 0});
  then_body();
  stack_.pop_back();
  if (else_body) {
    stack_.push_back({id.id, 1});
    else_body();
    stack_.pop_back();
  }
}

void Builder::while_(const std::function<Value()>& cond, const std::function<void()>& body) {
  Inst in{Op::While, kVoid};
  in.blocks.resize(2);
  Value id = emit(std::move(in));
  stack_.push_back({id.id, 0});
  Value c = cond();
  need(type(c) == kI1, Op::While, "condition is " + type_str(type(c)));
  stack_.pop_back();
  f_->insts[size_t(id.id)].imm = c.id;
  stack_.push_back({id.id, 1});
  body();
  stack_.pop_back();
}

Value Builder::func_addr(const std::string& name) {
  Inst in{Op::FuncAddr, kPtr};
  in.name = name;
  return emit(std::move(in));
}

Value Builder::call(const std::string& callee, Type ret, std::vector<Value> args) {
  Inst in{Op::Call, ret};
  in.name = callee;
  in.args = std::move(args);
  Value v = emit(std::move(in));
  return ret.s == Scalar::void_ ? Value{} : v;
}

void Builder::ret(Value v) {
  Inst in{Op::Return, kVoid};
  if (v.valid()) {
    need(type(v) == f_->ret, Op::Return, "value " + type_str(type(v)) + " for " + type_str(f_->ret));
    in.args = {v};
  } else {
    need(f_->ret.s == Scalar::void_, Op::Return, "missing value of type " + type_str(f_->ret));
  }
  emit(std::move(in));
}

// ---- printer ------------------------------------------------------------------------------------

namespace {

const char* op_name(Op op) {
  switch (op) {
    case Op::Arg: return "arg";
    case Op::ConstInt: return "const";
    case Op::ConstFloat: return "const";
    case Op::Add: return "add";
    case Op::Sub: return "sub";
    case Op::Mul: return "mul";
    case Op::SDiv: return "sdiv";
    case Op::UDiv: return "udiv";
    case Op::SRem: return "srem";
    case Op::URem: return "urem";
    case Op::Shl: return "shl";
    case Op::LShr: return "lshr";
    case Op::AShr: return "ashr";
    case Op::And: return "and";
    case Op::Or: return "or";
    case Op::Xor: return "xor";
    case Op::FAdd: return "fadd";
    case Op::FSub: return "fsub";
    case Op::FMul: return "fmul";
    case Op::FDiv: return "fdiv";
    case Op::FRem: return "frem";
    case Op::FNeg: return "fneg";
    case Op::ICmp: return "icmp";
    case Op::FCmp: return "fcmp";
    case Op::Select: return "select";
    case Op::SExt: return "sext";
    case Op::ZExt: return "zext";
    case Op::Trunc: return "trunc";
    case Op::FPExt: return "fpext";
    case Op::FPTrunc: return "fptrunc";
    case Op::SIToFP: return "sitofp";
    case Op::UIToFP: return "uitofp";
    case Op::FPToSI: return "fptosi";
    case Op::FPToUI: return "fptoui";
    case Op::Bitcast: return "bitcast";
    case Op::Intrinsic: return "intrinsic";
    case Op::Splat: return "splat";
    case Op::ExtractLane: return "extract";
    case Op::InsertLane: return "insert";
    case Op::Shuffle: return "shuffle";
    case Op::Load: return "load";
    case Op::Store: return "store";
    case Op::Gather: return "gather";
    case Op::Scatter: return "scatter";
    case Op::MaskedLoad: return "masked_load";
    case Op::MaskedStore: return "masked_store";
    case Op::PtrAdd: return "ptradd";
    case Op::Alloca: return "alloca";
    case Op::Memcpy: return "memcpy";
    case Op::Memset: return "memset";
    case Op::For: return "for";
    case Op::While: return "while";
    case Op::FuncAddr: return "funcaddr";
    case Op::If: return "if";
    case Op::Call: return "call";
    case Op::Return: return "ret";
  }
  return "?";
}

const char* pred_name(Pred p) {
  // LLVM's names (a float predicate without its leading f: foeq prints as oeq).
  switch (p) {
    case Pred::eq: return "eq";
    case Pred::ne: return "ne";
    case Pred::slt: return "slt";
    case Pred::sle: return "sle";
    case Pred::sgt: return "sgt";
    case Pred::sge: return "sge";
    case Pred::ult: return "ult";
    case Pred::ule: return "ule";
    case Pred::ugt: return "ugt";
    case Pred::uge: return "uge";
    case Pred::foeq: return "oeq";
    case Pred::fone: return "one";
    case Pred::folt: return "olt";
    case Pred::fole: return "ole";
    case Pred::fogt: return "ogt";
    case Pred::foge: return "oge";
    case Pred::fueq: return "ueq";
    case Pred::fune: return "une";
    case Pred::fult: return "ult";
    case Pred::fule: return "ule";
    case Pred::fugt: return "ugt";
    case Pred::fuge: return "uge";
    case Pred::ford: return "ord";
    case Pred::funo: return "uno";
  }
  return "?";
}

std::string fmt_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void print_block(std::ostringstream& os, const Function& f, const Block& b, int indent);

void print_inst(std::ostringstream& os, const Function& f, int id, int indent) {
  const Inst& in = f.insts[size_t(id)];
  std::string pad(size_t(indent), ' ');
  auto v = [](Value x) { return "%" + std::to_string(x.id); };
  os << pad;
  if (in.op == Op::For) {
    os << "for %" << id << " = " << v(in.args[0]) << " to " << v(in.args[1]) << " step "
       << v(in.args[2]) << " {\n";
    print_block(os, f, in.blocks[0], indent + 2);
    os << pad << "}\n";
    return;
  }
  if (in.op == Op::While) {
    os << "while {\n";
    print_block(os, f, in.blocks[0], indent + 2);
    os << pad << "} test %" << in.imm << " do {\n";
    print_block(os, f, in.blocks[1], indent + 2);
    os << pad << "}\n";
    return;
  }
  if (in.op == Op::If) {
    os << "if " << v(in.args[0]) << " {\n";
    print_block(os, f, in.blocks[0], indent + 2);
    if (!in.blocks[1].insts.empty()) {
      os << pad << "} else {\n";
      print_block(os, f, in.blocks[1], indent + 2);
    }
    os << pad << "}\n";
    return;
  }
  if (in.type.s != Scalar::void_) os << "%" << id << " = ";
  os << op_name(in.op);
  if (in.op == Op::ICmp || in.op == Op::FCmp) os << " " << pred_name(in.pred);
  if (in.op == Op::Intrinsic || in.op == Op::Call || in.op == Op::FuncAddr) os << " @" << in.name;
  if (in.type.s != Scalar::void_) os << " " << type_str(in.type);
  if (in.op == Op::Alloca) os << " " << type_str(in.elem) << (in.imm > 1 ? " x " + std::to_string(in.imm) : "");
  if (in.op == Op::Arg) os << " " << in.imm;
  if (in.op == Op::ConstInt) os << " " << in.imm;
  if (in.op == Op::ConstFloat) os << " " << fmt_float(in.fimm);
  for (size_t k = 0; k < in.args.size(); ++k) os << (k ? ", " : " ") << v(in.args[k]);
  if (in.op == Op::ExtractLane || in.op == Op::InsertLane) os << ", lane " << in.imm;
  if (in.op == Op::Shuffle) {
    os << " [";
    for (size_t k = 0; k < in.mask.size(); ++k) os << (k ? " " : "") << in.mask[k];
    os << "]";
  }
  os << "\n";
}

void print_block(std::ostringstream& os, const Function& f, const Block& b, int indent) {
  for (int id : b.insts) print_inst(os, f, id, indent);
}

}  // namespace

std::string to_string(const Function& f) {
  std::ostringstream os;
  if (!f.comment.empty()) {
    std::istringstream lines(f.comment);
    for (std::string l; std::getline(lines, l);) os << "; " << l << "\n";
  }
  os << (f.linkage == Linkage::external ? "define " : "define internal ") << type_str(f.ret) << " @"
     << f.name << "(";
  for (size_t i = 0; i < f.params.size(); ++i) {
    os << (i ? ", " : "") << type_str(f.params[i]);
    if (f.noalias_ptr_params && f.params[i] == kPtr) os << " noalias";
    if (i < f.param_names.size() && !f.param_names[i].empty()) os << " " << f.param_names[i];
  }
  os << ")" << (f.inlining == Inline::always ? " alwaysinline" : f.inlining == Inline::never ? " noinline" : "")
     << (f.unroll_loops ? "" : " nounroll") << (f.light_optimization ? " lightopt" : "") << " {\n";
  print_block(os, f, f.body, 2);
  os << "}\n";
  return os.str();
}

std::string to_string(const Module& m) {
  std::ostringstream os;
  for (auto& e : m.externs) {
    os << "declare " << type_str(e.ret) << " @" << e.name << "(";
    for (size_t i = 0; i < e.params.size(); ++i) os << (i ? ", " : "") << type_str(e.params[i]);
    os << ")\n";
  }
  for (auto& f : m.functions) os << "\n" << to_string(f);
  return os.str();
}

}  // namespace minijax::kir
