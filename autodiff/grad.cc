// minijax user-level autodiff API: input/output checks shared by grad and value_and_grad.
// Owns the messages for non-scalar outputs and integer inputs.
#include "autodiff/grad.h"

namespace minijax::detail {

void check_grad_inputs(const std::vector<Array>& leaves, int argnum, bool allow_int,
                       std::source_location loc) {
  for (auto& l : leaves) {
    if (is_floating(l.dtype()) || allow_int) continue;
    throw TypeError("grad requires real-valued (floating) inputs, but argument " +
                        std::to_string(argnum) + " has a leaf of type " + l.aval().str() +
                        "; pass GradOptions{.allow_int = true} to get float0 gradients for "
                        "integer inputs",
                    loc);
  }
}

void check_single_output(size_t n_leaves, bool has_aux, std::source_location loc) {
  if (n_leaves != 1)
    throw TypeError(std::string("grad requires the function to return a single scalar Array") +
                        (has_aux ? " as the first element of its (value, aux) pair" : "") +
                        ", but it returned " + std::to_string(n_leaves) +
                        " arrays; use vjp or jacrev for several outputs" +
                        (has_aux ? "" : ", or GradOptions{.has_aux = true} to return auxiliary data"),
                    loc);
}

void check_scalar_output(const Array& out, std::source_location loc) {
  if (out.ndim() != 0 || !is_floating(out.dtype()))
    throw TypeError("grad requires a real scalar output (shape [] and a floating dtype), got " +
                        out.aval().str() + "; use vjp or jacrev for non-scalar outputs",
                    loc);
}

}  // namespace minijax::detail
