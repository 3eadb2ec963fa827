// minijax code generation: KIR -> LLVM IR (one LLVM function per KIR function), verification,
// LLVM's O2 pipeline for the host CPU and object emission. Includes LLVM's IR and codegen headers.
#include "jit/codegen/emit_llvm.h"

#include <map>
#include <memory>
#include <mutex>

#include <llvm/ADT/StringMap.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/PassInstrumentation.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>


namespace minijax {

namespace {

// The function attribute of kir::Function::light_optimization.
constexpr const char* kLightOptAttr = "minijax-light-optimization";

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

std::unique_ptr<llvm::TargetMachine> make_target_machine() {
  init_llvm();
  const HostTarget& h = host_target();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(h.triple, err);
  if (!target) throw CompileError("LLVM has no target for " + h.triple + ": " + err);
  llvm::TargetOptions opts;  // IEEE semantics: no unsafe-fp-math, no FMA contraction
  opts.AllowFPOpFusion = llvm::FPOpFusion::Strict;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      h.triple, h.cpu, h.features, opts, llvm::Reloc::PIC_, llvm::CodeModel::Small,
      llvm::CodeGenOptLevel::Default));
  if (!tm) throw CompileError("LLVM could not create a target machine for " + h.cpu);
  return tm;
}

// ---- KIR -> LLVM IR -------------------------------------------------------------------------------

class Translator {
 public:
  Translator(llvm::LLVMContext& ctx, llvm::Module& mod, const kir::Module& km)
      : ctx_(ctx), mod_(mod), km_(km), b_(ctx) {}

  void run() {
    for (auto& e : km_.externs) {
      auto* ft = fn_type(e.ret, e.params);
      llvm::Function::Create(ft, llvm::Function::ExternalLinkage, e.name, mod_);
    }
    for (auto& f : km_.functions) declare(f);
    for (auto& f : km_.functions) define(f);
  }

 private:
  llvm::Type* scalar(kir::Scalar s) {
    switch (s) {
      case kir::Scalar::i1: return b_.getInt1Ty();
      case kir::Scalar::i8: return b_.getInt8Ty();
      case kir::Scalar::i16: return b_.getInt16Ty();
      case kir::Scalar::i32: return b_.getInt32Ty();
      case kir::Scalar::i64: return b_.getInt64Ty();
      case kir::Scalar::f32: return b_.getFloatTy();
      case kir::Scalar::f64: return b_.getDoubleTy();
      case kir::Scalar::ptr: return b_.getPtrTy();
      case kir::Scalar::void_: return b_.getVoidTy();
    }
    return nullptr;
  }
  llvm::Type* type(kir::Type t) {
    llvm::Type* s = scalar(t.s);
    return t.lanes == 1 ? s : llvm::FixedVectorType::get(s, unsigned(t.lanes));
  }
  llvm::FunctionType* fn_type(kir::Type ret, const std::vector<kir::Type>& params) {
    std::vector<llvm::Type*> ps;
    for (auto& p : params) ps.push_back(type(p));
    return llvm::FunctionType::get(type(ret), ps, false);
  }

  void declare(const kir::Function& f) {
    auto* fn = llvm::Function::Create(
        fn_type(f.ret, f.params),
        f.linkage == kir::Linkage::external ? llvm::Function::ExternalLinkage
                                            : llvm::Function::InternalLinkage,
        f.name, mod_);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    if (f.inlining == kir::Inline::always) fn->addFnAttr(llvm::Attribute::AlwaysInline);
    if (f.inlining == kir::Inline::never) fn->addFnAttr(llvm::Attribute::NoInline);
    if (f.light_optimization) fn->addFnAttr(kLightOptAttr);
    const HostTarget& h = host_target();
    fn->addFnAttr("target-cpu", h.cpu);
    fn->addFnAttr("target-features", h.features);
    // Our vectors are explicit: let the backend keep them at the full register width.
    std::string bits = std::to_string(h.vector_bytes * 8);
    fn->addFnAttr("min-legal-vector-width", bits);
    fn->addFnAttr("prefer-vector-width", bits);
    for (size_t i = 0; i < f.params.size(); ++i)
      if (f.params[i] == kir::kPtr) {
        fn->addParamAttr(unsigned(i), llvm::Attribute::NoUndef);
        if (f.noalias_ptr_params) fn->addParamAttr(unsigned(i), llvm::Attribute::NoAlias);
      }
  }

