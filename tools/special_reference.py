#!/usr/bin/python3
# minijax tools: reference values of the elementwise functions sinh ... erfc (mpmath, 200 bits) and
# numpy's nextafter table; writes tests/jit/special_reference/*.bin and special_reference_nextafter.h.
#
# Usage (Debian 12's python3-mpmath 1.2.1 and python3-numpy 1.24; not project
# dependencies, only this generator needs them):
#   /usr/bin/python3 tools/special_reference.py
# The C++ side is tests/jit/test_special_accuracy.cc: it measures the largest error of minijax's
# eager and compiled functions against these values and asserts the bounds of issue 29 item 8.
#
# Each function F gets tests/jit/special_reference/F.bin (little-endian):
#   8 bytes magic b"MJSREF01", uint32 n32, uint32 n64,
#   n32 records (float32 x, float64 F(x) rounded once from the 200-bit value),
#   n64 records (float64 x, float64 hi, float64 lo) with hi + lo = F(x) to about 2^-106 relative
#   (hi is F(x) correctly rounded; +-inf where F(x) overflows the float64 range; NaN outside the
#   domain).
# The inputs of each dtype: the special values (+-0, +-inf, NaN, the smallest subnormal and normal,
# the largest finite, the function's domain edges, poles and zeros, each with its neighbours),
# a grid (1000 points evenly over the function's main range and 2 x 150 points geometrically over
# every magnitude), then 10,000 random points (numpy.random.default_rng(seed): half uniform over
# the main range, half random bit patterns with a magnitude inside the domain).
# numpy's and Python's libm functions (glibc) cross-check the mpmath values (a difference over 16 ulp
# stops the generator). scipy.special.erfc is not used for that: scipy 1.10's is 25 ulp off at
# 5.999999999999999 (2.151973671249907e-17; mpmath at 200 and 400 bits: 2.1519736712499147e-17).
import math
import os
import struct
import sys

import mpmath
import numpy as np

mpmath.mp.prec = 200
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(ROOT, "tests", "jit", "special_reference")
NEXTAFTER_H = os.path.join(ROOT, "tests", "jit", "special_reference_nextafter.h")
SEED = 20261207
N_RANDOM = 10000

INF = float("inf")
NAN = float("nan")


ODD = ("sinh", "asin", "atan", "asinh", "atanh", "cbrt")


def mp_or_special(name, f, domain):
    """f on a float x through mpmath: NaN outside domain(x) and at NaN; an odd function keeps the
    sign of a zero input (mpmath has no -0)."""
    def g(x):
        if math.isnan(x) or not domain(x):
            return NAN
        if x == 0 and name in ODD:
            return x
        return f(x)
    return g


def big(limit, value_pos, value_neg):
    """Wraps f: |x| > limit gives value_pos / value_neg without calling mpmath (where the value is
    known to be out of range: inf, 0 or a constant correctly rounded in double)."""
    def wrap(f):
        def g(x):
            if x > limit:
                return value_pos(x) if callable(value_pos) else value_pos
            if x < -limit:
                return value_neg(x) if callable(value_neg) else value_neg
            return f(x)
        return g
    return wrap


def mpf(x):
    return mpmath.mpf(x)


# name: (mpmath function of a float, domain predicate, main range per dtype (lo, hi), extra specials,
# libm function for the cross-check)
FUNCTIONS = {
    "sinh": (big(1000, INF, -INF)(lambda x: mpmath.sinh(mpf(x))), lambda x: True,
             {"f32": (-90, 90), "f64": (-711, 711)}, [89.415985, 710.4758600739439, 710.475860073944],
             np.sinh),
    "cosh": (big(1000, INF, INF)(lambda x: mpmath.cosh(mpf(x))), lambda x: True,
             {"f32": (-90, 90), "f64": (-711, 711)}, [89.415985, 710.4758600739439, 710.475860073944],
             np.cosh),
    "asin": (lambda x: mpmath.asin(mpf(x)), lambda x: -1 <= x <= 1, {"f32": (-1, 1), "f64": (-1, 1)},
             [0.5, 0.70710678118654752], np.arcsin),
    "acos": (lambda x: mpmath.acos(mpf(x)), lambda x: -1 <= x <= 1, {"f32": (-1, 1), "f64": (-1, 1)},
             [0.5, 0.70710678118654752], np.arccos),
    "atan": (lambda x: mpmath.atan(mpf(x)), lambda x: True, {"f32": (-10, 10), "f64": (-10, 10)},
             [1e16, 1e30], np.arctan),
    "asinh": (lambda x: mpmath.asinh(mpf(x)), lambda x: True, {"f32": (-10, 10), "f64": (-10, 10)},
              [2.0 ** 28, 1e300], np.arcsinh),
    "acosh": (lambda x: mpmath.acosh(mpf(x)), lambda x: x >= 1, {"f32": (1, 10), "f64": (1, 10)},
              [2.0, 2.0 ** 28, 1e300], np.arccosh),
    "atanh": (lambda x: mpmath.atanh(mpf(x)), lambda x: -1 <= x <= 1, {"f32": (-1, 1), "f64": (-1, 1)},
              [0.5], np.arctanh),
    "cbrt": (lambda x: mpmath.cbrt(mpf(x)) if x >= 0 else -mpmath.cbrt(mpf(-x)), lambda x: True,
             {"f32": (-10, 10), "f64": (-10, 10)}, [8.0, 27.0, 1e300], np.cbrt),
    # erfc(x) for x > 30 is below half the smallest subnormal (0 in double); for x < -10 it is 2
    # rounded (2 - 2e-45).
    "erfc": (big(30, 0.0, 2.0)(lambda x: mpmath.erfc(mpf(x))), lambda x: True,
             {"f32": (-5, 11), "f64": (-7, 28)}, [0.5, 0.8, 1.6, 3.0, 6.0, 9.194, 10.05, 26.55, 27.23],
             np.vectorize(math.erfc)),
}

