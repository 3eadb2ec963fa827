#!/usr/bin/python3
# minijax tools: reference values of igamma(a, x) (the regularised lower incomplete gamma P) and
# igamma_grad_a(a, x) = dP/da (mpmath, 200 bits); writes tests/jit/special_reference/igamma*.bin.
#
# Usage (Debian 12's python3-mpmath 1.2.1, python3-numpy 1.24 and python3-scipy 1.10; not project
# dependencies, only this generator needs them; tools/special_reference.py runs it too):
#   /usr/bin/python3 tools/special_reference_igamma.py
# The C++ side is tests/jit/test_special_accuracy_igamma.cc (issue 29 item 8's bounds).
#
# Each function F gets tests/jit/special_reference/F.bin (little-endian):
#   8 bytes magic b"MJSREF02", uint32 n32, uint32 n64,
#   n32 records (float32 a, float32 x, float64 F(a, x) rounded once from the 200-bit value),
#   n64 records (float64 a, float64 x, float64 F(a, x) correctly rounded); NaN outside the domain.
# The (a, x) pairs of each dtype: the special values (a near 0, a = 1, x = 0, x = a and its
# neighbours, x = a + 1, large x, infinities, NaN, a <= 0, x < 0), pairs where P is near the
# accuracy threshold (1e-290 in f64, 1e-30 in f32), a 30 x 30 grid over a in (0, 100] and
# x in [0, 200], then 10,000 random pairs (numpy.random.default_rng(seed): half uniform over the
# domain, a quarter log-uniform in both, a quarter around the transition x = a).
# P is mpmath.gammainc(a, 0, x, regularized=True); dP/da is mpmath.diff of the regularised lower
# function where x <= a and minus that of the upper one where x > a (no cancellation against 1),
# at 200 bits (>= 30 correct digits). scipy.special.gammainc cross-checks P (a relative difference
# over 1e-9 where P >= 1e-280 and a >= 1e-300 stops the generator).
import math
import os
import struct
import sys
from multiprocessing import Pool

import mpmath
import numpy as np
import scipy.special

mpmath.mp.prec = 200
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(ROOT, "tests", "jit", "special_reference")
SEED = 20261207
N_RANDOM = 10000
INF = float("inf")
NAN = float("nan")


def outside(a, x):
    return math.isnan(a) or math.isnan(x) or a <= 0 or x < 0 or (a == INF and x == INF)


def p_value(a, x):
    if outside(a, x):
        return NAN
    if x == 0 or a == INF:
        return 0.0
    if x == INF:
        return 1.0
    return float(mpmath.gammainc(mpmath.mpf(a), 0, mpmath.mpf(x), regularized=True))


def grad_a_value(a, x):
    if outside(a, x):
        return NAN
    if x == 0 or x == INF or a == INF:
        return 0.0
    am, xm = mpmath.mpf(a), mpmath.mpf(x)
    if x > a:
        return float(-mpmath.diff(lambda t: mpmath.gammainc(t, xm, mpmath.inf, regularized=True), am))
    return float(mpmath.diff(lambda t: mpmath.gammainc(t, 0, xm, regularized=True), am))


def rd(v, dt):
    with np.errstate(over="ignore", under="ignore"):
        return float(np.float32(v)) if dt == "f32" else float(v)


def near(v, dt):
    t = np.float32 if dt == "f32" else np.float64
    with np.errstate(over="ignore"):
        w = t(v)
    return [float(np.nextafter(w, t(-INF))), float(w), float(np.nextafter(w, t(INF)))]


