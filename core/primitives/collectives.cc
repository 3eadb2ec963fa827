// minijax collective primitives (XLA's names): shape rules on local shapes, params, printing of
// axis names, eager impls that refuse to run outside the SPMD executor, and the lax:: binders.
#include "core/collective_params.h"
#include "core/collectives.h"
#include "core/param_reads.h"

#include <set>

#include "core/lax.h"
#include "core/primitive.h"
#include "core/trace.h"

namespace minijax {

namespace {

// Several axis names as one parameter, printed as JAX prints a tuple of names: ('x', 'y').
class AxisNameTuple final : public ParamObject {
 public:
  explicit AxisNameTuple(AxisNames n) : names(std::move(n)) {}
  std::string str() const override {
    std::string s = "(";
    for (size_t i = 0; i < names.size(); ++i) s += (i ? ", '" : "'") + names[i] + "'";
    return s + ")";
  }
  bool equals(const ParamObject& o) const override {
    auto* t = dynamic_cast<const AxisNameTuple*>(&o);
    return t && t->names == names;
  }
  AxisNames names;
};

std::string axes_str(const Params& p) {
  AxisNames n = axis_names_of(p);
  if (n.size() == 1) return "'" + n[0] + "'";
  return AxisNameTuple(n).str();
}

const std::set<std::string>& collective_names() {
  static const std::set<std::string> s = {"all_gather",         "all_reduce",        "reduce_scatter",
                                          "all_to_all",         "collective_permute", "ragged_all_to_all",
                                          "axis_index"};
  return s;
}

void check_unary(const std::string& prim, const std::vector<ShapedArray>& in) {
  if (in.size() != 1) throw ValueError(prim + " takes one operand, got " + std::to_string(in.size()));
  if (in[0].is_token()) throw TypeError(prim + " of a token");
}

int64_t checked_axis_size(const std::string& prim, const Params& p) {
  axis_names_of(p);  // validates the names
  int64_t n = param_int(p, "axis_size");
  if (n < 1) throw ValueError(prim + " over axis " + axes_str(p) + ": axis_size must be >= 1, got " + std::to_string(n));
  return n;
}

int64_t checked_dim(const std::string& prim, const char* what, int64_t d, int64_t bound, const ShapedArray& a,
                    const Params& p) {
  if (d < 0 || d >= bound)
    throw ShapeError(prim + " over axis " + axes_str(p) + ": " + what + "=" + std::to_string(d) +
                     " is out of range for an operand of shape " + shape_str(a.shape));
  return d;
}

std::vector<ShapedArray> all_gather_shape(const std::vector<ShapedArray>& in, const Params& p) {
  check_unary("all_gather", in);
  int64_t n = checked_axis_size("all_gather", p);
  bool tiled = param_bool(p, "tiled");
  ShapedArray o = in[0];
  o.weak_type = false;
  int64_t d = checked_dim("all_gather", "gather_dimension", param_int(p, "gather_dimension"),
                          in[0].ndim() + (tiled ? 0 : 1), in[0], p);
  if (tiled) o.shape[size_t(d)] *= n;
  else o.shape.insert(o.shape.begin() + d, n);
  return {o};
}

std::vector<ShapedArray> all_reduce_shape(const std::vector<ShapedArray>& in, const Params& p) {
  check_unary("all_reduce", in);
  checked_axis_size("all_reduce", p);
  const std::string& r = param_string(p, "reduction");
  const bool bitwise = r == "and" || r == "or" || r == "xor";
  if (r != "sum" && r != "max" && r != "min" && !bitwise)
    throw ValueError("all_reduce over axis " + axes_str(p) + ": reduction must be sum, max, min, and, or or xor, got '" +
                     r + "'");
  if (bitwise && in[0].dtype != DType::bool_ && !is_integer(in[0].dtype))
    throw TypeError("all_reduce over axis " + axes_str(p) + ": reduction " + r + " needs bool or integer operands, got " +
                    dtype_name(in[0].dtype));
  ShapedArray o = in[0];
  o.weak_type = false;
  return {o};
}

void check_divisible(const std::string& prim, const char* what, int64_t d, int64_t n, const ShapedArray& a,
                     const Params& p) {
  if (a.shape[size_t(d)] % n != 0)
    throw ShapeError(prim + " over axis " + axes_str(p) + ": " + what + "=" + std::to_string(d) + " of shape " +
                     shape_str(a.shape) + " has size " + std::to_string(a.shape[size_t(d)]) +
                     ", not divisible by axis_size=" + std::to_string(n));
}

std::vector<ShapedArray> reduce_scatter_shape(const std::vector<ShapedArray>& in, const Params& p) {
  check_unary("reduce_scatter", in);
  int64_t n = checked_axis_size("reduce_scatter", p);
  int64_t d = checked_dim("reduce_scatter", "scatter_dimension", param_int(p, "scatter_dimension"), in[0].ndim(),
                          in[0], p);
  check_divisible("reduce_scatter", "scatter_dimension", d, n, in[0], p);
  ShapedArray o = in[0];
  o.weak_type = false;
  o.shape[size_t(d)] /= n;
  return {o};
}

std::vector<ShapedArray> all_to_all_shape(const std::vector<ShapedArray>& in, const Params& p) {
  check_unary("all_to_all", in);
  int64_t n = checked_axis_size("all_to_all", p);
  int64_t s = checked_dim("all_to_all", "split_dimension", param_int(p, "split_dimension"), in[0].ndim(), in[0], p);
  int64_t c = checked_dim("all_to_all", "concat_dimension", param_int(p, "concat_dimension"), in[0].ndim(), in[0], p);
  check_divisible("all_to_all", "split_dimension", s, n, in[0], p);
  ShapedArray o = in[0];
  o.weak_type = false;
  o.shape[size_t(s)] /= n;
  o.shape[size_t(c)] *= n;
  return {o};
}

std::vector<ShapedArray> collective_permute_shape(const std::vector<ShapedArray>& in, const Params& p) {
  check_unary("collective_permute", in);
  int64_t n = checked_axis_size("collective_permute", p);
  const auto& st = param_ints(p, "source_target_pairs");
  if (st.size() % 2 != 0)
    throw ValueError("collective_permute over axis " + axes_str(p) +
                     ": source_target_pairs must hold (source, target) pairs, got an odd count " +
                     std::to_string(st.size()));
  std::set<int64_t> src, dst;
  for (size_t i = 0; i < st.size(); i += 2) {
    for (int64_t r : {st[i], st[i + 1]})
      if (r < 0 || r >= n)
        throw ValueError("collective_permute over axis " + axes_str(p) + ": rank " + std::to_string(r) +
                         " in source_target_pairs is outside [0, " + std::to_string(n) + ")");
    if (!src.insert(st[i]).second)
      throw ValueError("collective_permute over axis " + axes_str(p) + ": source " + std::to_string(st[i]) +
                       " appears twice in source_target_pairs");
    if (!dst.insert(st[i + 1]).second)
      throw ValueError("collective_permute over axis " + axes_str(p) + ": target " + std::to_string(st[i + 1]) +
                       " appears twice in source_target_pairs");
  }
  ShapedArray o = in[0];
  o.weak_type = false;
  return {o};
}

std::vector<ShapedArray> ragged_shape(const std::vector<ShapedArray>& in, const Params& p) {
  if (in.size() != 6)
    throw ValueError("ragged_all_to_all takes 6 operands (input, output, input_offsets, send_sizes, "
                     "output_offsets, recv_sizes), got " + std::to_string(in.size()));
  int64_t n = checked_axis_size("ragged_all_to_all", p);
  const ShapedArray &x = in[0], &out = in[1];
  if (x.ndim() < 1 || out.ndim() != x.ndim() || x.dtype != out.dtype ||
      !std::equal(x.shape.begin() + 1, x.shape.end(), out.shape.begin() + 1))
    throw ShapeError("ragged_all_to_all over axis " + axes_str(p) + ": input " + x.str() + " and output " +
                     out.str() + " must share the dtype and every dim after dim 0 (rank >= 1)");
  static const char* names[] = {"input_offsets", "send_sizes", "output_offsets", "recv_sizes"};
  for (size_t i = 2; i < 6; ++i)
    if (in[i].dtype != DType::i32 || in[i].shape != Shape{n})
      throw ShapeError("ragged_all_to_all over axis " + axes_str(p) + ": " + names[i - 2] + " must be i32[" +
                       std::to_string(n) + "] (one entry per rank), got " + in[i].str());
  ShapedArray o = out;
  o.weak_type = false;
  return {o};
}

std::vector<ShapedArray> axis_index_shape(const std::vector<ShapedArray>& in, const Params& p) {
  if (!in.empty()) throw ValueError("axis_index takes no operands, got " + std::to_string(in.size()));
  axis_names_of(p);
  return {ShapedArray{Shape{}, DType::i32}};
}

ImplRule refuse(const std::string& name) {
  return [name](const std::vector<Array>&, const Params& p, const std::vector<ShapedArray>&) -> std::vector<Array> {
    throw ValueError("collective " + name + " over axis " + axes_str(p) +
                     " runs only under the SPMD executor (jit/reference/reference_executor.h: run_spmd), "
                     "not eagerly on one array");
  };
}

Registrar reg([] {
  auto def = [](const std::string& name, ShapeRule rule) {
    auto& p = get_or_create_primitive(name);
    set_classes(p, OpClass::other, CostClass::data_movement, FusionClass::normal);
    p.shape_rule = std::move(rule);
    p.impl = refuse(name);
  };
  def("all_gather", all_gather_shape);
  def("all_reduce", all_reduce_shape);
  def("reduce_scatter", reduce_scatter_shape);
  def("all_to_all", all_to_all_shape);
  def("collective_permute", collective_permute_shape);
  def("ragged_all_to_all", ragged_shape);
  def("axis_index", axis_index_shape);
});

Params with_axes(const std::string& prim, const AxisNames& axes, int64_t axis_size, std::source_location loc) {
  Params p;
  p.set("axis_name", axis_name_param(axes, prim, loc));
  p.set("axis_size", axis_size);
  return p;
}

}  // namespace

std::string axis_names_str(const AxisNames& names) { return param_to_string(axis_name_param(names)); }

Param axis_name_param(const AxisNames& names, const std::string& primitive, std::source_location loc) {
  if (names.empty()) throw ValueError(primitive + ": a collective needs at least one axis name", loc);
  std::set<std::string> seen;
  for (auto& n : names) {
    if (n.empty()) throw ValueError(primitive + ": a collective's axis name is empty", loc);
    if (!seen.insert(n).second)
      throw ValueError(primitive + ": axis name '" + n + "' is repeated in a collective's axis_name", loc);
  }
  if (names.size() == 1) return names[0];
  return ParamObjectPtr(std::make_shared<AxisNameTuple>(names));
}

AxisNames axis_names_of(const Params& params) {
  const Param& v = param_at(params, "axis_name");
  if (auto* s = std::get_if<std::string>(&v)) return {*s};
  if (auto* o = std::get_if<ParamObjectPtr>(&v))
    if (auto* t = dynamic_cast<const AxisNameTuple*>(o->get())) return t->names;
  throw ValueError("a collective's axis_name must be a name or a tuple of names");
}

bool is_collective(const std::string& name) { return collective_names().count(name) != 0; }

void detail::refuse_eager_collective(const std::string& primitive, const Params& params, std::source_location loc) {
  throw ValueError("collective " + primitive + " over axis " + axes_str(params) +
                       " runs only under the SPMD executor (jit/reference/reference_executor.h: run_spmd), "
                       "not eagerly on one array",
                   loc);
}

Array lax::all_gather(const Array& x, const AxisNames& axis_name, int64_t axis_size, int64_t gather_dimension,
                      bool tiled, SL loc) {
  Params p = with_axes("all_gather", axis_name, axis_size, loc);
  p.set("gather_dimension", gather_dimension);
  p.set("tiled", tiled);
  return minijax::bind1(primitive("all_gather"), {x}, p, loc);
}

Array lax::all_reduce(const Array& x, const AxisNames& axis_name, int64_t axis_size, const std::string& reduction,
                      SL loc) {
  Params p = with_axes("all_reduce", axis_name, axis_size, loc);
  p.set("reduction", reduction);
  return minijax::bind1(primitive("all_reduce"), {x}, p, loc);
}

Array lax::psum(const Array& x, const AxisNames& axis_name, int64_t axis_size, SL loc) {
  return all_reduce(x, axis_name, axis_size, "sum", loc);
}

Array lax::reduce_scatter(const Array& x, const AxisNames& axis_name, int64_t axis_size, int64_t scatter_dimension,
                          SL loc) {
  Params p = with_axes("reduce_scatter", axis_name, axis_size, loc);
  p.set("scatter_dimension", scatter_dimension);
  return minijax::bind1(primitive("reduce_scatter"), {x}, p, loc);
}

Array lax::all_to_all(const Array& x, const AxisNames& axis_name, int64_t axis_size, int64_t split_dimension,
                      int64_t concat_dimension, SL loc) {
  Params p = with_axes("all_to_all", axis_name, axis_size, loc);
  p.set("split_dimension", split_dimension);
  p.set("concat_dimension", concat_dimension);
  return minijax::bind1(primitive("all_to_all"), {x}, p, loc);
}

Array lax::collective_permute(const Array& x, const AxisNames& axis_name, int64_t axis_size,
                              const std::vector<int64_t>& source_target_pairs, SL loc) {
  Params p = with_axes("collective_permute", axis_name, axis_size, loc);
  p.set("source_target_pairs", source_target_pairs);
  return minijax::bind1(primitive("collective_permute"), {x}, p, loc);
}

Array lax::ragged_all_to_all(const Array& input, const Array& output, const Array& input_offsets,
                             const Array& send_sizes, const Array& output_offsets, const Array& recv_sizes,
                             const AxisNames& axis_name, int64_t axis_size, SL loc) {
  return minijax::bind1(primitive("ragged_all_to_all"),
                        {input, output, input_offsets, send_sizes, output_offsets, recv_sizes},
                        with_axes("ragged_all_to_all", axis_name, axis_size, loc), loc);
}

Array lax::axis_index(const AxisNames& axis_name, SL loc) {
  Params p;
  p.set("axis_name", axis_name_param(axis_name, "axis_index", loc));
  return minijax::bind1(primitive("axis_index"), {}, p, loc);
}

}  // namespace minijax
