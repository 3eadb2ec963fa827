// minijax memory analysis: sums the buffer plan's arguments, outputs, aliases and arena per kind.
// Owns memory_analysis and CompiledMemoryStats.
#include "memory/memory_analysis.h"

#include <sstream>

namespace minijax {

int64_t CompiledMemoryStats::peak_bytes(MemoryKind kind, std::source_location loc) const {
  size_t k = size_t(kind);
  if (k >= argument.size())
    throw ValueError("CompiledMemoryStats::peak_bytes: memory kind " + std::to_string(k) +
                     " is not a MemoryKind (device, pinned_host or unpinned_host)",
                     loc);
  return argument[k] + output[k] - alias[k] + temp[k];
}

int64_t CompiledMemoryStats::peak_bytes(const std::string& kind, std::source_location loc) const {
  try {
    return peak_bytes(memory_kind_from_name(kind), loc);
  } catch (const ValueError& e) {
    throw ValueError("CompiledMemoryStats::peak_bytes: " + e.message(), loc);
  }
}

std::string CompiledMemoryStats::str() const {
  std::ostringstream os;
  os << "argument_size_in_bytes=" << argument_size_in_bytes << " output_size_in_bytes=" << output_size_in_bytes
     << " alias_size_in_bytes=" << alias_size_in_bytes << " temp_size_in_bytes=" << temp_size_in_bytes
     << " peak_memory_in_bytes=" << peak_memory_in_bytes;
  if (host_peak_memory_in_bytes)
    os << " host_argument_size_in_bytes=" << host_argument_size_in_bytes << " host_output_size_in_bytes="
       << host_output_size_in_bytes << " host_alias_size_in_bytes=" << host_alias_size_in_bytes
       << " host_temp_size_in_bytes=" << host_temp_size_in_bytes << " host_peak_memory_in_bytes="
       << host_peak_memory_in_bytes;
  return os.str();
}

CompiledMemoryStats memory_analysis(const Jaxpr& program, const BufferPlan& plan) {
  CompiledMemoryStats m;
  for (auto& v : program.invars) m.argument[size_t(v.aval().memory_kind)] += v.aval().nbytes();
  for (size_t k = 0; k < program.outvars.size(); ++k) {
    const ShapedArray& a = atom_aval(program.outvars[k]);
    const OutputPlan& op = plan.outputs.at(k);
    if (op.kind == OutputPlan::same_as) continue;  // one buffer for both
    m.output[size_t(a.memory_kind)] += a.nbytes();
    if (op.kind == OutputPlan::donated_param || op.kind == OutputPlan::param) m.alias[size_t(a.memory_kind)] += a.nbytes();
  }
  for (size_t k = 0; k < 3; ++k) m.temp[k] = plan.arena_bytes[k];
  auto host = [&](const std::array<int64_t, 3>& x) { return x[1] + x[2]; };
  m.argument_size_in_bytes = m.argument[0];
  m.output_size_in_bytes = m.output[0];
  m.alias_size_in_bytes = m.alias[0];
  m.temp_size_in_bytes = m.temp[0];
  m.peak_memory_in_bytes = m.peak_bytes(MemoryKind::device);
  m.host_argument_size_in_bytes = host(m.argument);
  m.host_output_size_in_bytes = host(m.output);
  m.host_alias_size_in_bytes = host(m.alias);
  m.host_temp_size_in_bytes = host(m.temp);
  m.host_peak_memory_in_bytes = m.peak_bytes(MemoryKind::pinned_host) + m.peak_bytes(MemoryKind::unpinned_host);
  return m;
}

}  // namespace minijax
