// minijax typed views of the windowed primitives' params (core/views/windowed.h).
// Owns the name literals of conv_general_dilated and the reduce_window family outside their registrations.
#include "core/views/windowed.h"

#include "core/lax_params.h"
#include "core/param_reads.h"
#include "core/views/param_keys.h"
#include "core/views/define_view.h"
#include "core/views/view.h"

namespace minijax {
namespace {

const Primitive* prim(const char* name) { return &get_or_create_primitive(name); }

bool is_none(const Params& p, const char* key) {
  if (!p.has(key)) return true;
  auto* o = std::get_if<ParamObjectPtr>(&param_at(p, key));
  return o && !*o;
}

Param none() { return ParamObjectPtr{}; }  // printed None, as in JAX

}  // namespace

// A view whose is(Primitive) is the code given (the reduce_window family's views cover several).
#define MJ_WINDOWED_VIEW(View, accessor, ...) \
  MJ_DEFINE_VIEW_ACCESSOR(View, accessor)     \
  bool View::is(const Primitive& p) { __VA_ARGS__ }

// ---- conv_general_dilated ------------------------------------------------------------------------

MJ_WINDOWED_VIEW(ConvParams, conv_params, static const Primitive* c = prim("conv_general_dilated"); return &p == c;)
ConvParams ConvParams::from(const Params& p) {
  return views::read_view("conv_general_dilated", [&] {
    views::check_known_keys(p, {"window_strides", "padding", "lhs_dilation", "rhs_dilation", "lhs_spec", "rhs_spec",
                                "out_spec", "feature_group_count", "batch_group_count", "precision",
                                "preferred_element_type"});
    ConvParams c;
    c.window_strides = param_ints(p, "window_strides");
    c.padding = param_ints(p, "padding");
    c.lhs_dilation = param_ints(p, "lhs_dilation");
    c.rhs_dilation = param_ints(p, "rhs_dilation");
    c.lhs_spec = param_ints(p, "lhs_spec");
    c.rhs_spec = param_ints(p, "rhs_spec");
    c.out_spec = param_ints(p, "out_spec");
    c.feature_group_count = param_int(p, "feature_group_count");
    c.batch_group_count = param_int(p, "batch_group_count");
    c.precision = lax::dot_precision(p);
    if (!is_none(p, "preferred_element_type")) c.preferred_element_type = param_dtype(p, "preferred_element_type");
    const size_t n = c.window_strides.size();
    if (c.padding.size() != 2 * n || c.lhs_dilation.size() != n || c.rhs_dilation.size() != n ||
        c.lhs_spec.size() != n + 2 || c.rhs_spec.size() != n + 2 || c.out_spec.size() != n + 2)
      throw ValueError("window_strides, padding (pairs), dilations and dimension specs disagree on the number of "
                       "spatial dimensions");
    return c;
  });
}
Params ConvParams::to_params() const {
  return Params{{"window_strides", window_strides},
                {"padding", padding},
                {"lhs_dilation", lhs_dilation},
                {"rhs_dilation", rhs_dilation},
                {"lhs_spec", lhs_spec},
                {"rhs_spec", rhs_spec},
                {"out_spec", out_spec},
                {"feature_group_count", feature_group_count},
                {"batch_group_count", batch_group_count},
                {"precision", lax::precision_param(precision)},
                {"preferred_element_type", preferred_element_type ? Param(*preferred_element_type) : none()}};
}

// ---- the window ------------------------------------------------------------------------------------

WindowParams WindowParams::from(const Params& p) {
  WindowParams w;
  w.window_dimensions = param_ints(p, "window_dimensions");
  w.window_strides = param_ints(p, "window_strides");
  w.padding = param_ints(p, "padding");
  w.base_dilation = param_ints(p, "base_dilation");
  w.window_dilation = param_ints(p, "window_dilation");
  const size_t n = w.window_dimensions.size();
  if (w.window_strides.size() != n || w.padding.size() != 2 * n || w.base_dilation.size() != n ||
      w.window_dilation.size() != n)
    throw ValueError("window_dimensions, window_strides, padding (pairs) and dilations disagree on the rank");
  return w;
}
void WindowParams::write(Params& p) const {
  p.set("window_dimensions", window_dimensions);
  p.set("window_strides", window_strides);
  p.set("padding", padding);
  p.set("base_dilation", base_dilation);
  p.set("window_dilation", window_dilation);
}

MJ_WINDOWED_VIEW(ReduceWindowMonoidParams, reduce_window_monoid_params,
                 static const Primitive* s = prim("reduce_window_sum"); static const Primitive* mx = prim("reduce_window_max");
                 static const Primitive* mn = prim("reduce_window_min"); return &p == s || &p == mx || &p == mn;)
ReduceWindowMonoidParams ReduceWindowMonoidParams::from(const Params& p) {
  return views::read_view("reduce_window", [&] {
    views::check_known_keys(p, {"window_dimensions", "window_strides", "padding", "base_dilation", "window_dilation"});
    return ReduceWindowMonoidParams{WindowParams::from(p)};
  });
}
Params ReduceWindowMonoidParams::to_params() const {
  Params p;
  window.write(p);
  return p;
}

WindowMonoid window_monoid(const Eqn& e) {
  static const Primitive* s = prim("reduce_window_sum");
  static const Primitive* mx = prim("reduce_window_max");
  static const Primitive* mn = prim("reduce_window_min");
  if (e.primitive == s) return WindowMonoid::sum;
  if (e.primitive == mx) return WindowMonoid::max;
  if (e.primitive == mn) return WindowMonoid::min;
  views::wrong_primitive("WindowMonoid", e);
}

MJ_WINDOWED_VIEW(ReduceWindowParams, reduce_window_params, static const Primitive* r = prim("reduce_window"); return &p == r;)
ReduceWindowParams ReduceWindowParams::from(const Params& p) {
  return views::read_view("reduce_window", [&] {
    views::check_known_keys(p, {"jaxpr", "window_dimensions", "window_strides", "padding", "base_dilation",
                                "window_dilation"});
    const ClosedJaxprPtr& j = param_jaxpr(p, "jaxpr");
    if (!j || !j->jaxpr) throw ValueError("parameter 'jaxpr' is empty");
    return ReduceWindowParams{j, WindowParams::from(p)};
  });
}
Params ReduceWindowParams::to_params() const {
  Params p{{"jaxpr", jaxpr}};
  window.write(p);
  return p;
}

MJ_WINDOWED_VIEW(SelectAndWindowParams, select_and_window_params,
                 static const Primitive* s = prim("select_and_scatter_add");
                 static const Primitive* g = prim("select_and_gather_add"); return &p == s || &p == g;)
SelectAndWindowParams SelectAndWindowParams::from(const Params& p) {
  return views::read_view("select_and_scatter_add", [&] {
    views::check_known_keys(p, {"select_prim", "window_dimensions", "window_strides", "padding", "base_dilation",
                                "window_dilation"});
    SelectAndWindowParams s{param_string(p, "select_prim"), WindowParams::from(p)};
    if (s.select_prim != "ge" && s.select_prim != "le")
      throw ValueError("select_prim must be 'ge' or 'le', got '" + s.select_prim + "'");
    return s;
  });
}
Params SelectAndWindowParams::to_params() const {
  Params p{{"select_prim", select_prim}};
  window.write(p);
  return p;
}

#undef MJ_WINDOWED_VIEW

namespace {

template <class View>
ParamsCheck check_with() {
  return [](const Params& p) { return View::from(p).to_params(); };
}

Registrar reg_checks([] {
  auto set = [](const char* name, ParamsCheck c) { get_or_create_primitive(name).check_params = std::move(c); };
  set("conv_general_dilated", check_with<ConvParams>());
  for (const char* n : {"reduce_window_sum", "reduce_window_max", "reduce_window_min"})
    set(n, check_with<ReduceWindowMonoidParams>());
  set("reduce_window", check_with<ReduceWindowParams>());
  for (const char* n : {"select_and_scatter_add", "select_and_gather_add"}) set(n, check_with<SelectAndWindowParams>());
});

}  // namespace

}  // namespace minijax
