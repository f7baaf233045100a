#!/usr/bin/env python3
"""Fits the polynomial coefficients of ops/math_approx.h (atan, erfinv, erfc) with mpmath.

Each function is interpolated at Chebyshev nodes in 60-digit arithmetic (close to the minimax
polynomial), converted to monomial coefficients in the variable the kernel evaluates with Horner's
rule, rounded to double, and its worst relative error on a dense grid is printed. Run it to check or
regenerate the tables; the build does not depend on it (mpmath is only needed here)."""
import sys
import mpmath as mp

mp.mp.dps = 60


def cheb_fit(f, lo, hi, deg):
    """Monomial coefficients (lowest first) of the degree-`deg` interpolant of f at Chebyshev nodes."""
    n = deg + 1
    nodes = [(lo + hi) / 2 + (hi - lo) / 2 * mp.cos(mp.pi * (2 * k + 1) / (2 * n)) for k in range(n)]
    vals = [f(x) for x in nodes]
    # Solve the Vandermonde system in high precision (fine at 60 digits for these degrees).
    A = mp.matrix([[x ** j for j in range(n)] for x in nodes])
    c = mp.lu_solve(A, mp.matrix(vals))
    return [c[j] for j in range(n)]


def horner(c, x):
    r = mp.mpf(0)
    for a in reversed(c):
        r = r * x + a
    return r


def max_rel_err(f, approx, lo, hi, samples=2000):
    worst = mp.mpf(0)
    for k in range(samples + 1):
        x = lo + (hi - lo) * k / samples
        ref = f(x)
        if ref == 0:
            continue
        worst = max(worst, abs((approx(x) - ref) / ref))
    return worst


def emit(name, coeffs):
    body = ", ".join(repr(float(c)) for c in coeffs)
    print(f"// {name}\nconstexpr double {name}[] = {{{body}}};")


def fit(name, f, lo, hi, deg, shift=0):
    """Fits f(v + shift) for v in [lo - shift, hi - shift]: a centred variable keeps the monomial
    coefficients small, so rounding them to double loses nothing."""
    lo, hi, shift = mp.mpf(lo), mp.mpf(hi), mp.mpf(shift)
    g = lambda v: f(v + shift)
    c = cheb_fit(g, lo - shift, hi - shift, deg)
    c = [mp.mpf(float(a)) for a in c]  # as stored
    err = max_rel_err(g, lambda v: horner(c, v), lo - shift, hi - shift)
    sys.stderr.write(f"{name}: degree {deg} on [{mp.nstr(lo, 6)}, {mp.nstr(hi, 6)}] shifted by {mp.nstr(shift, 6)}, "
                     f"max rel err {mp.nstr(err, 3)}\n")
    emit(name, c)


def main():
    # atan(a) = a + a t Q(t), t = a^2, |a| <= tan(pi/8).
    t_hi = mp.tan(mp.pi / 8) ** 2

    def atan_q(t):
        if t == 0:
            return mp.mpf(-1) / 3
        s = mp.sqrt(t)
        return (mp.atan(s) / s - 1) / t

    fit("kAtanF32", atan_q, 0, t_hi, 4)
    fit("kAtanF64", atan_q, 0, t_hi, 10)

    # erfinv(x) = x P(w), w = -log((1 - x)(1 + x)): central region w <= 6.25 (|x| < 0.99805)
    # in w, tail region w > 6.25 in s = sqrt(w) (up to 1 - x = 2^-53: w ~ 36.7).
    def x_of_w(w):
        return mp.sqrt(-mp.expm1(-w))

    def central(w):
        if w == 0:
            return mp.sqrt(mp.pi) / 2
        x = x_of_w(w)
        return mp.erfinv(x) / x

    def tail(s):
        x = x_of_w(s * s)
        return mp.erfinv(x) / x

    fit("kErfinvCentralF32", central, 0, 6.25, 10, shift=3.125)
    fit("kErfinvTailF32", tail, 2.5, mp.sqrt(17), 7, shift=3.25)
    # bf16 inputs: below |x| = 1 the largest is 1 - 2^-8 (w = 4.854), so the central piece alone, at
    # the degree a bf16 result needs (relative error 2e-6 against bf16's half ulp of 2^-9).
    fit("kErfinvCentralBf16", central, 0, 4.875, 6, shift=2.4375)
    fit("kErfinvCentralF64", central, 0, 6.25, 24, shift=3.125)
    fit("kErfinvTailF64", tail, 2.5, 4, 20, shift=3.25)
    fit("kErfinvFarTailF64", tail, 4, mp.sqrt(38), 16, shift=5)

    # f64: erfc(x) = exp(-x^2) R(x) / x for x >= 0.5: R on [0.5, 3] in x, on [3, 27] in u = 1/x.
    def r_near(x):
        return mp.erfc(x) * mp.exp(x * x) * x

    def r_far(u):
        x = 1 / u
        return mp.erfc(x) * mp.exp(x * x) * x

    fit("kErfcNearF64", r_near, 0.5, 3, 22, shift=1.75)
    fit("kErfcFarF64", r_far, 1 / mp.mpf(27), mp.mpf(1) / 3, 16, shift=0.2)

    # f32: erfc(a) = exp(-a^2) Q(t) / (1 + 2 a) for a = |x| <= 10.5 (erfc underflows f32 past 10.06),
    # Q in t = (a - 4) / (a + 4), which maps [0, inf) onto [-1, 1): one smooth piece, Q in [1, 1.24].
    def q_of_t(t):
        a = 4 * (1 + t) / (1 - t)
        return mp.erfc(a) * mp.exp(a * a) * (1 + 2 * a)

    fit("kErfcF32", q_of_t, -1, (mp.mpf(10.5) - 4) / (mp.mpf(10.5) + 4), 10)

    # f32 log and log1p: log(1 + f) = f + f^2 P(f) on the reduced f in [-0.25, 0.5] (CUDA's log1pf range).
    def log1p_p(f):
        if f == 0:
            return mp.mpf(-1) / 2
        return (mp.log1p(f) - f) / (f * f)

    fit("kLog1pF32", log1p_p, -0.25, 0.5, 8)

    # f32 asin(r) = r + r^3 P(r^2) for r <= 0.5625 (the reduced argument of asin and acos).
    def asin_p(v):
        if v == 0:
            return mp.mpf(1) / 6
        s = mp.sqrt(v)
        return (mp.asin(s) / s - 1) / v

    fit("kAsinF32", asin_p, 0, mp.mpf(0.5625) ** 2, 5)
    # f32 atan(r) = r + r t P(t), t = r^2, on all of [0, 1] (no second reduction).
    fit("kAtanUnitF32", atan_q, 0, 1, 8)


if __name__ == "__main__":
    main()
