// minijax executor (one device): argument checks, output and arena buffers from the allocator,
// donation, the entry call, and the outputs as Arrays.
#include "jit/runtime/execute.h"

#include <cstring>

#include "core/errors.h"
#include "jit/runtime/abi.h"

namespace minijax {

namespace {

// Outputs and arenas are written by the program before anything reads them: never zero-filled.
std::shared_ptr<Buffer> new_buffer(int64_t nbytes, MemoryKind kind) {
  return std::make_shared<Buffer>(size_t(nbytes), kind, 0, Init::uninitialized);
}

}  // namespace

std::vector<Array> execute(const Executable& exe, const std::vector<Array>& args, std::source_location loc) {
  const size_t n_in = exe.in_avals.size();
  if (args.size() != n_in)
    throw TypeError("compiled '" + exe.name + "' takes " + std::to_string(n_in) + " arguments, got " +
                    std::to_string(args.size()), loc);
  std::vector<std::shared_ptr<Buffer>> in_bufs(n_in);
  std::vector<void*> in_ptrs(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    const Array& a = args[i];
    if (!a.is_concrete()) throw TypeError("compiled '" + exe.name + "': argument " + std::to_string(i) + " is not concrete", loc);
    if (!a.aval().same_type(exe.in_avals[i]))
      throw TypeError("compiled '" + exe.name + "': argument " + std::to_string(i) + " is " + a.aval().str() +
                      ", the program was compiled for " + exe.in_avals[i].str(), loc);
    in_bufs[i] = a.concrete_impl(loc).buffer();
    if (in_bufs[i]->donated())
      throw ValueError("compiled '" + exe.name + "': argument " + std::to_string(i) + " (" + a.aval().str() +
                       ") was donated to an earlier call and cannot be read", loc);
    in_ptrs[i] = in_bufs[i]->data();
  }
  for (size_t i = 0; i < n_in; ++i)
    if (exe.plan.donated[i])
      for (size_t j = 0; j < n_in; ++j)
        if (j != i && in_bufs[j] == in_bufs[i])
          throw ValueError("compiled '" + exe.name + "': argument " + std::to_string(i) +
                           " is donated and also passed as argument " + std::to_string(j) +
                           " (a donated buffer may be passed once)", loc);
  // Output buffers.
  const size_t n_out = exe.out_avals.size();
  std::vector<std::shared_ptr<Buffer>> out_bufs(n_out);
  std::vector<void*> out_ptrs(n_out, nullptr);
  for (size_t k = 0; k < n_out; ++k) {
    const OutputPlan& op = exe.plan.outputs[k];
    const ShapedArray& av = exe.out_avals[k];
    switch (op.kind) {
      case OutputPlan::fresh: out_bufs[k] = new_buffer(av.nbytes(), av.memory_kind); break;
      case OutputPlan::donated_param:  // taken over below, after the call
      case OutputPlan::param: out_bufs[k] = in_bufs[size_t(op.index)]; break;
      case OutputPlan::same_as: out_bufs[k] = out_bufs[size_t(op.index)]; break;
      case OutputPlan::literal: {
        out_bufs[k] = new_buffer(av.nbytes(), av.memory_kind);
        std::memcpy(out_bufs[k]->data(), op.lit.value.raw_data(), size_t(av.nbytes()));
        break;
      }
    }
    out_ptrs[k] = out_bufs[k]->data();
  }
  std::vector<std::shared_ptr<Buffer>> arenas(3);
  std::vector<void*> arena_ptrs(3, nullptr);
  for (size_t k = 0; k < 3; ++k)
    if (exe.plan.arena_bytes[k] > 0) {
      arenas[k] = new_buffer(exe.plan.arena_bytes[k], MemoryKind(k));
      arena_ptrs[k] = arenas[k]->data();
    }
  exe.entry(in_ptrs.data(), out_ptrs.data(), arena_ptrs.data());
  if (std::string err = take_runtime_error(); !err.empty())
    throw ValueError("compiled '" + exe.name + "' failed: " + err, loc);
  // Donated inputs are consumed: an output in a donated input's buffer takes its bytes over (the
  // caller's Array then throws when read); a donated input no output reuses is invalidated too.
  std::vector<std::shared_ptr<Buffer>> taken(n_in);
  for (size_t k = 0; k < n_out; ++k) {
    const OutputPlan& op = exe.plan.outputs[k];
    size_t src = op.kind == OutputPlan::same_as ? size_t(exe.plan.outputs[size_t(op.index)].index) : size_t(op.index);
    OutputPlan::Kind kind = op.kind == OutputPlan::same_as ? exe.plan.outputs[size_t(op.index)].kind : op.kind;
    if (kind != OutputPlan::donated_param) continue;
    if (!taken[src]) taken[src] = Buffer::take(*in_bufs[src]);
    out_bufs[k] = taken[src];
  }
  for (size_t i = 0; i < n_in; ++i)
    if (exe.plan.donated[i] && !taken[i]) in_bufs[i]->mark_donated();
  std::vector<Array> outs;
  outs.reserve(n_out);
  for (size_t k = 0; k < n_out; ++k) outs.push_back(Array::from_buffer(exe.out_avals[k], out_bufs[k]));
  return outs;
}

}  // namespace minijax
