// minijax code generation: a KIR module translated to LLVM IR, verified, optimized at O2 for the
// host CPU and compiled to an object file. One of the two files that include LLVM headers.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/errors.h"
#include "jit/codegen/kir.h"

namespace minijax {

/// An LLVM verification or code-generation failure: names the KIR function (and through its
/// comment the jaxpr equation it lowers) and LLVM's message. Thrown by the LLVM stages below.
class CompileError : public Error { using Error::Error; };

/// The host the code is generated for: LLVM's target triple, CPU name and feature string, the
/// widest native vector register in bytes (64 with AVX-512, 32 with AVX2, 16 otherwise) and
/// LLVM's version. `str()` is part of every persistent-cache key.
struct HostTarget {
  std::string triple, cpu, features, llvm_version;
  int vector_bytes = 16;
  std::string str() const;
};
/// The host's description (computed once).
const HostTarget& host_target();

/// Relocatable object code of one module, as LLVM's code generator wrote it (ELF on Linux).
struct ObjectCode {
  std::vector<char> bytes;
};

/// An LLVM module being compiled, with its own LLVMContext and target machine for the host CPU:
/// what the pipeline's llvm_translate, llvm_optimize and llvm_codegen stages hand each other.
class LlvmModule {
 public:
  ~LlvmModule();
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// The llvm_translate stage: `m` as LLVM IR, verified. Throws CompileError naming the KIR
/// function (and through its comment the equation) with LLVM's message.
std::unique_ptr<LlvmModule> translate_to_llvm(const kir::Module& m);
/// The llvm_optimize stage: LLVM's O2 pipeline for the host CPU (host_target()), with loop and
/// SLP vectorization. No fast-math flags are set: results are IEEE-exact per operation.
void optimize_llvm(LlvmModule& m);
/// The module's LLVM IR as text.
std::string llvm_ir_text(const LlvmModule& m);
/// The llvm_codegen stage: the module's object code. CompileError when LLVM cannot emit it.
ObjectCode emit_object(LlvmModule& m);

/// The unoptimized LLVM IR of `m` as text (for tests and dumps). Throws CompileError as above.
std::string to_llvm_ir(const kir::Module& m);

/// SHA-256 of `data` as 64 lowercase hex digits (LLVM's implementation of FIPS 180-4).
std::string sha256_hex(const std::string& data);

}  // namespace minijax
