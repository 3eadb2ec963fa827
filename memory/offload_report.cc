// minijax host offload report: walks a scheduled program (bodies too, with their trip counts) for
// its host buffers and copy sites, and prints them as the "# host offload" part of as_text.
#include "memory/offload_report.h"

#include <sstream>

#include "core/bodies.h"
#include "core/primitive.h"
#include "core/views/control_flow.h"
#include "core/views/memory_ops.h"

namespace minijax {

namespace {

bool is_host(MemoryKind k) { return k != MemoryKind::device; }

void walk(const Jaxpr& j, int64_t runs, int64_t loop_length, bool conditional, const std::string& where,
          OffloadReport& r) {
  for (const Eqn& e : j.eqns) {
    const std::string& n = e.primitive->name;
    const std::optional<CopyParams::Kind> copy = CopyParams::kind_of(e);
    if (ScanParams::is(e) || (copy && *copy != CopyParams::Kind::update_start))
      for (const Var& o : e.outputs)
        if (is_host(o.aval().memory_kind) && !o.is_dropvar()) r.host_buffers.push_back(o.aval());
    if (copy) {
      const CopyParams cp = copy_params(e);
      OffloadCopy c;
      c.primitive = n;
      const bool update = cp.kind == CopyParams::Kind::update_start;
      const ShapedArray& src = atom_aval(e.inputs.at(update ? 1 : 0));
      c.from = src.memory_kind;
      c.to = e.outputs[0].aval().memory_kind;
      c.bytes = src.nbytes();
      if (cp.kind == CopyParams::Kind::slice_start) c.bytes = e.outputs[0].aval().nbytes();
      c.slices = cp.slice_count();
      if (cp.kind != CopyParams::Kind::start) {
        const ShapedArray& stacked = update ? e.outputs[0].aval() : src;
        for (int64_t d = 0; d < cp.axis; ++d) c.chunks *= stacked.shape[size_t(d)];
      }
      c.runs = runs;
      const bool pipelined = cp.is_pipelined() && loop_length > 0;
      c.copying = pipelined ? runs - runs / loop_length : runs;
      c.conditional = conditional;
      c.where = where;
      r.copies.push_back(c);
    }
    if (ScanParams::is(e)) {
      const ScanParams sp = scan_params(e);
      const int64_t len = sp.length;
      std::string w = "scan(length=" + std::to_string(len) + (sp.reverse ? ", reverse" : "") + ")";
      if (where != "top level") w += " in " + where;
      walk(*sp.jaxpr->jaxpr, runs * len, len, conditional, w, r);
      continue;
    }
    // A cond's branch or a while's bodies may not run (or run an unknown number of times).
    const BodyForm form = e.primitive->body_form;
    const bool cond_body = conditional || form == BodyForm::cond || form == BodyForm::while_loop;
    for (const SubJaxpr& b : subjaxprs(e)) walk(*b.jaxpr->jaxpr, runs, loop_length, cond_body, n + " in " + where, r);
  }
}

}  // namespace

int64_t OffloadReport::host_bytes() const {
  int64_t b = 0;
  for (const ShapedArray& a : host_buffers) b += a.nbytes();
  return b;
}

std::string OffloadReport::str() const {
  if (copies.empty()) return "";
  std::ostringstream os;
  int64_t moved = 0, bytes = 0, conditional = 0;
  for (const OffloadCopy& c : copies) {
    if (c.conditional) ++conditional;
    else moved += c.copying, bytes += c.copying * c.bytes;
  }
  os << "# host offload: " << host_buffers.size() << " host buffer(s), " << host_bytes() << " B; " << copies.size()
     << " copy site(s), " << moved << " copies of " << bytes << " B per call";
  if (conditional) os << " and those of " << conditional << " site(s) in cond/while bodies (as the run decides)";
  os << "\n";
  for (const ShapedArray& a : host_buffers) os << "  host buffer " << a.str() << ": " << a.nbytes() << " B\n";
  for (const OffloadCopy& c : copies) {
    os << "  " << c.primitive << " " << memory_kind_name(c.from) << " -> " << memory_kind_name(c.to) << ": "
       << c.bytes << " B per copy";
    if (c.chunks > 1) os << " (strided: " << c.chunks << " chunks of " << c.bytes / c.chunks << " B)";
    os << ", k=" << c.slices << " slice" << (c.slices == 1 ? "" : "s") << " per copy, ";
    if (c.runs == 1) os << "once";
    else os << c.runs << " times";
    if (c.copying != c.runs) os << ", " << c.copying << " moving bytes";
    if (c.conditional) os << " per run of its body";
    os << " (" << c.where << ")\n";
  }
  return os.str();
}

OffloadReport offload_report(const Jaxpr& program) {
  OffloadReport r;
  for (const Var& v : program.invars)
    if (is_host(v.aval().memory_kind)) r.host_buffers.push_back(v.aval());
  walk(program, 1, 0, false, "top level", r);
  return r;
}

}  // namespace minijax
