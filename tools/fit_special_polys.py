#!/usr/bin/python3
# minijax tools: the polynomial tables of jit/codegen/lower/transcendentals_elementary.cc and of
# erfc's tail in transcendentals_special.cc, fitted with mpmath (Chebyshev fits, 50 digits).
#
# Usage (Debian's python3-mpmath; not a project dependency): /usr/bin/python3 tools/fit_special_polys.py
# prints each table as C++ (lowest degree first, for VMath::poly) with the fit's relative error.
import mpmath

mpmath.mp.dps = 50


def sinh_s(z):
    """(sinh(x) / x - 1) / z for z = x^2: sinh(x) = x + x z S(z)."""
    if z == 0:
        return mpmath.mpf(1) / 6
    x = mpmath.sqrt(z)
    return (mpmath.sinh(x) / x - 1) / z


def erfc_g(t):
    """erfc(a) a e^(a^2) for t = 1 / a^2 (1 / sqrt(pi) at t = 0): erfc(a) = e^(-a^2) G(t) / a."""
    if t == 0:
        return 1 / mpmath.sqrt(mpmath.pi)
    a = 1 / mpmath.sqrt(t)
    return mpmath.erfc(a) * a * mpmath.exp(a * a)


FITS = [
    ("kSinhSmall", "S(z) on z = x^2 in [0, 1]", sinh_s, [0, 1], 8),
    ("kErfcTail", "G(t) on t = 1/a^2 in [0, 1/9] (a >= 3)", erfc_g, [0, mpmath.mpf(1) / 9], 20),
]


def main():
    for name, what, f, interval, n in FITS:
        poly, err = mpmath.chebyfit(f, interval, n, error=True)
        rel = err / min(abs(f(mpmath.mpf(interval[0]))), abs(f(mpmath.mpf(interval[1]))))
        coefs = [mpmath.nstr(c, 18, min_fixed=1, max_fixed=0) for c in reversed(poly)]
        print(f"// {what}: degree {n - 1}, relative error {mpmath.nstr(rel, 3)} (before rounding to f64).")
        print(f"const std::vector<double> {name} = {{" + ", ".join(coefs) + "};")


if __name__ == "__main__":
    main()
