// minijax SPMD device context: binding collective sites to a mesh (groups and ranks per position),
// the thread-local device context, and the runtime calls mj_rt_collective / mj_rt_axis_index.
#include "jit/runtime/spmd_context.h"

#include <cstring>

#include "core/collective_params.h"
#include "core/collectives.h"
#include "core/errors.h"
#include "core/profiler_hooks.h"
#include "sharding/collective_groups.h"

namespace minijax {

namespace {
thread_local SpmdDeviceContext* tls_context = nullptr;
}  // namespace

void set_spmd_context(SpmdDeviceContext* ctx) { tls_context = ctx; }

int current_device_id() { return tls_context ? tls_context->device_id : 0; }

std::vector<CollectiveSite> bind_collective_sites(const std::vector<CollectiveSiteSpec>& sites,
                                                  const Mesh& mesh, std::source_location loc) {
  std::vector<CollectiveSite> out;
  for (const CollectiveSiteSpec& spec : sites) {
    CollectiveSite s;
    s.site_id = spec.site_id;
    s.primitive = spec.primitive;
    s.axes = spec.axes;
    s.is_axis_index = spec.is_axis_index;
    CollectiveGroups g = collective_groups(mesh, s.axes);
    if (!s.is_axis_index && spec.axis_size != g.size)
      throw ShardingError(s.primitive + ": axis_size=" + std::to_string(spec.axis_size) + " but the axes " +
                              axis_names_str(spec.axes) + " of " + mesh.str() + " hold " +
                              std::to_string(g.size) + " devices",
                          loc);
    s.context = mesh.device_ids;
    s.group.resize(mesh.num_devices());
    s.rank.resize(mesh.num_devices());
    for (auto& members : g.members) {
      std::vector<int> ids;
      for (size_t pos : members) ids.push_back(mesh.device_ids[pos]);
      for (size_t pos : members) s.group[pos] = ids;
    }
    for (size_t pos = 0; pos < mesh.num_devices(); ++pos) s.rank[pos] = int32_t(g.rank[pos]);
    if (!s.is_axis_index) {
      s.op = spec.op;
      s.operand_bytes = spec.operand_bytes;
      s.result_bytes = spec.result_bytes;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace minijax

namespace {

using namespace minijax;

// The operands of one call of a site as the communicator takes them.
CollectiveBuffers buffers_of(const CollectiveSite& s, CollectiveOp& op, void* out, const void* const* in) {
  CollectiveBuffers b;
  b.recv = out;
  b.recv_bytes = s.result_bytes;
  if (s.op.kind == CollectiveKind::ragged_all_to_all) {
    b.send = {{in[0], s.operand_bytes[0]}, {in[1], s.operand_bytes[1]}};
    std::vector<int32_t>* tables[4] = {&op.input_offsets, &op.send_sizes, &op.output_offsets, &op.recv_sizes};
    for (size_t k = 0; k < 4; ++k) {
      const auto* p = static_cast<const int32_t*>(in[2 + k]);
      tables[k]->assign(p, p + s.operand_bytes[2 + k] / int64_t(sizeof(int32_t)));
    }
  } else {
    b.send = {{in[0], s.operand_bytes.at(0)}};
  }
  return b;
}

// The device's collective event (from its start to its result): the site's primitive, op, group
// and the bytes this device sent and received.
void trace_site(profiler::detail::Scope& trace, const CollectiveSite& s, const SpmdDeviceContext& ctx,
                int32_t site) {
  profiler::detail::Args a;
  std::string group = "[";
  for (int d : s.group[ctx.position]) group += (group.size() > 1 ? ", " : "") + std::to_string(d);
  a.add("op", s.op.str())
      .add("site", int64_t(site))
      .add("group", group + "]")
      .add("rank", int64_t(s.rank[ctx.position]));
  a.add("device", ctx.device_id).add("bytes_sent", ctx.traffic.back().moved.bytes_sent);
  a.add("bytes_received", ctx.traffic.back().moved.bytes_received);
  trace.set_name(s.primitive);
  trace.set_args(a.take());
}

// The site `site` of the calling device's program, or null after recording the internal error of
// a site outside the program's table (the communicator is aborted, so every device's run fails).
const CollectiveSite* site_or_fail(SpmdDeviceContext& ctx, int32_t site) {
  if (site >= 0 && size_t(site) < ctx.sites->size()) return &(*ctx.sites)[size_t(site)];
  if (!ctx.error) {
    const std::string program = ctx.program ? *ctx.program : std::string();
    ctx.error = std::make_exception_ptr(Error("internal error: collective site " + std::to_string(site) +
                                              " is not in the site table of program '" + program + "' (" +
                                              std::to_string(ctx.sites->size()) +
                                              " sites): the compiled code and its table disagree"));
    communicator().abort(ctx.error);
  }
  return nullptr;
}

}  // namespace

extern "C" void mj_rt_collective(int32_t site, void* out, const void* in0, const void* in1, const void* in2,
                                 const void* in3, const void* in4, const void* in5) {
  SpmdDeviceContext* ctx = tls_context;
  if (!ctx || !ctx->sites) return;
  if (ctx->error) return;  // an earlier collective failed: the run's result is discarded
  const CollectiveSite* found = site_or_fail(*ctx, site);
  if (!found) return;
  const CollectiveSite& s = *found;
  const void* in[6] = {in0, in1, in2, in3, in4, in5};
  profiler::detail::Scope trace("collective", "collective");
  try {
    CollectiveOp op = s.op;
    CollectiveBuffers bufs = buffers_of(s, op, out, in);
    const CollectiveCounters before = collective_stats(ctx->device_id);
    Event done = communicator().start(op, ctx->device_id, bufs, s.group[ctx->position], s.context);
    done.wait();
    const CollectiveCounters after = collective_stats(ctx->device_id);
    ctx->traffic.push_back(
        {site,
         {after.bytes_sent - before.bytes_sent, after.bytes_received - before.bytes_received,
          after.messages - before.messages}});
    if (trace.active()) trace_site(trace, s, *ctx, site);
  } catch (...) {
    ctx->error = std::current_exception();
    communicator().abort(ctx->error, s.context);
  }
}

extern "C" int32_t mj_rt_axis_index(int32_t site) {
  SpmdDeviceContext* ctx = tls_context;
  if (!ctx || !ctx->sites) return 0;
  const CollectiveSite* s = site_or_fail(*ctx, site);
  return s ? s->rank[ctx->position] : 0;
}
