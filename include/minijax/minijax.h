// minijax public umbrella header: everything a user program needs, and only that.
// Declares namespace minijax and the alias `namespace mj = minijax;`.
//
// Each header below is public: what it declares outside namespace `detail` is minijax's API
// (tests/api/public_functions.txt, written by tools/list_public_api.py). The project headers they
// include in turn are internal: installed under <minijax/detail/...>, never named by user code.
#pragma once
// Arrays, dtypes and shapes, errors, configuration, devices.
#include "core/array.h"
#include "core/aval.h"
#include "core/config.h"
#include "core/device.h"
#include "core/distributed.h"
#include "core/dtype.h"
#include "core/errors.h"
// numpy and lax functions, random numbers, control flow, collectives, pytrees, debugging.
#include "core/collectives.h"
#include "core/control_flow.h"
#include "core/debug.h"
#include "core/lax.h"
#include "core/gather_scatter.h"
#include "core/special_gamma.h"
#include "core/special_igamma.h"
#include "core/linalg.h"
#include "core/scipy_linalg.h"
#include "core/numpy_linalg.h"
#include "core/convolution.h"
#include "core/windowed_reductions.h"
#include "core/nn.h"
#include "core/numpy.h"
#include "core/pytree.h"
#include "core/random.h"
#include "core/xtensor_interop.h"
// Transformations: make_jaxpr and closed_call, grad/vjp/jvp/linearize, vmap, jacobians, custom
// derivatives, gradient checks, checkpoint with its policies and saved residuals; to_dot's pictures.
#include "core/api.h"
#include "core/to_dot.h"
#include "autodiff/check_grads.h"
#include "autodiff/checkpoint.h"
#include "autodiff/checkpoint_policies.h"
#include "autodiff/custom_derivatives.h"
#include "autodiff/grad.h"
#include "autodiff/jacobian.h"
#include "autodiff/policy.h"
#include "autodiff/saved_residuals.h"
#include "autodiff/vmap.h"
// Optimizers.
#include "autodiff/optimizers.h"
// Meshes, shardings, sharded arrays and resharding.
#include "sharding/mesh.h"
#include "sharding/partition_spec.h"
#include "sharding/reshard_api.h"
#include "sharding/sharded_array.h"
#include "sharding/sharding.h"
// jit, Lowered and Compiled, the caches, memory statistics and the profiler.
#include "jit/caches.h"
#include "jit/jit.h"
#include "jit/multihost.h"
#include "jit/runtime/memory_stats.h"
#include "jit/runtime/profiler.h"
// Files: npy, npz, safetensors.
#include "io/npy.h"
#include "io/npz.h"
#include "io/safetensors.h"

namespace mj = minijax;
