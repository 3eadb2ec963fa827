#!/usr/bin/python3
# minijax tools: PyTorch reference values, gradients and Hessian-vector products (float64) of a
# set of functions built from minijax's primitives; writes tests/autodiff/torch_reference_data*.h.
#
# Usage (Debian's python3-torch; not a project dependency, only this generator needs it):
#   /usr/bin/python3 tools/torch_reference.py [OUT_DIR]   (default: tests/autodiff)
# Each family of cases goes to its own header (GROUPS below): torch_reference_data.h (the core
# ops), torch_reference_data_conv.h (convolution and pooling), torch_reference_data_lax.h (the
# cumulative ops, sorting, top-k, the scatters and gathers, sinh/asin/erfc),
# torch_reference_data_special.h (lgamma, digamma, polygamma), torch_reference_data_linalg.h
# (cholesky, triangular_solve, lu, qr, eigh, svd) and torch_reference_data_numpy_linalg.h
# (mj::linalg's inv, solve, det, slogdet, pinv, norm, matrix_power). The C++ side is
# tests/autodiff/test_torch_reference.cc, _conv.cc, _lax.cc, _special.cc and _linalg.cc: each
# computes the same functions with minijax (f64) on the inputs written here and compares with the
# values written by this script.
# Every input is written literally below; nothing is random.
import datetime
import math
import os
import sys

import torch
import torch.autograd.forward_ad as fwAD

torch.set_default_dtype(torch.float64)
F = torch.nn.functional


def t(values, shape):
    return torch.tensor(values, dtype=torch.float64).reshape(shape)


# ---- lax-like helpers in torch ------------------------------------------------------------------

def lax_pad(x, value, config):
    """lax.pad: per dim (low, high, interior); negative low/high crop."""
    lo_pos = [max(lo, 0) for lo, _, _ in config]
    hi_pos = [max(hi, 0) for _, hi, _ in config]
    inner = [(n - 1) * (i + 1) + 1 if n > 0 else 0 for n, (_, _, i) in zip(x.shape, config)]
    out_shape = [lp + m + hp for lp, m, hp in zip(lo_pos, inner, hi_pos)]
    z = torch.full(out_shape, float(value))
    index = tuple(slice(lp, lp + m, i + 1) for lp, m, (_, _, i) in zip(lo_pos, inner, config))
    z[index] = x  # copy_ into a view: differentiable with respect to x
    crop = tuple(slice(-lo if lo < 0 else 0, (n - (-hi)) if hi < 0 else n)
                 for n, (lo, hi, _) in zip(out_shape, config))
    return z[crop]


def cumsum_reverse(x, dim):
    return torch.flip(torch.cumsum(torch.flip(x, [dim]), dim), [dim])


def gelu_tanh(x):
    return F.gelu(x, approximate='tanh')


def rem(x, y):
    return torch.fmod(x, y)  # C fmod semantics, as lax.rem


# ---- the functions ------------------------------------------------------------------------------
# Each entry: name, differentiable inputs (name -> tensor), constant inputs (name -> tensor, float
# or integer), the function of (diff..., const...) returning a scalar, and HVP directions
# (input name -> direction; the HVP is with respect to that input, the others held fixed).
CASES = []
# The header the cases registered next go to (GROUPS: group -> (file name, what it holds)).
GROUPS = {'core': ('torch_reference_data.h', 'the core ops'),
          'conv': ('torch_reference_data_conv.h', 'convolution and pooling'),
          'lax': ('torch_reference_data_lax.h',
                  'cumulative ops, sorting, top-k, scatters and gathers, sinh, asin, erfc'),
          'special': ('torch_reference_data_special.h', 'lgamma, digamma and polygamma',
                      'torch_reference_special'),
          'linalg': ('torch_reference_data_linalg.h', 'cholesky, triangular_solve, lu, qr, eigh and svd',
                     'torch_reference_linalg'),
          'numpy_linalg': ('torch_reference_data_numpy_linalg.h',
                           'jnp.linalg\'s inv, solve, det, slogdet, pinv, norm and matrix_power',
                           'torch_reference_linalg')}
GROUP = 'core'


def case(name, diff, const, fn, hvps=(), doc='', jvp=None, jvp_by_grads=False):
    """jvp, when given: a direction for every differentiable input (name -> tensor); the JVP of
    the function along all of them at once is computed with torch's forward-mode AD, or, with
    jvp_by_grads (an op torch 1.13 has no forward-mode rule for: logcumsumexp), as <grad, v> from
    torch's reverse mode."""
    CASES.append(dict(name=name, diff=diff, const=const, fn=fn, hvps=dict(hvps), doc=doc,
                      jvp=None if jvp is None else dict(jvp), jvp_by_grads=jvp_by_grads, group=GROUP))


case('sin_mul',
     dict(x=t([0.3, -1.2, 2.5, 0.7, -0.4, 1.9], [2, 3]),
          y=t([1.5, 0.25, -2.0, 3.1, -0.6, 0.9], [2, 3])),
     {},
     lambda x, y: torch.sum(torch.sin(x) * y),
     hvps=dict(x=t([0.5, -1.0, 2.0, 0.1, 0.3, -0.7], [2, 3])),
     doc='sum(sin(x) * y)')

MLP_X = t([0.2, -0.5, 1.1, 0.7, 0.3, -1.4, -0.9, 0.8, 0.05, 1.3, -0.2, 0.6, -0.35, -1.05, 0.45],
          [5, 3])
MLP_LABELS = torch.tensor([2, 0, 1, 2, 1], dtype=torch.int64)


def mlp_xent(w1, b1, w2, b2, x, labels):
    h = torch.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    onehot = F.one_hot(labels, 3).to(torch.float64)
    return -torch.mean(torch.sum(F.log_softmax(logits, dim=1) * onehot, dim=1))


case('mlp_xent',
     dict(w1=t([0.5, -0.3, 0.8, 0.1, -0.7, 0.25, 0.4, -0.6, 0.9, 0.15, -0.45, 0.35], [3, 4]),
          b1=t([0.1, -0.2, 0.05, 0.3], [4]),
          w2=t([0.6, -0.4, 0.2, -0.1, 0.75, -0.55, 0.35, 0.45, -0.65, -0.25, 0.15, 0.85], [4, 3]),
          b2=t([0.02, -0.03, 0.04], [3])),
     dict(x=MLP_X, labels=MLP_LABELS),
     mlp_xent,
     hvps=dict(w1=t([0.1, 0.2, -0.3, 0.4, -0.5, 0.6, 0.7, -0.8, 0.9, -1.0, 1.1, 0.05], [3, 4])),
     doc='-mean(sum(log_softmax(tanh(x w1 + b1) w2 + b2, 1) * one_hot(labels, 3), 1))')

case('logsumexp_softmax',
     dict(z=t([0.5, 2.0, -1.0, 0.3, 1.7, -0.2, 0.9, -2.1, 0.0, 3.2, 1.1, -0.8], [3, 4])),
     dict(w=t([1.0, -2.0, 0.5], [3]),
          c=t([0.3, -0.1, 0.7, 1.2, -0.4, 0.9, 0.2, -0.6, 0.5, 0.8, -1.1, 0.25], [3, 4])),
     lambda z, w, c: torch.sum(torch.logsumexp(z, 1) * w) + torch.sum(torch.softmax(z, 0) * c),
     hvps=dict(z=t([0.3, -0.2, 0.1, 0.4, -0.5, 0.6, -0.7, 0.8, 0.9, -0.1, 0.2, -0.3], [3, 4])),
     doc='sum(logsumexp(z, 1) * w) + sum(softmax(z, 0) * c)')

case('activations',
     dict(x=t([-2.3, -0.7, -0.05, 0.4, 1.3, 2.8], [6])),
     {},
     lambda x: torch.sum(torch.tanh(x) + torch.sigmoid(x) * x + torch.erf(x) + gelu_tanh(x) * x),
     hvps=dict(x=t([1.0, -0.5, 0.25, 2.0, -1.5, 0.75], [6])),
     doc='sum(tanh(x) + logistic(x) * x + erf(x) + gelu_tanh(x) * x)')