  void define(const kir::Function& f) {
    fn_ = mod_.getFunction(f.name);
    kf_ = &f;
    vals_.assign(f.insts.size(), nullptr);
    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry);
    block(f.body);
    if (!b_.GetInsertBlock()->getTerminator()) {
      if (f.ret.s == kir::Scalar::void_) b_.CreateRetVoid();
      else b_.CreateUnreachable();
    }
  }

  void block(const kir::Block& blk) {
    for (int id : blk.insts) {
      if (b_.GetInsertBlock()->getTerminator()) break;  // code after a return
      inst(id);
    }
  }

  llvm::Value* v(kir::Value x) {
    llvm::Value* r = vals_[size_t(x.id)];
    if (!r)
      throw CompileError("kir: value %" + std::to_string(x.id) + " used outside the block that defines it (function " +
                         kf_->name + ")");
    return r;
  }

  llvm::Align align_of(kir::Type elem) { return llvm::Align(uint64_t(std::max(1, kir::scalar_bytes(elem.s)))); }

  llvm::Value* addr(const kir::Inst& in, llvm::Value* ptr, llvm::Value* index) {
    return b_.CreateGEP(scalar(in.elem.s), ptr, index);
  }

  static llvm::CmpInst::Predicate pred(kir::Pred p) {
    using P = llvm::CmpInst;
    switch (p) {
      case kir::Pred::eq: return P::ICMP_EQ;
      case kir::Pred::ne: return P::ICMP_NE;
      case kir::Pred::slt: return P::ICMP_SLT;
      case kir::Pred::sle: return P::ICMP_SLE;
      case kir::Pred::sgt: return P::ICMP_SGT;
      case kir::Pred::sge: return P::ICMP_SGE;
      case kir::Pred::ult: return P::ICMP_ULT;
      case kir::Pred::ule: return P::ICMP_ULE;
      case kir::Pred::ugt: return P::ICMP_UGT;
      case kir::Pred::uge: return P::ICMP_UGE;
      case kir::Pred::foeq: return P::FCMP_OEQ;
      case kir::Pred::fone: return P::FCMP_ONE;
      case kir::Pred::folt: return P::FCMP_OLT;
      case kir::Pred::fole: return P::FCMP_OLE;
      case kir::Pred::fogt: return P::FCMP_OGT;
      case kir::Pred::foge: return P::FCMP_OGE;
      case kir::Pred::fueq: return P::FCMP_UEQ;
      case kir::Pred::fune: return P::FCMP_UNE;
      case kir::Pred::fult: return P::FCMP_ULT;
      case kir::Pred::fule: return P::FCMP_ULE;
      case kir::Pred::fugt: return P::FCMP_UGT;
      case kir::Pred::fuge: return P::FCMP_UGE;
      case kir::Pred::ford: return P::FCMP_ORD;
      case kir::Pred::funo: return P::FCMP_UNO;
    }
    return P::ICMP_EQ;
  }

  llvm::Value* binop(const kir::Inst& in) {
    llvm::Value *a = v(in.args[0]), *c = v(in.args[1]);
    using O = kir::Op;
    switch (in.op) {
      case O::Add: return b_.CreateAdd(a, c);
      case O::Sub: return b_.CreateSub(a, c);
      case O::Mul: return b_.CreateMul(a, c);
      case O::SDiv: return b_.CreateSDiv(a, c);
      case O::UDiv: return b_.CreateUDiv(a, c);
      case O::SRem: return b_.CreateSRem(a, c);
      case O::URem: return b_.CreateURem(a, c);
      case O::Shl: return b_.CreateShl(a, c);
      case O::LShr: return b_.CreateLShr(a, c);
      case O::AShr: return b_.CreateAShr(a, c);
      case O::And: return b_.CreateAnd(a, c);
      case O::Or: return b_.CreateOr(a, c);
      case O::Xor: return b_.CreateXor(a, c);
      case O::FAdd: return b_.CreateFAdd(a, c);
      case O::FSub: return b_.CreateFSub(a, c);
      case O::FMul: return b_.CreateFMul(a, c);
      case O::FDiv: return b_.CreateFDiv(a, c);
      case O::FRem: return b_.CreateFRem(a, c);
      default: return nullptr;
    }
  }

  llvm::Value* cast(const kir::Inst& in) {
    llvm::Value* x = v(in.args[0]);
    llvm::Type* t = type(in.type);
    using O = kir::Op;
    switch (in.op) {
      case O::SExt: return b_.CreateSExt(x, t);
      case O::ZExt: return b_.CreateZExt(x, t);
      case O::Trunc: return b_.CreateTrunc(x, t);
      case O::FPExt: return b_.CreateFPExt(x, t);
      case O::FPTrunc: return b_.CreateFPTrunc(x, t);
      case O::SIToFP: return b_.CreateSIToFP(x, t);
      case O::UIToFP: return b_.CreateUIToFP(x, t);
      case O::FPToSI: return b_.CreateFPToSI(x, t);
      case O::FPToUI: return b_.CreateFPToUI(x, t);
      case O::Bitcast: return b_.CreateBitCast(x, t);
      default: return nullptr;
    }
  }

  llvm::Value* intrinsic(const kir::Inst& in) {
    llvm::Intrinsic::ID id = llvm::Function::lookupIntrinsicID("llvm." + in.name);
    if (id == llvm::Intrinsic::not_intrinsic)
      throw CompileError("kir: unknown intrinsic llvm." + in.name + " in function " + kf_->name);
    std::vector<llvm::Value*> args;
    for (auto a : in.args) args.push_back(v(a));
    llvm::Function* decl = llvm::Intrinsic::getDeclaration(&mod_, id, {type(in.type)});
    return b_.CreateCall(decl, args);
  }

  void for_loop(int id, const kir::Inst& in) {
    llvm::Value *lo = v(in.args[0]), *hi = v(in.args[1]), *step = v(in.args[2]);
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, "loop", fn_);
    auto* body = llvm::BasicBlock::Create(ctx_, "body", fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, "done", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* iv = b_.CreatePHI(type(in.type), 2);
    iv->addIncoming(lo, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, hi), body, exit);
    b_.SetInsertPoint(body);
    vals_[size_t(id)] = iv;
    block(in.blocks[0]);
    if (!b_.GetInsertBlock()->getTerminator()) {
      llvm::Value* next = b_.CreateAdd(iv, step, "", /*HasNUW=*/false, /*HasNSW=*/true);
      iv->addIncoming(next, b_.GetInsertBlock());
      mark_latch(b_.CreateBr(header));
    }
    b_.SetInsertPoint(exit);
    forget(in.blocks[0]);
    vals_[size_t(id)] = nullptr;
  }

  void while_loop(const kir::Inst& in) {
    auto* header = llvm::BasicBlock::Create(ctx_, "while", fn_);
    auto* body = llvm::BasicBlock::Create(ctx_, "wbody", fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, "wdone", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    block(in.blocks[0]);
    llvm::Value* c = v(kir::Value{int(in.imm)});
    b_.CreateCondBr(c, body, exit);
    b_.SetInsertPoint(body);
    block(in.blocks[1]);
    if (!b_.GetInsertBlock()->getTerminator()) mark_latch(b_.CreateBr(header));
    b_.SetInsertPoint(exit);
    forget(in.blocks[0]);
    forget(in.blocks[1]);
  }

  // A loop's back edge: in a function that may not be unrolled (kir::Function::unroll_loops), its
  // loop ID with llvm.loop.unroll.disable (LLVM LangRef, "'llvm.loop.unroll' Metadata").
  void mark_latch(llvm::BranchInst* latch) {
    if (kf_->unroll_loops) return;
    llvm::TempMDTuple self = llvm::MDNode::getTemporary(ctx_, {});
    llvm::Metadata* disable = llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")});
    llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, {self.get(), disable});
    id->replaceOperandWith(0, id);
    latch->setMetadata(llvm::LLVMContext::MD_loop, id);
  }

  void if_then(const kir::Inst& in) {
    auto* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
    auto* else_bb = llvm::BasicBlock::Create(ctx_, "else", fn_);
    auto* merge = llvm::BasicBlock::Create(ctx_, "endif", fn_);
    b_.CreateCondBr(v(in.args[0]), then_bb, else_bb);
    b_.SetInsertPoint(then_bb);
    block(in.blocks[0]);
    if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(merge);
    b_.SetInsertPoint(else_bb);
    block(in.blocks[1]);
    if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(merge);
    b_.SetInsertPoint(merge);
    forget(in.blocks[0]);
    forget(in.blocks[1]);
  }

  // Values of a finished block may not be used after it (structured scoping).
  void forget(const kir::Block& blk) {
    for (int id : blk.insts) vals_[size_t(id)] = nullptr;
  }

  void inst(int id) {
    const kir::Inst& in = kf_->insts[size_t(id)];
    using O = kir::Op;
    llvm::Value* r = nullptr;
    switch (in.op) {
      case O::Arg: r = fn_->getArg(unsigned(in.imm)); break;
      case O::ConstInt: {
        llvm::Type* t = type(in.type);
        r = llvm::ConstantInt::get(t, uint64_t(in.imm), /*isSigned=*/true);
        break;
      }
      case O::ConstFloat: r = llvm::ConstantFP::get(type(in.type), in.fimm); break;
      case O::Add: case O::Sub: case O::Mul: case O::SDiv: case O::UDiv: case O::SRem: case O::URem:
      case O::Shl: case O::LShr: case O::AShr: case O::And: case O::Or: case O::Xor:
      case O::FAdd: case O::FSub: case O::FMul: case O::FDiv: case O::FRem:
        r = binop(in);
        break;
      case O::FNeg: r = b_.CreateFNeg(v(in.args[0])); break;
      case O::ICmp: r = b_.CreateICmp(pred(in.pred), v(in.args[0]), v(in.args[1])); break;
      case O::FCmp: r = b_.CreateFCmp(pred(in.pred), v(in.args[0]), v(in.args[1])); break;
      case O::Select: r = b_.CreateSelect(v(in.args[0]), v(in.args[1]), v(in.args[2])); break;
      case O::SExt: case O::ZExt: case O::Trunc: case O::FPExt: case O::FPTrunc: case O::SIToFP:
      case O::UIToFP: case O::FPToSI: case O::FPToUI: case O::Bitcast:
        r = cast(in);
        break;
      case O::Intrinsic: r = intrinsic(in); break;
      case O::Splat: r = b_.CreateVectorSplat(unsigned(in.type.lanes), v(in.args[0])); break;
      case O::ExtractLane: r = b_.CreateExtractElement(v(in.args[0]), uint64_t(in.imm)); break;
      case O::InsertLane: r = b_.CreateInsertElement(v(in.args[0]), v(in.args[1]), uint64_t(in.imm)); break;
      case O::Shuffle: r = b_.CreateShuffleVector(v(in.args[0]), v(in.args[1]), in.mask); break;
      case O::Load:
        r = b_.CreateAlignedLoad(type(in.type), addr(in, v(in.args[0]), v(in.args[1])), align_of(in.elem));
        break;
      case O::Store:
        b_.CreateAlignedStore(v(in.args[2]), addr(in, v(in.args[0]), v(in.args[1])), align_of(in.elem));
        break;
      case O::Gather: {
        llvm::Value* ptrs = addr(in, v(in.args[0]), v(in.args[1]));
        r = b_.CreateMaskedGather(type(in.type), ptrs, align_of(in.elem));
        break;
      }
      case O::Scatter: {
        llvm::Value* ptrs = addr(in, v(in.args[0]), v(in.args[1]));
        b_.CreateMaskedScatter(v(in.args[2]), ptrs, align_of(in.elem));
        break;
      }
      case O::MaskedLoad:
        r = b_.CreateMaskedLoad(type(in.type), addr(in, v(in.args[0]), v(in.args[1])), align_of(in.elem),
                                v(in.args[2]), v(in.args[3]));
        break;
      case O::MaskedStore:
        b_.CreateMaskedStore(v(in.args[2]), addr(in, v(in.args[0]), v(in.args[1])), align_of(in.elem),
                             v(in.args[3]));
        break;
      case O::PtrAdd: r = b_.CreateGEP(b_.getInt8Ty(), v(in.args[0]), v(in.args[1])); break;
      case O::Alloca: {
        // Allocas go to the entry block so mem2reg promotes them (loop-carried locals).
        llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
        r = eb.CreateAlloca(type(in.elem), in.imm > 1 ? b_.getInt64(uint64_t(in.imm)) : nullptr);
        break;
      }
      case O::Memcpy:
        b_.CreateMemCpy(v(in.args[0]), llvm::MaybeAlign(1), v(in.args[1]), llvm::MaybeAlign(1), v(in.args[2]));
        break;
      case O::Memset:
        b_.CreateMemSet(v(in.args[0]), v(in.args[1]), v(in.args[2]), llvm::MaybeAlign(1));
        break;
      case O::For: for_loop(id, in); return;
      case O::While: while_loop(in); return;
      case O::FuncAddr: {
        llvm::Function* callee = mod_.getFunction(in.name);
        if (!callee) throw CompileError("kir: address of undeclared function @" + in.name + " in " + kf_->name);
        r = callee;
        break;
      }
      case O::If: if_then(in); return;
      case O::Call: {
        llvm::Function* callee = mod_.getFunction(in.name);
        if (!callee) throw CompileError("kir: call of undeclared function @" + in.name + " in " + kf_->name);
        std::vector<llvm::Value*> args;
        for (auto a : in.args) args.push_back(v(a));
        r = b_.CreateCall(callee, args);
        break;
      }
      case O::Return:
        if (in.args.empty()) b_.CreateRetVoid();
        else b_.CreateRet(v(in.args[0]));
        break;
    }
    vals_[size_t(id)] = r;
  }

  llvm::LLVMContext& ctx_;
  llvm::Module& mod_;
  const kir::Module& km_;
  llvm::IRBuilder<> b_;
  llvm::Function* fn_ = nullptr;
  const kir::Function* kf_ = nullptr;
  std::vector<llvm::Value*> vals_;
};

