// minijax program rules of the windowed primitives no oneDNN form computes, as loop nests (window_loops.h);
// conv_general_dilated, reduce_window_max/sum and select_and_scatter_add have convolution.cc's rules.
#include "jit/codegen/lower/window_loops.h"

namespace minijax::lower {
namespace {

void reduce_window(ProgramEmitter& pe, const Eqn& e) { emit_reduce_window_loop_nest(pe, e); }
void gather(ProgramEmitter& pe, const Eqn& e) { emit_select_and_gather_add_loop_nest(pe, e); }

const RegisterProgramRule reg_rw_min("reduce_window_min", "loop nest", reduce_window);
const RegisterProgramRule reg_rw("reduce_window", "loop nest", reduce_window);
const RegisterProgramRule reg_sag("select_and_gather_add", "loop nest", gather);

}  // namespace
}  // namespace minijax::lower