case('softplus_like',
     dict(x=t([-3.1, -0.8, 0.15, 1.2, 2.7], [5])),
     {},
     lambda x: torch.sum(torch.log1p(torch.exp(x)) + torch.expm1(0.3 * x) * torch.log(x * x + 1.0)
                         + torch.sqrt(x * x + 2.0) + torch.rsqrt(x * x + 3.0)),
     hvps=dict(x=t([0.5, 1.5, -1.0, 0.2, -0.3], [5])),
     doc='sum(log1p(exp(x)) + expm1(0.3 x) log(x^2 + 1) + sqrt(x^2 + 2) + rsqrt(x^2 + 3))')

case('pow_atan2_rem',
     dict(x=t([0.7, 1.9, 2.6, 3.3], [4]),
          y=t([1.3, -0.45, 0.8, -1.7], [4])),
     {},
     lambda x, y: torch.sum(torch.pow(x, y) + torch.atan2(x, y) + rem(x, y) + x ** 3 + y ** -2),
     hvps=dict(y=t([0.2, -0.4, 0.6, 1.0], [4])),
     doc='sum(x**y + atan2(x, y) + rem(x, y) + x^3 + y^-2); x > 0, x/y away from integers')

case('max_min',
     dict(x=t([0.3, -1.1, 2.2, 0.9, 1.7, -0.6], [2, 3]),
          y=t([0.8, -1.5, 1.4, 1.6, 0.2, -0.1], [2, 3])),
     dict(w=t([1.0, 3.0], [2])),
     lambda x, y, w: (torch.sum(torch.maximum(x, y) * torch.minimum(x, y) ** 2) + torch.max(x)
                      - 2.0 * torch.min(y) + torch.sum(torch.amax(x, 1) * w)
                      + torch.sum(torch.amin(y, 0))),
     doc='sum(maximum(x,y) minimum(x,y)^2) + max(x) - 2 min(y) + sum(max(x,1) w) + sum(min(y,0));'
         ' all values distinct')

case('cumsum_prod',
     dict(x=t([0.9, -1.3, 0.6, 1.4, 0.75, -0.8], [2, 3])),
     dict(w=t([0.5, -1.0, 2.0, 1.5, 0.25, -0.75], [2, 3])),
     lambda x, w: (torch.sum(torch.cumsum(x, 1) ** 2 * w) + torch.prod(x)
                   + torch.sum(torch.prod(x, 0)) + torch.sum(torch.cumsum(x, 0) * torch.sin(x))
                   + torch.sum(cumsum_reverse(x, 1) * w)),
     hvps=dict(x=t([0.4, 0.3, -0.2, 0.1, -0.6, 0.5], [2, 3])),
     doc='sum(cumsum(x,1)^2 w) + prod(x) + sum(prod(x,0)) + sum(cumsum(x,0) sin x) '
         '+ sum(cumsum(x,1,reverse) w)')

case('where_clip',
     dict(x=t([-1.3, -0.45, -0.1, 0.15, 0.35, 0.9, 1.6], [7])),
     {},
     lambda x: torch.sum(torch.where(x > 0.2, x * x * torch.cos(x), torch.sin(x))
                         + 3.0 * torch.clamp(x, -0.5, 0.7) + torch.abs(x) * x),
     hvps=dict(x=t([1.0, 0.5, -0.5, 0.25, -1.0, 2.0, 0.3], [7])),
     doc='sum(where(x > 0.2, x^2 cos x, sin x) + 3 clip(x, -0.5, 0.7) + |x| x); no x on a boundary')

case('embedding',
     dict(table=t([0.1, -0.4, 0.7, 1.2, 0.3, -0.9, -0.5, 0.8, 0.2, 0.6, -1.1, 0.45, -0.25, 0.55,
                   1.05], [5, 3])),
     dict(idx=torch.tensor([3, 0, 3, 1, 4, 3], dtype=torch.int64),
          w=t([0.5, -1.0, 1.5, 0.2, 0.4, -0.6, 1.1, -0.3, 0.7, -0.8, 0.9, 0.1, 0.35, -0.45, 0.55,
               0.65, -0.75, 0.85], [6, 3])),
     lambda table, idx, w: (torch.sum(torch.tanh(table[idx]) * w)
                            + torch.sum(table[idx][:, 0] ** 2)),
     doc='rows = take(table, idx) (index 3 repeated, row 2 unused); '
         'sum(tanh(rows) w) + sum(rows[:, 0]^2)')


def pad_slice_concat(x, w):
    p = lax_pad(x, 0.5, [(1, 2, 1), (0, -1, 0)])          # [6, 2]
    s = p[1:6:2, :]                                       # rows 1, 3, 5 -> [3, 2]
    c = torch.cat([s.t(), x], 0)                          # [4, 3]
    r = torch.flip(c, [1])
    d = c[1:3, 0:2]                                       # dynamic_slice at (1, 0), sizes (2, 2)
    u = c.clone()
    u[2:4, 1:3] = x[:, 0:2] * 2.0                         # dynamic_update_slice at (2, 1)
    return (torch.sum(torch.sin(c) * w) + torch.sum(r * c) + torch.sum(torch.exp(d))
            + torch.sum(u * u * w))


case('pad_slice_concat',
     dict(x=t([0.4, -0.8, 1.2, 0.6, 1.5, -0.3], [2, 3])),
     dict(w=t([1.0, -0.5, 0.25, 2.0, 0.75, -1.25, 0.6, 0.3, -0.9, 1.1, -0.2, 0.45], [4, 3])),
     pad_slice_concat,
     hvps=dict(x=t([0.2, 0.1, -0.3, 0.5, -0.4, 0.6], [2, 3])),
     doc='pad (interior, negative high) -> strided slice -> transpose -> concatenate -> rev, '
         'dynamic_slice, dynamic_update_slice')


def batched_dot(a, b, c):
    m = torch.matmul(a, b)                                # [2, 3, 2]
    return (torch.sum(torch.sin(m)) + torch.sum(torch.var(a, 2, unbiased=False))
            + torch.sum(torch.mean(b, 1) ** 2) + torch.sum(a * c))


case('batched_dot',
     dict(a=t([0.1 * ((7 * i) % 11) - 0.5 for i in range(24)], [2, 3, 4]),
          b=t([0.15 * ((5 * i) % 9) - 0.6 for i in range(16)], [2, 4, 2])),
     dict(c=t([0.3, -0.7, 1.1, 0.2], [4])),
     batched_dot,
     hvps=dict(a=t([0.05 * ((3 * i) % 13) - 0.3 for i in range(24)], [2, 3, 4])),
     doc='sum(sin(a @ b)) + sum(var(a, 2)) + sum(mean(b, 1)^2) + sum(a * c) (c broadcast)')


# ---- convolution and pooling --------------------------------------------------------------------
GROUP = 'conv'
# JAX's semantics (jax/_src/lax/convolution.py and windowed_reductions.py of JAX v0.7.0,
# flax.linen's max_pool/avg_pool) written with torch's own convolutions and poolings:
# lax.conv_general_dilated is a cross-correlation, as torch's convNd is. Padding strings are
# resolved as JAX's padtype_to_pads does; lhs (base) dilation and negative padding go through
# lax_pad (zero or -inf insertion, cropping). Each case is sum(sin(op(inputs...)) * c), c a literal
# of the result's shape, so that gradients and Hessian-vector products are not trivial.

def ramp(shape, a, m, scale, off):
    """A literal input: element i (row-major) is scale * ((a * i) % m) - off; distinct for i < m
    when a and m are coprime, repeating (so with ties) beyond."""
    n = math.prod(shape)
    return t([round(scale * ((a * i) % m) - off, 6) for i in range(n)], shape)


def dilate_dim(d, r):
    return 0 if d == 0 else 1 + r * (d - 1)