std::unique_ptr<llvm::Module> translate(llvm::LLVMContext& ctx, const kir::Module& km,
                                        const llvm::TargetMachine* tm) {
  auto mod = std::make_unique<llvm::Module>(km.name.empty() ? "minijax" : km.name, ctx);
  if (tm) {
    mod->setTargetTriple(tm->getTargetTriple().str());
    mod->setDataLayout(tm->createDataLayout());
  }
  Translator(ctx, *mod, km).run();
  std::string err;
  llvm::raw_string_ostream es(err);
  if (llvm::verifyModule(*mod, &es)) {
    // Name the first function LLVM complains about, with the equation its comment records.
    std::string where;
    for (auto& f : km.functions) {
      llvm::Function* lf = mod->getFunction(f.name);
      std::string ferr;
      llvm::raw_string_ostream fs(ferr);
      if (lf && llvm::verifyFunction(*lf, &fs)) {
        where = "function @" + f.name + (f.comment.empty() ? "" : " (" + f.comment + ")");
        break;
      }
    }
    throw CompileError("LLVM verification failed in " + (where.empty() ? std::string("module") : where) +
                       ": " + es.str());
  }
  return mod;
}

// The function an IR unit of the pass manager belongs to (a function, or a loop's), else null.
const llvm::Function* function_of(const llvm::Any& ir) {
  if (const auto* f = llvm::any_cast<const llvm::Function*>(&ir)) return *f;
  if (const auto* l = llvm::any_cast<const llvm::Loop*>(&ir)) return (*l)->getHeader()->getParent();
  return nullptr;
}

