// minijax program rules of the data-movement and device primitives: bitcast_convert_type (a view),
// device_put and sharding_constraint (views, or mj_rt_copy across memory kinds), the collectives
// (on one device: copies; in an SPMD program over several: mj_rt_collective / mj_rt_axis_index
// calls by site), and custom_lin (rejected as eager rejects it).
#include <algorithm>

#include "core/collective_params.h"
#include "core/collectives.h"
#include "core/errors.h"
#include "core/primitive.h"
#include "core/views/collectives.h"
#include "core/views/memory_ops.h"
#include "jit/codegen/lower/program.h"

namespace minijax::lower {

using kir::Value;

namespace {

// Output k is input k's bytes: an alias the buffer plan made (memory/buffer_rules.cc), copied
// only when the plan placed them apart (program.cc's lower_view).
void alias_outputs(ProgramEmitter& pe, const Eqn& e) {
  for (size_t k = 0; k < e.outputs.size(); ++k) {
    if (e.outputs[k].aval().is_token()) continue;
    pe.copy_atom(pe.addr(e.outputs[k]), e.inputs.at(k));
  }
}

// bitcast_convert_type: row-major bytes are the same whatever the shape (eager: one memcpy).
void lower_bitcast(ProgramEmitter& pe, const Eqn& e) {
  alias_outputs(pe, e);
  pe.note(e, "view", "reinterprets its operand's bytes");
}

// The copy of operand 0 into output 0 across memory kinds through runtime function `fn`
// (mj_rt_copy: waited for; mj_rt_copy_start: enqueued on the copy engine); a literal is stored.
void emit_copy(ProgramEmitter& pe, const Eqn& e, const char* fn) {
  const ShapedArray& in = atom_aval(e.inputs.at(0));
  const ShapedArray& out = e.outputs.at(0).aval();
  Value dst = pe.addr(e.outputs[0]);
  if (auto* l = std::get_if<Literal>(&e.inputs[0])) {
    pe.store_literal(dst, *l);
  } else {
    pe.call_runtime(fn, kir::kVoid, {kir::kPtr, kir::kI32, kir::kPtr, kir::kI32, kir::kI64},
                    {dst, pe.b.i32(int32_t(out.memory_kind)), pe.addr(e.inputs[0]), pe.b.i32(int32_t(in.memory_kind)),
                     pe.b.i64(out.nbytes())});
  }
  pe.note(e, "runtime call", std::string(fn) + " " + memory_kind_name(in.memory_kind) + " -> " +
                                 memory_kind_name(out.memory_kind) + ", " + std::to_string(out.nbytes()) + " B");
}

// device_put / sharding_constraint: the identity within one memory kind (a view); across kinds a
// copy through the runtime (eager device_put: a memcpy into a buffer of the new kind). On one
// device a sharding is only its memory kind.
void lower_memory_move(ProgramEmitter& pe, const Eqn& e) {
  if (atom_aval(e.inputs.at(0)).memory_kind == e.outputs.at(0).aval().memory_kind) {
    alias_outputs(pe, e);
    pe.note(e, "view", "same memory kind: aliases its operand");
    return;
  }
  emit_copy(pe, e, "mj_rt_copy");
}

// copy_start: device_put's copy, enqueued on the device's copy engine (jit/runtime/copy_engine.h)
// and not waited for; copy_done waits for it (keyed by the destination's address, so the code
// carries no handle).
void lower_copy_start(ProgramEmitter& pe, const Eqn& e) { emit_copy(pe, e, "mj_rt_copy_start"); }

void lower_copy_done(ProgramEmitter& pe, const Eqn& e) {
  Value dst = pe.addr(e.inputs.at(0));
  pe.call_runtime("mj_rt_copy_done", kir::kVoid, {kir::kPtr}, {dst});
  pe.copy_atom(pe.addr(e.outputs[0]), e.inputs[0]);  // the same buffer (its buffer rule): no copy
  pe.note(e, "runtime call", "mj_rt_copy_done: waits for its copy's start");
}

// The i64 value of an integer scalar atom (a literal, or an i32/u32 buffer).
Value index_value(ProgramEmitter& pe, const Atom& a) {
  if (auto* l = std::get_if<Literal>(&a)) return pe.b.i64(int64_t(l->value.item<double>()));
  const bool is_unsigned = atom_aval(a).dtype == DType::u32;
  return pe.b.cast(is_unsigned ? kir::Op::ZExt : kir::Op::SExt, kir::kI64, pe.b.load(kir::kI32, pe.addr(a), pe.b.i64(0)));
}

// copy_slice_start(x, i) / copy_update_start(r, u, i): index i of a stacked buffer along `axis`,
// copied to a new buffer / from an update, on the device's copy engine (mj_rt_copy_slice_start:
// `count` chunks of `chunk` bytes, one strided copy).
void lower_slice_copy(ProgramEmitter& pe, const Eqn& e, bool update) {
  const ShapedArray& stacked = update ? e.outputs[0].aval() : atom_aval(e.inputs.at(0));
  const CopyParams copy = copy_params(e);
  const int64_t axis = copy.axis;
  int64_t count = 1, chunk = int64_t(itemsize(stacked.dtype));
  for (int64_t d = 0; d < axis; ++d) count *= stacked.shape[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < stacked.shape.size(); ++d) chunk *= stacked.shape[d];
  const int64_t extent = stacked.shape[size_t(axis)];
  Value dst = pe.addr(e.outputs[0]);
  if (update) pe.copy_atom(dst, e.inputs[0]);  // in place when the plan put them together
  const Atom& src = e.inputs.at(update ? 1 : 0);
  const MemoryKind src_kind = atom_aval(src).memory_kind, dst_kind = e.outputs[0].aval().memory_kind;
  pe.call_runtime("mj_rt_copy_slice_start", kir::kVoid,
                  {kir::kPtr, kir::kI32, kir::kPtr, kir::kI32, kir::kI64, kir::kI64, kir::kI64, kir::kI64, kir::kI32},
                  {dst, pe.b.i32(int32_t(dst_kind)), pe.addr(src), pe.b.i32(int32_t(src_kind)),
                   index_value(pe, e.inputs.back()), pe.b.i64(extent), pe.b.i64(count), pe.b.i64(chunk),
                   pe.b.i32(update ? 1 : 0)});
  const int64_t k = copy.slice_count();
  pe.note(e, "runtime call",
          std::string("mj_rt_copy_slice_start ") + memory_kind_name(src_kind) + " -> " + memory_kind_name(dst_kind) +
              ", " + std::to_string(count * chunk) + " B" + (count > 1 ? " strided (" + std::to_string(count) + " x " + std::to_string(chunk) + " B)" : std::string()) +
              (k > 1 ? ", " + std::to_string(k) + " slices per copy" : std::string()));
}

// allocate_buffer: no code; its value is only a loop carry's initial contents, never read.
void lower_allocate_buffer(ProgramEmitter& pe, const Eqn& e) {
  pe.note(e, "view", "no bytes of its own: the loop that carries it writes every slice before reading it");
}

// ---- collectives of an SPMD program -------------------------------------------------------------
// A program compiled for a mesh (ProgramEmitter::collective_sites set) runs on every device of the
// mesh at once: a collective over more than one device is a call of the runtime, which joins the
// calling device's group through the communicator (jit/runtime/spmd_context.cc) and returns when
// this device's result is in the output buffer. The call names the equation's site index; the
// executor keeps the sites' descriptors, so the object code holds no addresses.

// The collective of an SPMD program's equation (its params and its operands' avals); the ragged
// index tables are left empty (run-time values: mj_rt_collective fills them per call).
CollectiveOp collective_of(const Eqn& e) {
  using View = CollectiveParams::Kind;
  const std::optional<View> view = CollectiveParams::kind_of(e);
  if (!view || *view == View::axis_index || e.inputs.empty())
    throw ValueError("lower: equation " + (e.primitive ? e.primitive->name : std::string("<none>")) +
                     " is not a collective that moves data");
  const CollectiveParams p = collective_params(e);
  const ShapedArray& x = atom_aval(e.inputs[0]);
  CollectiveOp op;
  op.dtype = x.dtype;
  op.shape = x.shape;
  switch (p.kind) {
    case View::all_gather:
      op.kind = CollectiveKind::all_gather;
      op.gather_dimension = p.gather_dimension;
      op.tiled = p.tiled;
      break;
    case View::all_reduce:
      op.kind = CollectiveKind::all_reduce;
      op.reduction = p.reduction;
      break;
    case View::reduce_scatter:
      op.kind = CollectiveKind::reduce_scatter;
      op.scatter_dimension = p.scatter_dimension;
      break;
    case View::all_to_all:
      op.kind = CollectiveKind::all_to_all;
      op.split_dimension = p.split_dimension;
      op.concat_dimension = p.concat_dimension;
      break;
    case View::collective_permute:
      op.kind = CollectiveKind::collective_permute;
      op.source_target_pairs = p.source_target_pairs;
      break;
    case View::ragged_all_to_all:
      op.kind = CollectiveKind::ragged_all_to_all;
      if (e.inputs.size() != 6) throw ValueError("lower: ragged_all_to_all takes 6 operands");
      op.output_shape = atom_aval(e.inputs[1]).shape;
      break;
    case View::axis_index: break;
  }
  return op;
}

bool spmd_collective(const ProgramEmitter& pe, const Eqn& e) {
  return pe.collective_sites && collective_params(e).axis_size > 1;
}

int32_t add_site(ProgramEmitter& pe, const Eqn& e) { return pe.collective_site(e); }

}  // namespace

CollectiveSiteSpec describe_collective_site(const Eqn& e, const std::string& program) {
  if (e.site < 0)
    throw ValueError("lower: internal error: collective " + e.primitive->name + " of SPMD program '" + program +
                     "' has no site id (number_collective_sites runs after partition_spmd, "
                     "and every later pass must carry Eqn::site)");
  const CollectiveParams c = collective_params(e);
  CollectiveSiteSpec s;
  s.site_id = e.site;
  s.primitive = e.primitive->name;
  s.is_axis_index = !c.moves_data();
  s.axes = c.axis_name;
  s.axis_size = c.axis_size;
  if (!s.is_axis_index) {
    s.op = collective_of(e);
    for (const Atom& in : e.inputs) s.operand_bytes.push_back(atom_aval(in).nbytes());
    s.result_bytes = e.outputs.at(0).aval().nbytes();
  }
  return s;
}

namespace {

// mj_rt_collective(site, out, in0 .. in5): up to six operand addresses (ragged_all_to_all has
// six), unused ones repeat the output's.
void lower_spmd_collective(ProgramEmitter& pe, const Eqn& e) {
  const int32_t site = add_site(pe, e);
  kir::Value out = pe.addr(e.outputs.at(0));
  std::vector<Value> args{pe.b.i32(site), out};
  for (size_t k = 0; k < 6; ++k) args.push_back(k < e.inputs.size() ? pe.addr(e.inputs[k]) : out);
  std::vector<kir::Type> params{kir::kI32};
  params.insert(params.end(), 7, kir::kPtr);
  pe.call_runtime("mj_rt_collective", kir::kVoid, params, args);
  const CollectiveParams c = collective_params(e);
  pe.note(e, "runtime call", "mj_rt_collective site " + std::to_string(site) + " over axis " +
                                 param_to_string(axis_name_param(c.axis_name)) + " of " +
                                 std::to_string(c.axis_size) + " devices (communicator)");
}

// ---- collectives on one device ----------------------------------------------------------------
// A program compiled by mj::jit without shardings runs on one device: every collective's group is
// that device alone, so its axis_size must be 1, and the result is what the SPMD executor
// (jit/reference/reference_executor.cc) computes on a mesh of one device. (Eager evaluation refuses
// collectives outside the SPMD executor.) A larger axis_size is a ValueError at compile time.

void check_one_device(const Eqn& e) {
  const CollectiveParams c = collective_params(e);
  if (!c.moves_data()) return;
  const int64_t n = c.axis_size;
  if (n != 1)
    throw ValueError("collective " + e.primitive->name + " over axis " + param_to_string(axis_name_param(c.axis_name)) +
                     " with axis_size=" + std::to_string(n) +
                     " in a program compiled for one device (mj::jit without shardings): its group holds "
                     "one device, so axis_size must be 1; give the jit shardings to run it on a mesh");
}

// all_gather, all_reduce, reduce_scatter, all_to_all over one device: the operand itself (the
// same bytes in the tiled/untiled/split/concat shape).
void lower_identity_collective(ProgramEmitter& pe, const Eqn& e) {
  if (spmd_collective(pe, e)) return lower_spmd_collective(pe, e);
  check_one_device(e);
  alias_outputs(pe, e);
  pe.note(e, "view", "group of one device: the operand itself");
}

// collective_permute over one device: the operand when the pairs send rank 0 to itself, zeros
// otherwise (no source targets rank 0).
void lower_collective_permute(ProgramEmitter& pe, const Eqn& e) {
  if (spmd_collective(pe, e)) return lower_spmd_collective(pe, e);
  check_one_device(e);
  const std::vector<int64_t> st = collective_params(e).source_target_pairs;
  bool self = false;
  for (size_t i = 0; i + 1 < st.size(); i += 2) self |= st[i] == 0 && st[i + 1] == 0;
  if (self) {
    alias_outputs(pe, e);
    pe.note(e, "view", "group of one device, pair (0, 0): the operand itself");
    return;
  }
  const int64_t bytes = e.outputs[0].aval().nbytes();
  if (bytes > 0) pe.b.memset(pe.addr(e.outputs[0]), pe.b.const_int(kir::kI8, 0), pe.b.i64(bytes));
  pe.note(e, "view", "group of one device, no pair targets rank 0: zeros");
}

// axis_index on one device: coordinate 0; in an SPMD program the calling device's rank along the
// axes, from the runtime (mj_rt_axis_index).
void lower_axis_index(ProgramEmitter& pe, const Eqn& e) {
  if (pe.collective_sites) {
    const int32_t site = add_site(pe, e);
    kir::Value r = pe.call_runtime("mj_rt_axis_index", kir::kI32, {kir::kI32}, {pe.b.i32(site)});
    pe.b.store(pe.addr(e.outputs[0]), pe.b.i64(0), r);
    pe.note(e, "runtime call", "mj_rt_axis_index site " + std::to_string(site) + ": the device's rank");
    return;
  }
  pe.b.store(pe.addr(e.outputs[0]), pe.b.i64(0), pe.b.i32(0));
  pe.note(e, "constant", "one device: index 0");
}

// ragged_all_to_all over one device: `output` with rank 0's rows of `input` written into it,
// checked and copied by the runtime (mj_rt_ragged_all_to_all_local).
void lower_ragged_all_to_all(ProgramEmitter& pe, const Eqn& e) {
  if (spmd_collective(pe, e)) return lower_spmd_collective(pe, e);
  check_one_device(e);
  const ShapedArray& in = atom_aval(e.inputs[0]);
  const ShapedArray& out = e.outputs[0].aval();
  Value dst = pe.addr(e.outputs[0]);
  pe.copy_atom(dst, e.inputs[1]);
  const int64_t rows = out.shape.at(0);
  const int64_t row_bytes = rows ? out.nbytes() / rows : 0;
  std::vector<Value> args{dst, pe.b.i64(rows), pe.addr(e.inputs[0]), pe.b.i64(in.shape.at(0)), pe.b.i64(row_bytes)};
  for (size_t k = 2; k < 6; ++k) args.push_back(pe.addr(e.inputs[k]));
  pe.call_runtime("mj_rt_ragged_all_to_all_local", kir::kVoid,
                  {kir::kPtr, kir::kI64, kir::kPtr, kir::kI64, kir::kI64, kir::kPtr, kir::kPtr, kir::kPtr, kir::kPtr},
                  args);
  pe.note(e, "runtime call", "mj_rt_ragged_all_to_all_local (group of one device)");
}

// debug_callback (debug::print, debug::callback): a call of the runtime with the operands'
// addresses (mj_rt_host_callback), which copies their values into Arrays and calls the host
// function of the program's site table. The call stays where the program has it, so callbacks run
// in program order; in an SPMD program its operands are replicated (its sharding rule) and the
// mesh's first device alone calls it (jit/runtime/execute_spmd.cc), so ordered ones keep order too.
void lower_debug_callback(ProgramEmitter& pe, const Eqn& e) {
  const int32_t site = pe.host_callback_site(e);
  const Value slot = pe.b.function_stack_slot(kir::kPtr, std::max<int64_t>(1, int64_t(e.inputs.size())));
  for (size_t k = 0; k < e.inputs.size(); ++k) pe.b.store(slot, pe.b.i64(int64_t(k)), pe.addr(e.inputs[k]));
  pe.call_runtime("mj_rt_host_callback", kir::kVoid, {kir::kI32, kir::kPtr}, {pe.b.i32(site), slot});
  pe.note(e, "runtime call", "mj_rt_host_callback site " + std::to_string(site) + " (" +
                                 std::to_string(e.inputs.size()) + " operand(s))");
}

// custom_lin is the tangent of a custom_vjp function; a program holding one applied forward-mode
// autodiff to it (e.g. jit of jvp), which eager evaluation rejects with NotDifferentiableError.
// The compiled program rejects it the same way, with eager's own error (custom_lin's impl).
void lower_custom_lin(ProgramEmitter&, const Eqn& e) {
  if (e.primitive->impl) (void)e.primitive->impl({}, e.params, {});
  throw ValueError("custom_lin cannot be compiled: forward-mode autodiff was applied to a custom_vjp function");
}

const RegisterProgramRule reg_bitcast("bitcast_convert_type", "view", lower_bitcast);
const RegisterProgramRule reg_device_put("device_put", "view or runtime call", lower_memory_move);
const RegisterProgramRule reg_copy_start("copy_start", "runtime call", lower_copy_start);
const RegisterProgramRule reg_copy_done("copy_done", "runtime call", lower_copy_done);
const RegisterProgramRule reg_copy_slice_start("copy_slice_start", "runtime call",
                                               [](ProgramEmitter& pe, const Eqn& e) { lower_slice_copy(pe, e, false); });
const RegisterProgramRule reg_copy_update_start("copy_update_start", "runtime call",
                                                [](ProgramEmitter& pe, const Eqn& e) { lower_slice_copy(pe, e, true); });
const RegisterProgramRule reg_allocate_buffer("allocate_buffer", "view", lower_allocate_buffer);
const RegisterProgramRule reg_constraint("sharding_constraint", "view or runtime call", lower_memory_move);
const RegisterProgramRule reg_all_gather("all_gather", "view or runtime call", lower_identity_collective);
const RegisterProgramRule reg_all_reduce("all_reduce", "view or runtime call", lower_identity_collective);
const RegisterProgramRule reg_reduce_scatter("reduce_scatter", "view or runtime call", lower_identity_collective);
const RegisterProgramRule reg_all_to_all("all_to_all", "view or runtime call", lower_identity_collective);
const RegisterProgramRule reg_permute("collective_permute", "view or runtime call", lower_collective_permute);
const RegisterProgramRule reg_axis_index("axis_index", "constant or runtime call", lower_axis_index);
const RegisterProgramRule reg_ragged("ragged_all_to_all", "runtime call", lower_ragged_all_to_all);
const RegisterProgramRule reg_debug_callback("debug_callback", "runtime call", lower_debug_callback);
const RegisterProgramRule reg_custom_lin("custom_lin", "rejected (as eager: forward-mode autodiff of custom_vjp)",
                                         lower_custom_lin);

}  // namespace

}  // namespace minijax::lower
