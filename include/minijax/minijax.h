// minijax public umbrella header: everything a user program needs.
// Declares namespace minijax and the alias `namespace mj = minijax;`.
#pragma once
#include "core/array.h"
#include "core/aval.h"
#include "core/config.h"
#include "core/dtype.h"
#include "core/errors.h"
#include "core/jaxpr.h"
#include "core/lax.h"
#include "core/numpy.h"
#include "core/primitive.h"
#include "core/random.h"
#include "core/pytree.h"
#include "core/staging.h"
#include "core/trace.h"
#include "core/xtensor_interop.h"
#include "autodiff/grad.h"
#include "autodiff/jvp.h"
#include "autodiff/linearize.h"
#include "autodiff/transpose.h"
#include "autodiff/vmap.h"

namespace mj = minijax;