void optimize(llvm::Module& mod, llvm::TargetMachine* tm) {
  // Functions marked kLightOptAttr get the first run of each cleanup pass and skip the rest of
  // the O2 function pipeline (skippable passes only: LLVM runs the required ones regardless).
  llvm::PassInstrumentationCallbacks pic;
  std::map<std::pair<const llvm::Function*, std::string>, int> runs;
  pic.registerShouldRunOptionalPassCallback([&runs](llvm::StringRef pass, llvm::Any ir) {
    const llvm::Function* f = function_of(ir);
    if (!f || !f->hasFnAttribute(kLightOptAttr)) return true;
    static const char* const kCleanup[] = {"SROAPass", "EarlyCSEPass", "InstCombinePass", "SimplifyCFGPass"};
    for (const char* c : kCleanup)
      if (pass == c) return runs[{f, c}]++ == 0;
    return false;
  });
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  llvm::PassBuilder pb(tm, pto, std::nullopt, &pic);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  mpm.run(mod, mam);
}

}  // namespace

std::string HostTarget::str() const {
  return triple + " " + cpu + " " + features + " llvm-" + llvm_version;
}

const HostTarget& host_target() {
  static const HostTarget h = [] {
    HostTarget t;
    t.triple = llvm::sys::getProcessTriple();
    t.cpu = llvm::sys::getHostCPUName().str();
    auto feats = llvm::sys::getHostCPUFeatures();
    std::map<std::string, bool> sorted;  // deterministic order for cache keys
    for (auto& kv : feats) sorted[kv.getKey().str()] = kv.getValue();
    std::string fs;
    for (auto& [name, on] : sorted) fs += (fs.empty() ? "" : ",") + std::string(on ? "+" : "-") + name;
    t.features = fs;
    t.llvm_version = LLVM_VERSION_STRING;
    t.vector_bytes = sorted["avx512f"] ? 64 : sorted["avx"] ? 32 : 16;
    return t;
  }();
  return h;
}

