// minijax executor (one device): argument checks, output and arena buffers from the allocator,
// donation, the entry call, and the outputs as Arrays.
#include "jit/runtime/execute.h"
#include "jit/runtime/host_callback.h"

#include <cstring>

#include "core/errors.h"
#include "jit/runtime/abi.h"
#include "jit/runtime/dnnl_ops.h"
#include "jit/runtime/profiler.h"

namespace minijax {

namespace {

// Outputs and arenas are written by the program before anything reads them: never zero-filled.
std::shared_ptr<Buffer> new_buffer(int64_t nbytes, MemoryKind kind) {
  return std::make_shared<Buffer>(size_t(nbytes), kind, kExecuteDevice, Init::uninitialized);
}

// The program's inputs as one sequence (constants, then argument leaves) without copying handles.
struct Inputs {
  std::span<const Array> consts, leaves;
  size_t size() const { return consts.size() + leaves.size(); }
  const Array& operator[](size_t i) const { return i < consts.size() ? consts[i] : leaves[i - consts.size()]; }
  const ConcreteArray& impl(size_t i) const { return *static_cast<const ConcreteArray*>((*this)[i].impl()); }
};

// Checks every input and returns its buffer (raw: the caller's Arrays keep them alive).
std::vector<Buffer*> check_inputs(const LoadedExecutable& exe, const Inputs& in, const std::string& fn,
                                  const InputNames& names, std::source_location loc) {
  const size_t n_in = exe.in_avals.size();
  auto what = [&](size_t i) { return names(i) + " (" + in[i].aval().str() + ")"; };
  if (in.size() != n_in)
    throw TypeError(fn + " takes " + std::to_string(n_in) + " inputs, got " + std::to_string(in.size()), loc);
  std::vector<Buffer*> bufs(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    const Array& a = in[i];
    if (!a.defined()) throw TypeError(fn + ": " + names(i) + " is an empty (default-constructed) Array", loc);
    if (!a.is_concrete())
      throw TypeError(fn + ": " + what(i) + " is " + (a.is_abstract() ? "abstract" : "traced") +
                          ", not a concrete Array",
                      loc);
    if (!a.aval().same_type(exe.in_avals[i]))
      throw TypeError(fn + ": " + what(i) + " does not match the compiled program's " + exe.in_avals[i].str(), loc);
    Buffer* b = in.impl(i).buffer().get();
    if (b->donated())
      throw ValueError(fn + ": " + what(i) + " was donated to an earlier call and cannot be read", loc);
    if (b->device_id() != kExecuteDevice)
      throw ValueError(fn + ": " + what(i) + " is on device " + std::to_string(b->device_id()) +
                           ", but the program runs on device " + std::to_string(kExecuteDevice) +
                           " (device_put it there, or give in_shardings on a mesh of device " +
                           std::to_string(b->device_id()) + ")",
                       loc);
    bufs[i] = b;
  }
  for (size_t i = 0; i < n_in; ++i)
    if (exe.donated[i])
      for (size_t j = 0; j < n_in; ++j)
        if (j != i && bufs[j] == bufs[i])
          throw ValueError(fn + ": " + what(i) + " is donated and its buffer is also passed as " + names(j) +
                               " (a donated buffer may be passed once per call)",
                           loc);
  return bufs;
}

}  // namespace

DonationClaims::~DonationClaims() {
  if (!committed_)
    for (Buffer* b : bufs_) b->release_donation();
}

bool DonationClaims::claim(Buffer* b) {
  if (!b->claim_donation()) return false;
  bufs_.push_back(b);
  return true;
}

void* hoisted_data(const Array& c) {
  return static_cast<const ConcreteArray*>(c.impl())->buffer()->data();
}

std::string InputNames::operator()(size_t input) const {
  if (input < num_consts) return "closed-over constant " + std::to_string(input);
  const size_t l = input - num_consts;
  if (!first_leaf) return "input " + std::to_string(input);
  for (size_t p = 0; p < nargs; ++p)
    if (l >= first_leaf[p] && l < first_leaf[p + 1]) {
      const size_t n = first_leaf[p + 1] - first_leaf[p];
      std::string s = "argument " + std::to_string(p);
      if (n > 1) s += " (leaf " + std::to_string(l - first_leaf[p]) + " of " + std::to_string(n) + ")";
      return s;
    }
  return "input " + std::to_string(input);
}

std::vector<Array> execute(const LoadedExecutable& exe, std::span<const Array> consts, std::span<const Array> leaves,
                           std::source_location loc, const InputNames& names) {
  const Inputs in{consts, leaves};
  const std::string fn = "jit '" + std::string(names.function.empty() ? std::string_view(exe.name) : names.function) + "'";
  const size_t n_in = exe.in_avals.size();
  const std::vector<Buffer*> in_bufs = check_inputs(exe, in, fn, names, loc);
  // Donated inputs are claimed before anything runs, atomically: of several calls donating one
  // Array at once, one runs and the others throw here. A call that fails before its program ran
  // releases its claims, so the caller's Arrays stay readable.
  DonationClaims claims;
  for (size_t i = 0; i < n_in; ++i)
    if (exe.donated[i] && !claims.claim(in_bufs[i]))
      throw ValueError(fn + ": " + names(i) + " (" + in[i].aval().str() +
                           ") was donated to another call and cannot be read",
                       loc);
  std::vector<void*> in_ptrs(n_in);
  for (size_t i = 0; i < n_in; ++i) in_ptrs[i] = in_bufs[i]->data();
  for (const Array& c : exe.hoisted_consts) in_ptrs.push_back(hoisted_data(c));
  // Output buffers.
  const size_t n_out = exe.out_avals.size();
  std::vector<std::shared_ptr<Buffer>> out_bufs(n_out);
  std::vector<void*> out_ptrs(n_out, nullptr);
  for (size_t k = 0; k < n_out; ++k) {
    const OutputPlan& op = exe.outputs[k];
    const ShapedArray& av = exe.out_avals[k];
    switch (op.kind) {
      case OutputPlan::fresh: out_bufs[k] = new_buffer(av.nbytes(), av.memory_kind); break;
      case OutputPlan::donated_param:  // taken over below, after the call
      case OutputPlan::param:
        if (size_t(op.index) < n_in) {
          out_bufs[k] = in.impl(size_t(op.index)).buffer();
        } else {  // a hoisted constant returned as it is: a copy (the constant stays the program's)
          out_bufs[k] = new_buffer(av.nbytes(), av.memory_kind);
          std::memcpy(out_bufs[k]->data(), in_ptrs[size_t(op.index)], size_t(av.nbytes()));
        }
        break;
      case OutputPlan::same_as: out_bufs[k] = out_bufs[size_t(op.index)]; break;
      case OutputPlan::literal: {
        out_bufs[k] = new_buffer(av.nbytes(), av.memory_kind);
        std::memcpy(out_bufs[k]->data(), op.value.raw_data(), size_t(av.nbytes()));
        break;
      }
    }
    out_ptrs[k] = out_bufs[k]->data();
  }
  std::shared_ptr<Buffer> arenas[3];
  void* arena_ptrs[3] = {nullptr, nullptr, nullptr};
  for (size_t k = 0; k < 3; ++k)
    if (exe.arena_bytes[k] > 0) {
      arenas[k] = new_buffer(exe.arena_bytes[k], MemoryKind(k));
      arena_ptrs[k] = arenas[k]->data();
    }
  DnnlScope dnnl(exe.dnnl.get());  // before the commit: making its run state may throw
  claims.commit();  // the program may overwrite donated inputs from here on
  {
    profiler::detail::KernelSitesScope sites(&exe.kernel_sites);
    HostCallbacksScope callbacks(exe.host_callbacks);
    profiler::detail::Scope trace("call", "call");
    if (trace.active()) {
      trace.set_name(fn);
      trace.set_args(profiler::detail::Args().add("device", kExecuteDevice).add("program", exe.name).take());
    }
    exe.entry(in_ptrs.data(), out_ptrs.data(), arena_ptrs);
    callbacks.rethrow_if_failed();  // a debug callback's exception, as the callback threw it
  }
  if (std::string err = take_runtime_error(); !err.empty()) throw ValueError(fn + " failed: " + err, loc);
  // Donated inputs are consumed: an output in a donated input's buffer takes its bytes over (the
  // caller's Array then throws when read); a donated input no output reuses is invalidated too.
  bool any_donated = false;
  for (size_t i = 0; i < n_in; ++i) any_donated |= bool(exe.donated[i]);
  if (any_donated) {
    std::vector<std::shared_ptr<Buffer>> taken(n_in);
    for (size_t k = 0; k < n_out; ++k) {
      const OutputPlan& op = exe.outputs[k];
      const OutputPlan& src_plan = op.kind == OutputPlan::same_as ? exe.outputs[size_t(op.index)] : op;
      if (src_plan.kind != OutputPlan::donated_param) continue;
      const size_t src = size_t(src_plan.index);
      if (!taken[src]) taken[src] = Buffer::take(*in_bufs[src]);
      out_bufs[k] = taken[src];
    }
    for (size_t i = 0; i < n_in; ++i)
      if (exe.donated[i] && !taken[i]) in_bufs[i]->mark_donated();
  }
  std::vector<Array> outs;
  outs.reserve(n_out);
  for (size_t k = 0; k < n_out; ++k) outs.push_back(Array::from_buffer(exe.out_avals[k], std::move(out_bufs[k])));
  return outs;
}

std::vector<Array> execute(const LoadedExecutable& exe, const std::vector<Array>& args, std::source_location loc) {
  return execute(exe, std::span<const Array>(args), {}, loc, InputNames{});
}

}  // namespace minijax