def padtype_to_pads(in_shape, window_shape, strides, mode):
    """jax.lax.padtype_to_pads: "VALID" is no padding; "SAME" pads to ceil(in / stride) outputs,
    the odd element at the end ("SAME_LOWER": at the start)."""
    if mode == 'VALID':
        return [(0, 0)] * len(in_shape)
    pads = []
    for n, k, s in zip(in_shape, window_shape, strides):
        total = max((-(-n // s) - 1) * s + k - n, 0)
        pads.append((total // 2, total - total // 2) if mode == 'SAME'
                    else (total - total // 2, total // 2))
    return pads


def conv_general_permutations(lhs, rhs, out):
    """jax.lax.conv_general_permutations: each operand's dimensions in the order (batch, feature,
    spatial...), the kernel's (out feature, in feature, spatial...); the spatial dimensions are
    the kernel's in the order its string names them, matched to the operands' by letter."""
    def perm(spec, pair, by_kernel_order=True):
        spatial = [i for i, ch in enumerate(spec) if ch not in pair]
        if by_kernel_order:
            spatial.sort(key=lambda i: rhs.index(spec[i]))
        return [spec.index(pair[0]), spec.index(pair[1])] + spatial
    return perm(lhs, 'NC'), perm(rhs, 'OI', by_kernel_order=False), perm(out, 'NC')


TORCH_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def conv_general_dilated(x, w, strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count=1, batch_group_count=1):
    """lax.conv_general_dilated with torch's conv{1,2,3}d. batch_group_count as XLA defines it: the
    batch is cut into batch_group_count contiguous groups; group g is convolved with the g-th
    contiguous group of the kernel's output features; the results are concatenated along the
    output features (each has batch / batch_group_count elements)."""
    nsp = x.dim() - 2
    if dimension_numbers is None:
        lhs_perm = rhs_perm = out_perm = list(range(x.dim()))
    else:
        lhs_perm, rhs_perm, out_perm = conv_general_permutations(*dimension_numbers)
    xc, wc = x.permute(lhs_perm), w.permute(rhs_perm)
    ld = lhs_dilation or [1] * nsp
    rd = rhs_dilation or [1] * nsp
    if isinstance(padding, str):
        window = [dilate_dim(k, r) for k, r in zip(wc.shape[2:], rd)]
        padding = padtype_to_pads(list(xc.shape[2:]), window, strides, padding)
    xp = lax_pad(xc, 0.0, [(0, 0, 0)] * 2 + [(lo, hi, d - 1) for (lo, hi), d in zip(padding, ld)])
    conv = TORCH_CONV[nsp]
    if batch_group_count == 1:
        y = conv(xp, wc, stride=strides, dilation=rd, groups=feature_group_count)
    else:
        nb, ob = xp.shape[0] // batch_group_count, wc.shape[0] // batch_group_count
        y = torch.cat([conv(xp[g * nb:(g + 1) * nb], wc[g * ob:(g + 1) * ob], stride=strides,
                            dilation=rd) for g in range(batch_group_count)], 1)
    # Canonical dimension j goes to the output's dimension out_perm[j].
    return y.permute(sorted(range(len(out_perm)), key=lambda j: out_perm[j]))


def to_channels_first(x):  # [N, spatial..., C] -> [N, C, spatial...]
    return x.permute(0, x.dim() - 1, *range(1, x.dim() - 1))


def to_channels_last(y):  # [N, C, spatial...] -> [N, spatial..., C]
    return y.permute(0, *range(2, y.dim()), 1)


TORCH_MAX_POOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
TORCH_AVG_POOL = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


def reduce_window_max(x, window, strides, padding, base_dilation, window_dilation):
    """lax.reduce_window_max over every dimension of x (rank <= 3): -inf padding and holes, then
    torch's max_pool over x seen as [1, 1, ...]."""
    xp = lax_pad(x, float('-inf'), [(lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation)])
    y = TORCH_MAX_POOL[x.dim()](xp[None, None], window, strides, dilation=window_dilation)
    return y[0, 0]


def reduce_window_sum(x, window, strides, padding, base_dilation, window_dilation):
    """lax.reduce_window_sum over every dimension of x (rank <= 3): zero padding and holes, then
    torch's convolution with a kernel of ones."""
    xp = lax_pad(x, 0.0, [(lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation)])
    ones = torch.ones([1, 1] + list(window))
    return TORCH_CONV[x.dim()](xp[None, None], ones, stride=strides, dilation=window_dilation)[0, 0]


def sin_weighted(name, diff, op, doc, hvp_inputs=('x',), jvp_by_grads=False):
    """Registers sum(sin(op(diff...)) * c), c a literal of op's result shape, with a JVP direction
    for every input and HVP directions for hvp_inputs."""
    shape = list(op(*diff.values()).shape)
    c = ramp(shape, 5, 13, 0.25, 1.4)
    jvp = {k: ramp(list(v.shape), 3, 17, 0.125, 0.9) for k, v in diff.items()}
    hvps = {k: ramp(list(diff[k].shape), 7, 19, 0.1, 0.85) for k in hvp_inputs}
    case(name, diff, dict(c=c), lambda *a: torch.sum(torch.sin(op(*a[:-1])) * a[-1]),
         hvps=hvps, doc=f'sum(sin({doc}) * c)', jvp=jvp, jvp_by_grads=jvp_by_grads)


def conv_case(name, x_shape, w_shape, doc, op):
    x = ramp(x_shape, 7, 181, 0.01, 0.9)
    w = ramp(w_shape, 5, 73, 0.02, 0.7)
    sin_weighted(name, dict(x=x, w=w), op, doc, hvp_inputs=('x', 'w'))


conv_case('conv_strides_valid', [2, 3, 5, 6], [4, 3, 3, 2],
          'conv_general_dilated(x, w, strides (2, 1), "VALID")',
          lambda x, w: conv_general_dilated(x, w, [2, 1], 'VALID'))
conv_case('conv_same', [1, 2, 6, 5], [3, 2, 3, 2],
          'conv_general_dilated(x, w, strides (2, 1), "SAME"): pads (0, 1), (0, 1)',
          lambda x, w: conv_general_dilated(x, w, [2, 1], 'SAME'))
conv_case('conv_negative_padding', [1, 2, 5, 6], [2, 2, 2, 3],
          'conv_general_dilated(x, w, strides (1, 1), padding ((2, -1), (-1, 1)))',
          lambda x, w: conv_general_dilated(x, w, [1, 1], [(2, -1), (-1, 1)]))
conv_case('conv_lhs_dilation', [1, 2, 3, 4], [3, 2, 2, 3],
          'conv_general_dilated(x, w, strides (1, 2), padding ((1, 0), (2, 1)), '
          'lhs_dilation (2, 3))',
          lambda x, w: conv_general_dilated(x, w, [1, 2], [(1, 0), (2, 1)], lhs_dilation=[2, 3]))
conv_case('conv_transpose', [1, 3, 3, 4], [3, 2, 3, 3],
          'conv_transpose(x, w, strides (2, 2), padding ((1, 2), (2, 2)), ("NCHW", "OIHW", '
          '"NCHW"), transpose_kernel): torch conv_transpose2d(x, w, stride 2, padding (1, 0), '
          'output_padding (1, 0))',
          lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=(1, 0), output_padding=(1, 0)))
conv_case('conv_rhs_dilation', [2, 2, 6, 7], [2, 2, 2, 3],
          'conv_general_dilated(x, w, strides (1, 2), padding ((1, 0), (2, 1)), '
          'rhs_dilation (2, 2))',
          lambda x, w: conv_general_dilated(x, w, [1, 2], [(1, 0), (2, 1)], rhs_dilation=[2, 2]))
conv_case('conv_feature_groups', [2, 4, 5, 4], [6, 2, 3, 2],
          'conv_general_dilated(x, w, strides (1, 1), "SAME", feature_group_count 2)',
          lambda x, w: conv_general_dilated(x, w, [1, 1], 'SAME', feature_group_count=2))
conv_case('conv_depthwise', [1, 3, 5, 5], [6, 1, 3, 3],
          'conv_general_dilated(x, w, strides (2, 2), padding ((1, 1), (1, 1)), '
          'feature_group_count 3): depthwise, channel multiplier 2',
          lambda x, w: conv_general_dilated(x, w, [2, 2], [(1, 1), (1, 1)], feature_group_count=3))
conv_case('conv_batch_groups', [4, 3, 4, 5], [4, 3, 2, 2],
          'conv_general_dilated(x, w, strides (1, 1), "VALID", batch_group_count 2): '
          'concat over g of conv(x[2g:2g+2], w[2g:2g+2]) along features',
          lambda x, w: conv_general_dilated(x, w, [1, 1], 'VALID', batch_group_count=2))
conv_case('conv_1d', [2, 3, 8], [2, 3, 3],
          'conv_general_dilated(x, w, strides (2,), "SAME_LOWER", rhs_dilation (2,)): pads (2, 1)',
          lambda x, w: conv_general_dilated(x, w, [2], 'SAME_LOWER', rhs_dilation=[2]))
conv_case('conv_3d', [1, 2, 4, 5, 3], [2, 2, 2, 3, 2],
          'conv_general_dilated(x, w, strides (1, 2, 1), padding ((0, 1), (1, 1), (0, 0)))',
          lambda x, w: conv_general_dilated(x, w, [1, 2, 1], [(0, 1), (1, 1), (0, 0)]))
conv_case('conv_nhwc', [2, 5, 4, 3], [3, 3, 3, 4],
          'conv_general_dilated(x, w, strides (1, 2), "SAME", ("NHWC", "HWIO", "NHWC")): '
          'pads (1, 1), (0, 1)',
          lambda x, w: conv_general_dilated(x, w, [1, 2], 'SAME',
                                            dimension_numbers=('NHWC', 'HWIO', 'NHWC')))
conv_case('conv_permuted_layout', [2, 4, 5, 3], [3, 2, 3, 2],
          'conv_general_dilated(x, w, strides (2, 1), padding ((1, 0), (0, 1)), ("NHWC", "IWHO", '
          '"CNHW")): the kernel names W first, so strides and padding are (W, H)',
          lambda x, w: conv_general_dilated(x, w, [2, 1], [(1, 0), (0, 1)],
                                            dimension_numbers=('NHWC', 'IWHO', 'CNHW')))
sin_weighted('nn_conv_bias',
             dict(x=ramp([2, 5, 5, 4], 7, 181, 0.01, 0.9), w=ramp([3, 2, 2, 4], 5, 73, 0.02, 0.7),
                  b=t([0.3, -0.2, 0.15, -0.45], [4])),
             lambda x, w, b: conv_general_dilated(x, w, [1, 1], 'SAME', rhs_dilation=[1, 2],
                                                  dimension_numbers=('NHWC', 'HWIO', 'NHWC'),
                                                  feature_group_count=2) + b,
             'nn::conv(x NHWC, w HWIO, strides (1, 1), "SAME", rhs_dilation (1, 2), '
             'feature_group_count 2, bias b)',
             hvp_inputs=('x', 'w'))

# Max pooling. Ties go to the first element in window order (XLA's ge selector); torch 1.13's CPU
# max_pool{1,2,3}d (NCHW and channels-last kernels) keeps the first maximum as well (a later
# element must be strictly greater), checked below against a naive loop for the tied case.
MAX_POOL_TIES_X = ramp([2, 4, 5, 2], 3, 7, 0.25, 0.8)  # 7 levels: many tied windows


def max_pool_ties(x):
    return to_channels_last(F.max_pool2d(to_channels_first(x), (2, 3), stride=(1, 2)))


sin_weighted('max_pool_ties', dict(x=MAX_POOL_TIES_X), max_pool_ties,
             'nn::max_pool(x NHWC, window (2, 3), strides (1, 2), "VALID"); tied maxima')


def check_max_pool_ties():
    """The gradient torch gives the tied case equals a naive loop's: each window's cotangent to
    its first maximum in window order (row-major over the window); and some windows do tie."""
    x = MAX_POOL_TIES_X.clone().requires_grad_(True)
    y = max_pool_ties(x)
    cot = ramp(list(y.shape), 5, 13, 0.25, 1.4)
    (g,) = torch.autograd.grad(torch.sum(y * cot), [x])
    want = torch.zeros_like(x)
    ties = 0
    n_, oh_, ow_, c_ = y.shape
    for n in range(n_):
        for oh in range(oh_):
            for ow in range(ow_):
                for c in range(c_):
                    window = [(oh + i, 2 * ow + j) for i in range(2) for j in range(3)]
                    vals = [float(MAX_POOL_TIES_X[n, h, w, c]) for h, w in window]
                    best = vals.index(max(vals))
                    ties += vals.count(max(vals)) > 1
                    want[n, window[best][0], window[best][1], c] += cot[n, oh, ow, c]
    if ties == 0 or not torch.equal(g, want):
        raise AssertionError('max_pool_ties: torch does not send ties to the first maximum')


check_max_pool_ties()

sin_weighted('max_pool_same', dict(x=ramp([1, 5, 5, 2], 7, 53, 0.04, 1.0)),
             lambda x: to_channels_last(F.max_pool2d(
                 lax_pad(to_channels_first(x), float('-inf'),
                         [(0, 0, 0), (0, 0, 0), (0, 1, 0), (0, 1, 0)]), 2, stride=2)),
             'nn::max_pool(x NHWC, window (2, 2), strides (2, 2), "SAME"): pads (0, 1), (0, 1)')
sin_weighted('max_pool_1d_unbatched', dict(x=ramp([7, 2], 3, 5, 0.3, 0.7)),
             lambda x: F.max_pool1d(x.t()[None], 3, stride=2, padding=1)[0].t(),
             'nn::max_pool(x [7, 2] (no batch), window (3,), strides (2,), padding ((1, 1),)); '
             'ties')
sin_weighted('reduce_window_max', dict(x=ramp([3, 4, 5], 4, 11, 0.2, 1.1)),
             lambda x: reduce_window_max(x, [2, 2, 3], [1, 2, 1], [(0, 1), (1, 0), (1, 1)],
                                         [1, 1, 2], [1, 2, 1]),
             'reduce_window_max(x, window (2, 2, 3), strides (1, 2, 1), padding ((0, 1), (1, 0), '
             '(1, 1)), base_dilation (1, 1, 2), window_dilation (1, 2, 1)); ties')
sin_weighted('reduce_window_sum', dict(x=ramp([2, 5, 6], 7, 67, 0.03, 0.95)),
             lambda x: reduce_window_sum(x, [1, 3, 2], [1, 1, 2], [(0, 0), (2, 1), (0, 1)],
                                         [1, 2, 1], [1, 1, 2]),
             'reduce_window_sum(x, window (1, 3, 2), strides (1, 1, 2), padding ((0, 0), (2, 1), '
             '(0, 1)), base_dilation (1, 2, 1), window_dilation (1, 1, 2))')

# Average pooling (flax.linen.avg_pool): count_include_pad divides by the window's size, otherwise
# by the number of x's elements in the window; torch's avg_pool with symmetric padding does both.
AVG_POOL_X = ramp([2, 5, 4, 3], 7, 127, 0.015, 0.9)
sin_weighted('avg_pool_include_pad', dict(x=AVG_POOL_X),
             lambda x: to_channels_last(F.avg_pool2d(to_channels_first(x), (3, 2), stride=(2, 1),
                                                     padding=(1, 1), count_include_pad=True)),
             'nn::avg_pool(x NHWC, window (3, 2), strides (2, 1), padding ((1, 1), (1, 1)), '
             'count_include_pad true)')
sin_weighted('avg_pool_exclude_pad', dict(x=AVG_POOL_X),
             lambda x: to_channels_last(F.avg_pool2d(to_channels_first(x), (3, 2), stride=(2, 1),
                                                     padding=(1, 1), count_include_pad=False)),
             'nn::avg_pool(x NHWC, window (3, 2), strides (2, 1), padding ((1, 1), (1, 1)), '
             'count_include_pad false)')
sin_weighted('avg_pool_3d_exclude_pad', dict(x=ramp([1, 4, 3, 5, 2], 7, 127, 0.015, 0.9)),
             lambda x: to_channels_last(F.avg_pool3d(to_channels_first(x), (2, 2, 3),
                                                     stride=(2, 1, 2), padding=(1, 0, 1),
                                                     count_include_pad=False)),
             'nn::avg_pool(x NDHWC, window (2, 2, 3), strides (2, 1, 2), padding ((1, 1), (0, 0), '
             '(1, 1)), count_include_pad false)')


# ---- evaluation and printing --------------------------------------------------------------------

def fmt(v):
    v = float(v)
    if math.isnan(v) or math.isinf(v):
        raise ValueError('non-finite reference value')
    return repr(v)


def emit_array(out, ctype, name, tensor):
    flat = tensor.detach().reshape(-1).tolist()
    shape = list(tensor.shape)
    out.append(f'inline constexpr int64_t {name}_shape[] = {{{", ".join(map(str, shape))}}};')
    vals = ', '.join(str(int(v)) if ctype != 'double' else fmt(v) for v in flat)
    out.append(f'inline constexpr {ctype} {name}[] = {{{vals}}};')


def run_case(c, out):
    names = list(c['diff'])
    xs = {k: v.clone().requires_grad_(True) for k, v in c['diff'].items()}
    consts = c['const']
    value = c['fn'](*xs.values(), *consts.values())
    grads = torch.autograd.grad(value, list(xs.values()), create_graph=True)
    out.append(f'// {c["doc"]}')
    out.append(f'namespace {c["name"]} {{')
    for k, v in c['diff'].items():
        emit_array(out, 'double', k, v)
    for k, v in consts.items():
        emit_array(out, 'int32_t' if not v.is_floating_point() else 'double', k, v)
    out.append(f'inline constexpr double value = {fmt(value.item())};')
    for k, g in zip(names, grads):
        emit_array(out, 'double', f'grad_{k}', g)
    if c['jvp'] is not None:
        # Forward mode, independently of the reverse-mode gradients (which must agree with it).
        dirs = [c['jvp'][k] for k in names]
        by_grads = sum(torch.sum(g * d).item() for g, d in zip(grads, dirs))
        if c['jvp_by_grads']:
            jvp = by_grads
        else:
            with fwAD.dual_level():
                duals = [fwAD.make_dual(c['diff'][k], d) for k, d in zip(names, dirs)]
                jvp = fwAD.unpack_dual(c['fn'](*duals, *consts.values())).tangent.item()
        if abs(jvp - by_grads) > 1e-12 * max(1.0, abs(jvp)):
            raise AssertionError(f'{c["name"]}: forward-mode JVP {jvp} != <grad, v> {by_grads}')
        for k, d in zip(names, dirs):
            emit_array(out, 'double', f'jvp_{k}_dir', d)
        out.append(f'inline constexpr double jvp = {fmt(jvp)};')
    for k, v in c['hvps'].items():
        i = names.index(k)
        # d/dx_k <grad_k f, v>: forward-over-reverse in minijax, reverse-over-reverse here.
        (hv,) = torch.autograd.grad(torch.sum(grads[i] * v), [xs[k]], retain_graph=True)
        emit_array(out, 'double', f'hvp_{k}_dir', v)
        emit_array(out, 'double', f'hvp_{k}', hv)
    out.append(f'}}  // namespace {c["name"]}')
    out.append('')


# ---- cumulative ops ------------------------------------------------------------------------------
GROUP = 'lax'
# lax.cumprod, cummax, cummin, cumlogsumexp (jax/_src/lax/control_flow/loops.py) against torch's
# cumprod, cummax, cummin and logcumsumexp; reverse=True is torch's op on the input flipped along the
# axis, flipped back. The inputs are distinct (no ties: torch's cummax/cummin gradient goes to the
# index it returns, JAX's splits ties evenly).

def rev_cum(op, x, dim):
    return torch.flip(op(torch.flip(x, [dim]), dim), [dim])


def cumulative_ops(x):
    return torch.stack([torch.cumprod(x, 1),
                        rev_cum(torch.cumprod, x, 0),
                        torch.cummax(x, 0).values,
                        rev_cum(lambda y, d: torch.cummin(y, d).values, x, 1),
                        torch.logcumsumexp(x, 1),
                        rev_cum(torch.logcumsumexp, x, 0)])


sin_weighted('cumulative', dict(x=ramp([3, 5], 7, 17, 0.25, 2.05)), cumulative_ops,
             'stack([cumprod(x,1), cumprod(x,0,rev), cummax(x,0), cummin(x,1,rev), '
             'cumlogsumexp(x,1), cumlogsumexp(x,0,rev)]); jvp = <grad, v>', jvp_by_grads=True)
# Large inputs (exp overflows in f64 beyond 709.78): logcumsumexp stays finite; its derivatives are
# the prefixes' softmax weights.
sin_weighted('cumlogsumexp_large', dict(x=ramp([2, 6], 5, 13, 3.0, -700.0)),
             lambda x: torch.logcumsumexp(x, 1) - 700.0, 'cumlogsumexp(x, 1) - 700, x in [700, 736]; '
             'jvp = <grad, v>', jvp_by_grads=True)
# issue 29's elementwise functions that PyTorch has: sinh, asin and erfc (torch.special.erfc).
case('sinh_asin_erfc',
     dict(x=t([-0.8, -0.35, 0.1, 0.45, 0.7, 0.95], [6])),
     dict(c=t([1.3, -0.6, 0.9, 2.1, -1.4, 0.5], [6])),
     lambda x, c: torch.sum(torch.sinh(2.0 * x) * c + torch.asin(x) * torch.special.erfc(x)
                            + torch.special.erfc(c * x)),
     hvps=dict(x=t([0.4, -1.1, 0.7, 0.25, -0.5, 1.3], [6])),
     doc='sum(sinh(2 x) c + asin(x) erfc(x) + erfc(c x))',
     jvp=dict(x=t([0.3, 0.8, -0.6, 1.2, -0.9, 0.15], [6])))

# lgamma, digamma and polygamma (issue 29 item 11): their own header,
# tests/autodiff/torch_reference_data_special.h (namespace torch_reference_special).
GROUP = 'special'
# polygamma's arguments stay positive (below -10 JAX's polygamma is XLA's zeta formula, not the
# function torch computes).
# One function per case, sum(c f(x)) with c > 0, so each gradient element is one term (torch's
# trigamma, behind every derivative of digamma, is accurate to about 5e-10 relative: a sum of terms
# that cancel would lose that bound).
GAMMA_X = t([-2.3, -0.6, 0.35, 1.2, 2.9, 6.5], [6])
GAMMA_C = t([1.3, 0.6, 0.9, 2.1, 1.4, 0.5], [6])
GAMMA_JVP = t([0.3, 0.8, 0.6, 1.2, 0.9, 0.15], [6])
GAMMA_HVP = t([0.4, 1.1, 0.7, 0.25, 0.5, 1.3], [6])
for name, fn, doc in [
        ('lgamma', lambda x, c: torch.sum(c * torch.lgamma(x)), 'sum(c lgamma(x))'),
        ('digamma', lambda x, c: torch.sum(c * torch.digamma(x)), 'sum(c digamma(x))'),
        ('polygamma1', lambda x, c: torch.sum(c * torch.polygamma(1, x * x + 0.5)), 'sum(c polygamma(1, x^2 + 1/2))'),
        ('polygamma2', lambda x, c: torch.sum(c * torch.polygamma(2, torch.exp(x))), 'sum(c polygamma(2, exp(x)))'),
        ('polygamma3', lambda x, c: torch.sum(c * torch.polygamma(3, x * x + 0.25)), 'sum(c polygamma(3, x^2 + 1/4))')]:
    case(name, dict(x=GAMMA_X), dict(c=GAMMA_C), fn, hvps=dict(x=GAMMA_HVP), doc=doc, jvp=dict(x=GAMMA_JVP))


# ---- sorting, top-k, scatters and gathers -----------------------------------------------------
GROUP = 'lax'
# lax.sort (jax/_src/lax/lax.py; stable, ties kept in input order, several operands permuted by the
# first num_keys lexicographically), lax.top_k, and the general scatters and gather (slicing.py)
# against torch.sort(stable=True), torch.topk, index_add, scatter_reduce and gather. The tangents
# follow the permutation (sort, top_k) or the indices (scatters), as JAX's rules do; torch's
# reverse mode is the reference, the JVP is <grad, v> (torch 1.13 lacks forward-mode rules for
# some of these).

def sort_rows_and_cols(x):
    return torch.stack([torch.sort(x, dim=1, stable=True).values, torch.sort(x, dim=0, stable=True).values])


# x [3, 6] with ties in each row and column (the stable order decides where each tangent goes).
SORT_TIES_X = t([0.5, -1.0, 0.5, 2.0, -1.0, 0.5,
                 1.5, 1.5, 0.25, -0.75, 1.5, 0.0,
                 0.5, 0.25, -1.0, 2.0, 0.0, 0.5], [3, 6])
sin_weighted('sort_stable_ties', dict(x=SORT_TIES_X), sort_rows_and_cols,
             'stack([sort(x, 1), sort(x, 0)]), stable, with ties; jvp = <grad, v>', jvp_by_grads=True)


def sort_two_keys(x):
    """lax.sort((x[0], x[1], x[2]), dimension=0, num_keys=2): a stable lexicographic sort by
    (x[0], x[1]) is a stable sort by x[1] followed by a stable sort by x[0]; x[2] is permuted."""
    i2 = torch.sort(x[1], dim=0, stable=True).indices
    i1 = torch.sort(x[0][i2], dim=0, stable=True).indices
    perm = i2[i1]
    return torch.stack([x[0][perm], x[1][perm], x[2][perm]])


# Rows: keys 1 (with ties), keys 2 (ties among the tied keys 1 too), the carried values.
SORT_KEYS_X = t([1.0, -0.5, 1.0, 0.25, -0.5, 1.0, 0.25, 2.0,
                 0.3, 0.7, -0.2, 0.9, 0.7, 0.3, -0.4, 0.1,
                 0.15, -0.35, 0.55, 1.25, -0.85, 0.45, 0.95, -1.1], [3, 8])
sin_weighted('sort_two_keys', dict(x=SORT_KEYS_X), sort_two_keys,
             'stack(lax.sort((x[0], x[1], x[2]), 0, num_keys=2)); jvp = <grad, v>', jvp_by_grads=True)
sin_weighted('top_k', dict(x=ramp([3, 7], 5, 23, 0.2, 2.1)), lambda x: torch.topk(x, 3, 1).values,
             'top_k(x, 3).values (distinct values); jvp = <grad, v>', jvp_by_grads=True)


# The scatters: x's first 5 rows are the operand, the rest the updates (row windows of 3).
SCATTER_ROWS = [1, 3, 1, 4]


def scatter_rows(x, reduce, rows):
    operand, updates = x[:5], x[5:5 + len(rows)]
    index = torch.tensor(rows).reshape(-1, 1).expand(-1, 3)
    return operand.scatter_reduce(0, index, updates, reduce, include_self=True)


sin_weighted('scatter_add_repeated', dict(x=ramp([9, 3], 7, 29, 0.15, 1.9)),
             lambda x: scatter_rows(x, 'sum', SCATTER_ROWS),
             'scatter_add(x[:5], rows [1, 3, 1, 4], x[5:]) (repeated row 1); jvp = <grad, v>',
             jvp_by_grads=True)
sin_weighted('scatter_mul_unique', dict(x=ramp([8, 3], 5, 31, 0.1, 1.3)),
             lambda x: scatter_rows(x, 'prod', [3, 0, 4]),
             'scatter_mul(x[:5], rows [3, 0, 4], x[5:]); jvp = <grad, v>', jvp_by_grads=True)
sin_weighted('scatter_max_repeated', dict(x=ramp([9, 3], 11, 37, 0.13, 2.3)),
             lambda x: scatter_rows(x, 'amax', SCATTER_ROWS),
             'scatter_max(x[:5], rows [1, 3, 1, 4], x[5:]) (distinct values); jvp = <grad, v>',
             jvp_by_grads=True)
sin_weighted('scatter_min_repeated', dict(x=ramp([9, 3], 13, 41, 0.11, 2.2)),
             lambda x: scatter_rows(x, 'amin', SCATTER_ROWS),
             'scatter_min(x[:5], rows [1, 3, 1, 4], x[5:]) (distinct values); jvp = <grad, v>',
             jvp_by_grads=True)
sin_weighted('scatter_unique', dict(x=ramp([8, 3], 3, 19, 0.17, 1.6)),
             lambda x: x[:5].index_copy(0, torch.tensor([4, 0, 2]), x[5:]),
             'scatter(x[:5], rows [4, 0, 2], x[5:]) (unique); jvp = <grad, v>', jvp_by_grads=True)
# Per-column indices: torch's scatter_reduce along dim 0, in JAX's terms the column a batching dim
# (operand_batching_dims (1,), scatter_indices_batching_dims (1,)).
SCATTER_COLUMN_INDEX = [[0, 2, 4], [3, 2, 0], [0, 1, 4], [3, 3, 1]]
sin_weighted('scatter_add_batched', dict(x=ramp([9, 3], 7, 43, 0.09, 1.7)),
             lambda x: x[:5].scatter_reduce(0, torch.tensor(SCATTER_COLUMN_INDEX), x[5:], 'sum',
                                            include_self=True),
             'x[:5].scatter_reduce(0, index, x[5:], sum), index per column; jvp = <grad, v>',
             jvp_by_grads=True)
GATHER_INDEX = [[2, 0, 2, 4, 1], [3, 3, 0, 1, 4], [1, 4, 4, 0, 2]]
sin_weighted('gather_along_axis', dict(x=ramp([3, 5], 5, 17, 0.21, 1.5)),
             lambda x: torch.gather(x, 1, torch.tensor(GATHER_INDEX)),
             'torch.gather(x, 1, index) (repeated indices); jvp = <grad, v>', jvp_by_grads=True)

# ---- linear algebra ------------------------------------------------------------------------------
GROUP = 'linalg'
# lax.linalg.cholesky and triangular_solve (jax/_src/lax/linalg.py) against torch.linalg.cholesky and
# torch.linalg.solve_triangular. Inputs are batched ([2, n, n]); matrices are made well conditioned
# inside the function (the same expression on both sides). The triangle a triangular solve reads is
# taken here explicitly (tril/triu, ones on the diagonal when unit), so torch's own treatment of the
# other triangle does not enter the oracle.


def spd_of(x):
    """x x^T / n + I: symmetric positive definite and smooth in x (batched over the leading dim)."""
    n = x.shape[-1]
    return x @ x.mT / n + torch.eye(n)


sin_weighted('cholesky_batched', dict(x=ramp([2, 4, 4], 7, 23, 0.1, 1.1)),
             lambda x: torch.linalg.cholesky(spd_of(x)),
             'cholesky(x x^T / 4 + I), x [2, 4, 4]')


def triangle(a, lower, unit):
    """The matrix lax.linalg.triangular_solve reads from a: its lower (else upper) triangle, with
    ones on the diagonal if unit."""
    n = a.shape[-1]
    if unit:
        strict = torch.tril(a, -1) if lower else torch.triu(a, 1)
        return strict + torch.eye(n)
    return torch.tril(a) if lower else torch.triu(a)


def tri_solve(a, b, left, lower, trans, unit):
    """lax.linalg.triangular_solve(a + 3 I, b, left_side, lower, transpose_a, unit_diagonal)."""
    t = triangle(a + 3 * torch.eye(a.shape[-1]), lower, unit)
    op = t.mT if trans else t
    return torch.linalg.solve_triangular(op, b, upper=(lower == trans), left=left)


for combo in range(8):
    left, trans, unit = bool(combo & 1), bool(combo & 2), bool(combo & 4)
    lower = combo % 3 != 1
    b_shape = [2, 3, 2] if left else [2, 2, 3]
    sin_weighted(f'triangular_solve_{combo}',
                 dict(a=ramp([2, 3, 3], 5 + combo, 29, 0.07, 0.9), b=ramp(b_shape, 3 + combo, 31, 0.05, 0.7)),
                 lambda a, b, left=left, lower=lower, trans=trans, unit=unit: tri_solve(a, b, left, lower, trans,
                                                                                      unit),
                 f'triangular_solve(a + 3 I, b, left_side={left}, lower={lower}, transpose_a={trans}, '
                 f'unit_diagonal={unit}), a [2, 3, 3]',
                 hvp_inputs=('a', 'b'))



# lax.linalg.lu, qr, eigh and svd (jax/_src/lax/linalg.py) against torch.linalg.lu_factor, qr, eigh,
# svd and svdvals (f64, batched [2, ...]). Both sides run LAPACK's ?getrf_ and ?geqrf_/?orgqr_, so
# the LU factors (with the same pivots) and Q and R (the same Householder signs) are compared as
# they are. Eigenvectors and singular vectors are not unique (signs, and any basis of a repeated
# eigenspace), so eigh and svd are compared through gauge-invariant quantities only: eigenvalues,
# singular values, V diag(f(w)) V^T, a projector onto a well-separated eigenspace, U diag(f(s)) V^T.
# The inputs are small ramps plus a matrix that fixes the pivots or separates the spectrum, the same
# expression on both sides (tests/autodiff/test_torch_reference_linalg.cc).


def pivot_matrix(m, n, rows):
    """3 at (rows[j], j) for each j: partial pivoting picks row rows[j] at step j (the other entries
    are at most 0.2 in magnitude, so elimination keeps the 3s dominant)."""
    p = torch.zeros(m, n)
    for j, r in enumerate(rows):
        p[r, j] = 3.0
    return p


def lu_packed(x, rows):
    """lax.linalg.lu(x + pivot_matrix)[0]: the packed L (unit diagonal implicit) and U."""
    return torch.linalg.lu_factor(x + pivot_matrix(x.shape[-2], x.shape[-1], rows))[0]


for name, shape, rows in (('lu_square', [2, 4, 4], [2, 0, 3, 1]),
                          ('lu_tall', [2, 5, 3], [4, 1, 3]),
                          ('lu_wide', [2, 3, 5], [1, 2, 0])):
    sin_weighted(name, dict(x=ramp(shape, 7, 41, 0.01, 0.2)),
                 lambda x, rows=rows: lu_packed(x, rows),
                 f'lu(x + P)[0] with P 3 at (rows {rows}, columns 0, 1, ..), x {shape}')


def band(m, n, d):
    """An m x n matrix with d[i] at (i, i)."""
    b = torch.zeros(m, n)
    for i, v in enumerate(d):
        b[i, i] = v
    return b


def qr_flat(x, mode):
    """Q and R of lax.linalg.qr(x + band(3, 2, 1, ...)), flattened per batch element and joined."""
    m, n = x.shape[-2], x.shape[-1]
    q, r = torch.linalg.qr(x + band(m, n, [3.0 - 0.5 * i for i in range(min(m, n))]), mode=mode)
    return torch.cat([q.reshape(2, -1), r.reshape(2, -1)], 1)


sin_weighted('qr_reduced_tall', dict(x=ramp([2, 5, 3], 5, 37, 0.02, 0.36)),
             lambda x: qr_flat(x, 'reduced'),
             'concat(q, r) of qr(x + diag(3, 2.5, 2), full_matrices=False), x [2, 5, 3]')
sin_weighted('qr_complete_square', dict(x=ramp([2, 3, 3], 7, 31, 0.02, 0.3)),
             lambda x: qr_flat(x, 'complete'),
             'concat(q, r) of qr(x + diag(3, 2.5, 2), full_matrices=True), x [2, 3, 3]')

EIGH_SHIFT = [1.0, 1.5, 4.0, 5.5]


def eigh_of(x):
    """lax.linalg.eigh(x + diag(1, 1.5, 4, 5.5)): symmetrized first, as JAX's default."""
    a = x + torch.diag(torch.tensor(EIGH_SHIFT))
    return torch.linalg.eigh((a + a.mT) / 2)


def eigh_projector(x):
    """V[:, :2] V[:, :2]^T: the projector onto the two smallest eigenvalues' eigenspace (~1 and
    ~1.5, well apart from ~4 and ~5.5)."""
    v = eigh_of(x)[1][..., :2]
    return v @ v.mT


EIGH_X = ramp([2, 4, 4], 7, 43, 0.01, 0.21)
sin_weighted('eigh_eigenvalues', dict(x=EIGH_X), lambda x: eigh_of(x)[0],
             'w of eigh(x + diag(1, 1.5, 4, 5.5)), x [2, 4, 4]')
def eigh_v_fw_vt(x):
    w, v = eigh_of(x)
    return v @ torch.diag_embed(torch.exp(0.3 * w)) @ v.mT


sin_weighted('eigh_v_fw_vt', dict(x=EIGH_X), eigh_v_fw_vt,
             'V diag(exp(0.3 w)) V^T of eigh(x + diag(1, 1.5, 4, 5.5)), x [2, 4, 4]')
sin_weighted('eigh_projector', dict(x=EIGH_X), eigh_projector,
             'V[:, :2] V[:, :2]^T of eigh(x + diag(1, 1.5, 4, 5.5)), x [2, 4, 4]')


def svd_parts(x):
    """lax.linalg.svd(x + band(3, 2, 1), full_matrices=False): U, s, Vh."""
    m, n = x.shape[-2], x.shape[-1]
    return torch.linalg.svd(x + band(m, n, [3.0, 2.0, 1.0][:min(m, n)]), full_matrices=False)


def svd_u_fs_vh(x, f):
    u, s, vh = svd_parts(x)
    return u @ torch.diag_embed(f(s)) @ vh


SVD_TALL = ramp([2, 4, 3], 5, 47, 0.01, 0.23)
SVD_WIDE = ramp([2, 3, 4], 7, 47, 0.01, 0.23)
sin_weighted('svd_singular_values', dict(x=SVD_TALL),
             lambda x: torch.linalg.svdvals(x + band(4, 3, [3.0, 2.0, 1.0])),
             's of svd(x + diag(3, 2, 1)), x [2, 4, 3]')
sin_weighted('svd_u_fs_vh_tall', dict(x=SVD_TALL), lambda x: svd_u_fs_vh(x, torch.tanh),
             'U diag(tanh(s)) Vh of svd(x + diag(3, 2, 1), full_matrices=False), x [2, 4, 3]')
sin_weighted('svd_u_fs_vh_wide', dict(x=SVD_WIDE), lambda x: svd_u_fs_vh(x, torch.tanh),
             'U diag(tanh(s)) Vh of svd(x + diag(3, 2, 1), full_matrices=False), x [2, 3, 4]')
sin_weighted('svd_u_s_vh_wide', dict(x=SVD_WIDE), lambda x: svd_u_fs_vh(x, lambda s: s),
             'U diag(s) Vh of svd(x + diag(3, 2, 1), full_matrices=False) (the matrix itself), '
             'x [2, 3, 4]')

GROUP = 'numpy_linalg'
# jnp.linalg's inv, solve, det, slogdet, pinv, norm and matrix_power (jax/_src/numpy/linalg.py;
# minijax's core/numpy_linalg.h) against torch.linalg's inv, solve, det, slogdet, pinv,
# vector_norm, matrix_norm and matrix_power (f64, batched [2, ...]). Square matrices are made well
# conditioned inside the function (x + 3 I, or x + 3 P with P a permutation so that LU pivots),
# the same expression on both sides; each input is checked here to be well away from the points
# where the function is not smooth (a singular matrix, repeated or zero singular values, a zero
# entry under |.|, a tie under max or min).


def well_conditioned(m):
    cond = torch.linalg.cond(m)
    assert torch.all(cond < 10), cond
    return m


def shift_i(x):
    """x + 3 I (batched)."""
    return well_conditioned(x + 3 * torch.eye(x.shape[-1]))


def shift_p(x, rows):
    """x + 3 P, P = pivot_matrix(rows): partial pivoting swaps rows."""
    return well_conditioned(x + pivot_matrix(x.shape[-1], x.shape[-1], rows))


def distinct_singular_values(m):
    """Asserts that the singular values of each matrix of m are apart and away from zero."""
    s = torch.linalg.svdvals(m)
    assert torch.all(s[..., -1] > 0.1 * s[..., 0]), s
    assert torch.all(s[..., :-1] - s[..., 1:] > 0.05 * s[..., :1]), s
    return m


def no_kinks(x, dim):
    """Asserts no zero entries, and no ties of |x| along dim (max and min |x| are unique)."""
    a = torch.abs(x)
    assert torch.all(a > 1e-3), x
    s = torch.sort(a, dim=dim).values
    assert torch.all(torch.diff(s, dim=dim) > 1e-3), x
    return x


PIV4 = [2, 0, 3, 1]  # a 4-cycle: an odd permutation, so det(x + 3 P) < 0
sin_weighted('inv', dict(x=ramp([2, 4, 4], 7, 37, 0.04, 0.7)), lambda x: torch.linalg.inv(shift_i(x)),
             'inv(x + 3 I), x [2, 4, 4]')
sin_weighted('solve_matrix_rhs',
             dict(a=ramp([2, 4, 4], 5, 37, 0.03, 0.5), b=ramp([2, 4, 2], 3, 17, 0.1, 0.75)),
             lambda a, b: torch.linalg.solve(shift_p(a, PIV4), b),
             'solve(a + 3 P(rows 2, 0, 3, 1), b), a [2, 4, 4], b [2, 4, 2]', hvp_inputs=('a', 'b'))
sin_weighted('solve_vector_rhs', dict(a=ramp([2, 3, 3], 7, 23, 0.06, 0.6), b=t([0.7, -1.1, 0.4], [3])),
             lambda a, b: torch.linalg.solve(shift_i(a), b),
             'solve(a + 3 I, b), a [2, 3, 3], b [3] (one right-hand side, broadcast)', hvp_inputs=('a', 'b'))
sin_weighted('det_2x2', dict(x=ramp([2, 2, 2], 3, 11, 0.1, 0.45)), lambda x: torch.linalg.det(shift_i(x)),
             'det(x + 3 I), x [2, 2, 2] (closed form in minijax)')
sin_weighted('det_3x3', dict(x=ramp([2, 3, 3], 5, 23, 0.07, 0.75)), lambda x: torch.linalg.det(shift_i(x)),
             'det(x + 3 I), x [2, 3, 3] (closed form in minijax)')
sin_weighted('det_4x4', dict(x=ramp([2, 4, 4], 7, 37, 0.03, 0.5)),
             lambda x: torch.linalg.det(shift_p(x, PIV4)),
             'det(x + 3 P(rows 2, 0, 3, 1)), x [2, 4, 4] (LU with pivoting, det < 0)')
SLOGDET_X = ramp([2, 4, 4], 5, 41, 0.03, 0.55)
assert torch.all(torch.linalg.slogdet(shift_p(SLOGDET_X, PIV4))[0] == -1)
sin_weighted('slogdet', dict(x=SLOGDET_X), lambda x: torch.linalg.slogdet(shift_p(x, PIV4))[1],
             'logabsdet of slogdet(x + 3 P(rows 2, 0, 3, 1)), x [2, 4, 4] (sign -1)')
sin_weighted('pinv_tall', dict(x=SVD_TALL),
             lambda x: torch.linalg.pinv(distinct_singular_values(x + band(4, 3, [3.0, 2.0, 1.0]))),
             'pinv(x + diag(3, 2, 1)), x [2, 4, 3]')
sin_weighted('pinv_wide', dict(x=SVD_WIDE),
             lambda x: torch.linalg.pinv(distinct_singular_values(x + band(3, 4, [3.0, 2.0, 1.0]))),
             'pinv(x + diag(3, 2, 1)), x [2, 3, 4]')

# Vector norms: distinct |x| (x = 0.1 k - 1.23: no zero, no two of opposite sign alike).
NORM_X = ramp([2, 3, 4], 5, 29, 0.1, 1.23)
for name, ord_, dim, keep, doc in (('vector_norm_1', 1, -1, False, 'vector_norm(x, 1, dim=-1)'),
                                   ('vector_norm_2', 2, 1, True, 'vector_norm(x, 2, dim=1, keepdim=True)'),
                                   ('vector_norm_3_5', 3.5, 0, False, 'vector_norm(x, 3.5, dim=0)'),
                                   ('vector_norm_inf', math.inf, -1, True,
                                    'vector_norm(x, inf, dim=-1, keepdim=True)')):
    sin_weighted(name, dict(x=NORM_X),
                 lambda x, o=ord_, d=dim, k=keep: torch.linalg.vector_norm(no_kinks(x, d), o, d, k),
                 f'{doc}, x [2, 3, 4]')
sin_weighted('vector_norm_flat', dict(x=NORM_X), lambda x: torch.linalg.vector_norm(x, keepdim=True),
             'vector_norm(x, keepdim=True) (ord None, axis None: the 2-norm of the flattened x), '
             'x [2, 3, 4]')


def sums_apart(x, sum_dim, over_dim):
    """Asserts no zero entries and distinct sums of |x| along sum_dim among those along over_dim
    (the induced 1 and inf norms' maximum and minimum are unique)."""
    no_kinks(x, sum_dim)
    s = torch.sort(torch.sum(torch.abs(x), sum_dim), dim=over_dim - (over_dim > sum_dim)).values
    assert torch.all(torch.diff(s, dim=over_dim - (over_dim > sum_dim)) > 1e-3), s
    return x


def svd_apart(x, dim):
    """Asserts distinct singular values away from zero of x's matrices over dim (row, col)."""
    distinct_singular_values(torch.movedim(x, dim, (-2, -1)))
    return x


MNORM_X = ramp([2, 3, 4], 13, 41, 0.13, 1.71)
for name, ord_, dim, keep, check, doc in (
        ('matrix_norm_fro', 'fro', (0, 1), True, None, 'matrix_norm(x, "fro", dim=(0, 1), keepdim=True)'),
        ('matrix_norm_nuc', 'nuc', (-2, -1), False, svd_apart, 'matrix_norm(x, "nuc")'),
        ('matrix_norm_1', 1, (0, 2), False, lambda x, d: sums_apart(x, d[0], d[1]),
         'matrix_norm(x, 1, dim=(0, 2))'),
        ('matrix_norm_inf', math.inf, (2, 1), False, lambda x, d: sums_apart(x, d[1], d[0]),
         'matrix_norm(x, inf, dim=(2, 1))'),
        ('matrix_norm_2', 2, (1, 2), True, svd_apart, 'matrix_norm(x, 2, dim=(1, 2), keepdim=True)'),
        ('matrix_norm_neg_2', -2, (2, 0), False, svd_apart, 'matrix_norm(x, -2, dim=(2, 0))')):
    sin_weighted(name, dict(x=MNORM_X),
                 lambda x, o=ord_, d=dim, k=keep, chk=check: torch.linalg.matrix_norm(
                     chk(x, d) if chk else x, o, d, k),
                 f'{doc}, x [2, 3, 4]')
sin_weighted('matrix_norm_neg_1_neg_inf', dict(x=MNORM_X),
             lambda x: torch.stack([torch.linalg.matrix_norm(sums_apart(x, 1, 2), -1, (1, 2), True),
                                    torch.linalg.matrix_norm(sums_apart(x, 2, 1), -math.inf, (1, 2), True)]),
             'stack([matrix_norm(x, -1, dim=(1, 2), keepdim=True), '
             'matrix_norm(x, -inf, dim=(1, 2), keepdim=True)]), x [2, 3, 4]')
sin_weighted('matrix_power_3', dict(x=ramp([2, 3, 3], 5, 19, 0.08, 0.7)),
             lambda x: torch.linalg.matrix_power(shift_i(x), 3), 'matrix_power(x + 3 I, 3), x [2, 3, 3]')
sin_weighted('matrix_power_neg_2', dict(x=ramp([2, 3, 3], 7, 19, 0.08, 0.7)),
             lambda x: torch.linalg.matrix_power(shift_i(x), -2), 'matrix_power(x + 3 I, -2), x [2, 3, 3]')


def header(group, cases, out_dir):
    name, what = GROUPS[group][:2]
    space = GROUPS[group][2] if len(GROUPS[group]) > 2 else 'torch_reference'
    out = []
    today = datetime.date.today().isoformat()
    out.append(f'// minijax tests: PyTorch reference values, gradients and Hessian-vector products (f64) of {what}.')
    out.append(f'// GENERATED by tools/torch_reference.py with PyTorch {torch.__version__} (Debian '
               f'python3-torch 1.13.1) on {today}; do not edit.')
    out.append('// Regenerate: /usr/bin/python3 tools/torch_reference.py (writes every '
               'tests/autodiff/torch_reference_data*.h)')
    out.append('// Each namespace holds one function\'s inputs (row-major, with *_shape), its value, '
               'grad_<input>')
    out.append('// for every differentiable input, and hvp_<input> = H v for the direction '
               'hvp_<input>_dir.')
    out.append('// Where jvp_<input>_dir are given, jvp is the JVP along all of them at once.')
    out.append('#pragma once')
    out.append('#include <cstdint>')
    out.append('')
    out.append(f'namespace {space} {{')
    out.append('')
    for c in cases:
        run_case(c, out)
    out.append(f'}}  // namespace {space}')
    with open(os.path.join(out_dir, name), 'w') as f:
        f.write('\n'.join(out) + '\n')


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, 'tests', 'autodiff')
    for group in GROUPS:
        header(group, [c for c in CASES if c['group'] == group], out_dir)


if __name__ == '__main__':
    main()