struct LlvmModule::Impl {
  std::unique_ptr<llvm::TargetMachine> tm;
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> mod;
};

LlvmModule::~LlvmModule() = default;

std::unique_ptr<LlvmModule> translate_to_llvm(const kir::Module& m) {
  auto out = std::make_unique<LlvmModule>();
  out->impl = std::make_unique<LlvmModule::Impl>();
  out->impl->tm = make_target_machine();
  out->impl->mod = translate(out->impl->ctx, m, out->impl->tm.get());
  return out;
}

void optimize_llvm(LlvmModule& m) { optimize(*m.impl->mod, m.impl->tm.get()); }

std::string llvm_ir_text(const LlvmModule& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.impl->mod->print(os, nullptr);
  return s;
}

ObjectCode emit_object(LlvmModule& m) {
  llvm::SmallVector<char, 0> buf;
  {
    llvm::raw_svector_ostream os(buf);
    llvm::legacy::PassManager pm;
    if (m.impl->tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
      throw CompileError("LLVM cannot emit object code for " + host_target().triple);
    pm.run(*m.impl->mod);
  }
  ObjectCode obj;
  obj.bytes.assign(buf.begin(), buf.end());
  return obj;
}

std::string to_llvm_ir(const kir::Module& m) {
  std::unique_ptr<llvm::TargetMachine> tm = make_target_machine();
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> mod = translate(ctx, m, tm.get());
  std::string s;
  llvm::raw_string_ostream os(s);
  mod->print(os, nullptr);
  return s;
}

std::string sha256_hex(const std::string& data) {
  llvm::SHA256 h;
  h.update(llvm::StringRef(data));
  auto digest = h.final();
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (uint8_t byte : digest) {
    out += hex[byte >> 4];
    out += hex[byte & 15];
  }
  return out;
}

}  // namespace minijax