# Where the function is +-inf at a finite input, or exactly 0 (poles, zeros, domain edges).
EDGES = {
    "sinh": [0.0], "cosh": [0.0], "asin": [-1.0, 1.0, 0.0], "acos": [-1.0, 1.0, 0.0], "atan": [0.0],
    "asinh": [0.0], "acosh": [1.0], "atanh": [-1.0, 1.0, 0.0], "cbrt": [0.0], "erfc": [0.0],
}


def to_dtype(x, dt):
    return float(np.float32(x)) if dt == "f32" else float(x)


def neighbours(x, dt):
    t = np.float32 if dt == "f32" else np.float64
    with np.errstate(over="ignore"):
        v = t(x)
    return [float(np.nextafter(v, t(-INF))), float(v), float(np.nextafter(v, t(INF)))]


def inputs(name, dt, rng):
    t = np.float32 if dt == "f32" else np.float64
    info = np.finfo(t)
    tiny_sub = float(np.nextafter(t(0), t(1)))
    specials = [0.0, -0.0, INF, -INF, NAN, tiny_sub, -tiny_sub, float(info.tiny), -float(info.tiny),
                float(info.max), -float(info.max), 1.0, -1.0, 2.0, -2.0, 0.5, -0.5]
    for e in EDGES[name] + FUNCTIONS[name][3]:
        for s in (1.0, -1.0):
            for v in neighbours(s * e, dt):
                specials.append(v)
    lo, hi = FUNCTIONS[name][2][dt]
    grid = [to_dtype(v, dt) for v in np.linspace(lo, hi, 1000)]
    max_exp = 127 if dt == "f32" else 1023
    min_exp = -149 if dt == "f32" else -1074
    mags = np.exp2(np.linspace(min_exp, max_exp, 150))
    grid += [to_dtype(m, dt) for m in mags] + [to_dtype(-m, dt) for m in mags]
    rand = [to_dtype(v, dt) for v in rng.uniform(lo, hi, N_RANDOM // 2)]
    # Random bit patterns: a magnitude in [0, max] (or [0, max(|lo|, |hi|)] for a bounded domain).
    bound = max(abs(lo), abs(hi)) if name in ("asin", "acos", "atanh") else float(info.max)
    ubits = np.uint32 if dt == "f32" else np.uint64
    max_bits = np.array([bound], dtype=t).view(ubits)[0]
    bits = rng.integers(0, int(max_bits) + 1, N_RANDOM - N_RANDOM // 2, dtype=np.uint64).astype(ubits)
    vals = bits.view(t).astype(np.float64)
    signs = rng.integers(0, 2, len(vals))
    for v, s in zip(vals, signs):
        v = float(v)
        if name == "acosh":
            v = abs(v) + 1.0 if abs(v) < 1 else abs(v)
            v = to_dtype(v, dt)
        elif s:
            v = -v
        rand.append(v)
    return specials + grid + rand


def split(v):
    """A 200-bit mpmath value (or a float) as (hi, lo) doubles: hi correctly rounded."""
    if isinstance(v, float):
        return v, 0.0
    if mpmath.isnan(v):
        return NAN, 0.0
    hi = float(v)  # mpmath rounds to nearest
    if math.isinf(hi):
        return hi, 0.0
    lo = float(v - mpf(hi))
    return hi, lo


def check_libm(name, xs, his, dt):
    ref = FUNCTIONS[name][4]
    with np.errstate(all="ignore"):
        got = ref(np.array(xs, dtype=np.float64))
    for x, g, h in zip(xs, got, his):
        if math.isnan(h) or math.isnan(g):
            if not (math.isnan(h) and math.isnan(g)):
                raise SystemExit(f"{name}({x!r}): mpmath {h!r}, libm {g!r}")
            continue
        if math.isinf(h) or math.isinf(g) or h == 0:
            continue
        ulp = math.ulp(h)
        if abs(g - h) > 16 * ulp and abs(g - h) > 2.3e-308:
            raise SystemExit(f"{name}({x!r}): mpmath {h!r}, libm {g!r} differ by {abs(g - h) / ulp} ulp")


def write_function(name):
    f, domain = FUNCTIONS[name][0], FUNCTIONS[name][1]
    g = mp_or_special(name, f, domain)
    rng = np.random.default_rng(SEED + sum(map(ord, name)))
    x32 = inputs(name, "f32", rng)
    x64 = inputs(name, "f64", rng)
    r32 = [split(g(x))[0] for x in x32]
    s64 = [split(g(x)) for x in x64]
    check_libm(name, x64, [h for h, _ in s64], "f64")
    out = bytearray(b"MJSREF01")
    out += struct.pack("<II", len(x32), len(x64))
    for x, r in zip(x32, r32):
        out += struct.pack("<fd", x, r)
    for x, (hi, lo) in zip(x64, s64):
        out += struct.pack("<ddd", x, hi, lo)
    with open(os.path.join(OUT_DIR, name + ".bin"), "wb") as fh:
        fh.write(bytes(out))
    return len(x32), len(x64)


def nextafter_table():
    """numpy's nextafter on the pairs below, f32 and f64, as hex bit patterns."""
    pairs = [(0.0, 1.0), (0.0, -1.0), (-0.0, 1.0), (-0.0, -1.0), (0.0, -0.0), (-0.0, 0.0), (0.0, 0.0),
             (1.0, 2.0), (1.0, 0.0), (-1.0, 0.0), (-1.0, -2.0), (1.0, 1.0), (NAN, 1.0), (1.0, NAN),
             (INF, 0.0), (-INF, 0.0), (INF, INF), (0.0, INF), (0.0, -INF), (2.5, -INF), (-3.0, INF),
             (1e-40, 0.0), (-1e-40, 0.0), (1e-40, 1.0), ("min_sub", 0.0), ("-min_sub", 0.0),
             ("min_sub", 1.0), ("min_normal", 0.0), ("-min_normal", -1.0), ("max", INF), ("-max", -INF),
             ("max", 0.0), (123.456, 123.4561), (-7.25e-20, 3.0)]
    lines = []
    for dt, t, ut, fmt in (("f32", np.float32, np.uint32, "0x{:08x}u"), ("f64", np.float64, np.uint64, "0x{:016x}ull")):
        info = np.finfo(t)
        named = {"min_sub": np.nextafter(t(0), t(1)), "min_normal": info.tiny, "max": info.max}
        def val(v):
            if isinstance(v, str):
                return -named[v[1:]] if v.startswith("-") else named[v]
            return t(v)
        rows = []
        for a, b in pairs:
            x, y = t(val(a)), t(val(b))
            with np.errstate(over="ignore"):
                r = np.nextafter(x, y)
            bits = [fmt.format(int(np.array([v], dtype=t).view(ut)[0])) for v in (x, y, r)]
            rows.append("    {" + ", ".join(bits) + "},")
        utype = "uint32_t" if dt == "f32" else "uint64_t"
        lines.append(f"inline constexpr {utype} nextafter_{dt}[][3] = {{")
        lines += rows
        lines.append("};")
    head = [
        "// minijax tests: numpy's nextafter(x, y) on pinned pairs, f32 and f64, as bit patterns {x, y, result}.",
        f"// GENERATED by tools/special_reference.py with numpy {np.__version__}; do not edit.",
        "#pragma once",
        "#include <cstdint>",
        "",
        "namespace special_reference {",
        "",
    ]
    with open(NEXTAFTER_H, "w") as fh:
        fh.write("\n".join(head + lines + ["", "}  // namespace special_reference", ""]))


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    nextafter_table()
    names = sys.argv[1:] or list(FUNCTIONS)
    for name in names:
        n32, n64 = write_function(name)
        print(f"{name}: {n32} f32 and {n64} f64 points", file=sys.stderr)
    print(f"mpmath {mpmath.__version__}, numpy {np.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
