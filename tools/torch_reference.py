#!/usr/bin/python3
# minijax tools: PyTorch reference values, gradients and Hessian-vector products (float64) of a
# set of functions built from minijax's primitives; prints tests/autodiff/torch_reference_data.h.
#
# Usage (Debian's python3-torch; not a project dependency, only this generator needs it):
#   /usr/bin/python3 tools/torch_reference.py > tests/autodiff/torch_reference_data.h
# The C++ side is tests/autodiff/test_torch_reference.cc: it computes the same functions with
# minijax (f64) on the inputs written here and compares with the values printed by this script.
# Every input is written literally below; nothing is random.
import datetime
import math
import sys

import torch

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


def case(name, diff, const, fn, hvps=(), doc=''):
    CASES.append(dict(name=name, diff=diff, const=const, fn=fn, hvps=dict(hvps), doc=doc))


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
    for k, v in c['hvps'].items():
        i = names.index(k)
        # d/dx_k <grad_k f, v>: forward-over-reverse in minijax, reverse-over-reverse here.
        (hv,) = torch.autograd.grad(torch.sum(grads[i] * v), [xs[k]], retain_graph=True)
        emit_array(out, 'double', f'hvp_{k}_dir', v)
        emit_array(out, 'double', f'hvp_{k}', hv)
    out.append(f'}}  // namespace {c["name"]}')
    out.append('')


def main():
    out = []
    today = datetime.date.today().isoformat()
    out.append('// minijax tests: PyTorch reference values, gradients and Hessian-vector products (f64).')
    out.append(f'// GENERATED by tools/torch_reference.py with PyTorch {torch.__version__} (Debian '
               f'python3-torch 1.13.1) on {today}; do not edit.')
    out.append('// Regenerate: /usr/bin/python3 tools/torch_reference.py > '
               'tests/autodiff/torch_reference_data.h')
    out.append('// Each namespace holds one function\'s inputs (row-major, with *_shape), its value, '
               'grad_<input>')
    out.append('// for every differentiable input, and hvp_<input> = H v for the direction '
               'hvp_<input>_dir.')
    out.append('#pragma once')
    out.append('#include <cstdint>')
    out.append('')
    out.append('namespace torch_reference {')
    out.append('')
    for c in CASES:
        run_case(c, out)
    out.append('}  // namespace torch_reference')
    sys.stdout.write('\n'.join(out) + '\n')


if __name__ == '__main__':
    main()