def pairs(dt, rng):
    t = np.float32 if dt == "f32" else np.float64
    sub = float(np.nextafter(t(0), t(1)))
    a_special = [sub, 1e-300, 1e-30, 1e-10, 1e-3, 0.1, 0.5, 1.0, 1.5, 2.0, 10.0, 50.0, 99.9, 100.0]
    out = []
    for a in a_special:
        a = rd(a, dt)
        for x in [0.0, sub, 1e-300, 1e-10, 0.1, 0.5, 1.0, 10.0, 100.0, 150.0, 200.0, INF] + near(a, dt) + near(a + 1, dt):
            out.append((a, rd(x, dt)))
    out += [(NAN, 1.0), (1.0, NAN), (0.0, 1.0), (-0.0, 1.0), (-1.0, 1.0), (1.0, -1.0), (1.0, -sub), (0.0, 0.0),
            (INF, 1.0), (INF, INF), (-INF, 1.0), (1.0, -INF), (2.0, 1e30), (100.0, 1e300)]
    # P near the threshold: x^a e^-x / Gamma(a + 1) = target, x small (x <- the fixed point).
    target = 1e-290 if dt == "f64" else 1e-30
    for a in [2.0, 5.0, 10.0, 20.0, 50.0, 100.0]:
        x = 0.0
        for _ in range(50):
            x = math.exp((math.log(target) + math.lgamma(a + 1) + x) / a)
        for f in (0.9, 0.99, 1.0, 1.01, 1.1):
            out.append((rd(a, dt), rd(x * f, dt)))
    for a in np.concatenate([np.geomspace(1e-8, 1, 10), np.linspace(1.5, 100, 20)]):
        for x in np.concatenate([[0.0], np.geomspace(1e-8, 1, 9), np.linspace(1.5, 200, 20)]):
            out.append((rd(a, dt), rd(x, dt)))
    n_u, n_l = N_RANDOM // 2, N_RANDOM // 4
    n_t = N_RANDOM - n_u - n_l
    a1 = 100 - rng.uniform(0, 100, n_u)  # (0, 100]
    x1 = rng.uniform(0, 200, n_u)
    a2 = np.exp(rng.uniform(math.log(1e-8), math.log(100), n_l))
    x2 = np.exp(rng.uniform(math.log(1e-8), math.log(200), n_l))
    a3 = rng.uniform(0.5, 100, n_t)
    x3 = np.clip(a3 + rng.uniform(-1, 1, n_t) * (2 * np.sqrt(a3) + 1), 0, 200)
    for a, x in zip(np.concatenate([a1, a2, a3]), np.concatenate([x1, x2, x3])):
        a, x = rd(a, dt), rd(x, dt)
        if a == 0:
            a = rd(1e-8, dt)
        out.append((a, x))
    return [(rd(a, dt), rd(x, dt)) for a, x in out]


def eval_point(args):
    name, a, x = args
    return p_value(a, x) if name == "igamma" else grad_a_value(a, x)


def cross_check(ps, vals):
    worst = 0.0
    for (a, x), v in zip(ps, vals):
        # scipy 1.10 returns 0 for a subnormal a (P is 1 there): those pairs are not compared.
        if math.isnan(v) or math.isinf(a) or math.isinf(x) or abs(v) < 1e-280 or a < 1e-300:
            continue
        s = float(scipy.special.gammainc(a, x))
        worst = max(worst, abs(s - v) / abs(v))
    print(f"igamma: scipy.special.gammainc differs from mpmath by at most {worst:.3g} (relative)",
          file=sys.stderr)
    if worst > 1e-9:
        raise SystemExit("scipy and mpmath disagree")


def write(name, pool):
    rng = np.random.default_rng(SEED + sum(map(ord, "igamma")))
    p32, p64 = pairs("f32", rng), pairs("f64", rng)
    v32 = pool.map(eval_point, [(name, a, x) for a, x in p32], chunksize=64)
    v64 = pool.map(eval_point, [(name, a, x) for a, x in p64], chunksize=64)
    if name == "igamma":
        cross_check(p64, v64)
    buf = bytearray(b"MJSREF02") + struct.pack("<II", len(p32), len(p64))
    for (a, x), v in zip(p32, v32):
        buf += struct.pack("<ffd", a, x, v)
    for (a, x), v in zip(p64, v64):
        buf += struct.pack("<ddd", a, x, v)
    with open(os.path.join(OUT_DIR, name + ".bin"), "wb") as fh:
        fh.write(bytes(buf))
    print(f"{name}: {len(p32)} f32 and {len(p64)} f64 pairs", file=sys.stderr)


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    with Pool(2) as pool:
        for name in sys.argv[1:] or ["igamma", "igamma_grad_a"]:
            write(name, pool)
    print(f"mpmath {mpmath.__version__}, numpy {np.__version__}, scipy {scipy.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
