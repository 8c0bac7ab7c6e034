#!/usr/bin/env python3
"""Fits the polynomial of gf_gelu_erf_16bit (src/codegen/cuda/cuda_target.cpp).

The lower tail of the normal distribution, Phi(-|x|) = erfc(z) / 2 with z = |x| / sqrt(2), is
written t * 2^(P(t) - z^2 log2(e)) with t = 1 / (1 + z / 2), which maps z in [0, inf) onto
(0, 1]. P(t) = log2(erfc(z) / (2 t)) + z^2 log2(e) is smooth there; it is fitted by least squares
at Chebyshev nodes of t over z in [0, 9.5] (beyond, erfc leaves f32's range) and printed from
the highest coefficient down, the order of the kernel's Horner steps. Needs numpy.
"""
import math

import numpy as np
from numpy.polynomial import chebyshev, polynomial

DEGREE = 8
Z_MAX = 9.5


def target(t):
    z = 2.0 / t - 2.0
    return math.log2(math.erfc(z) / (2.0 * t)) + z * z / math.log(2.0)


def main():
    lo, hi = 2.0 / (2.0 + Z_MAX), 1.0
    n = 4000
    nodes = np.cos(np.pi * (np.arange(n) + 0.5) / n)
    ts = (nodes + 1.0) / 2.0 * (hi - lo) + lo
    fit = chebyshev.chebfit(nodes, np.array([target(t) for t in ts]), DEGREE)
    # From the Chebyshev variable back to t: x = (2 t - (hi + lo)) / (hi - lo).
    to_t = polynomial.Polynomial([-(hi + lo) / (hi - lo), 2.0 / (hi - lo)])
    coef = polynomial.Polynomial(chebyshev.cheb2poly(fit))(to_t).coef
    worst = max(abs(polynomial.polyval(t, coef) - target(t)) for t in np.linspace(lo, hi, 3001))
    print(f"degree {DEGREE}, largest error in the exponent {worst:.2e}")
    for c in coef[::-1]:
        print(f"{np.float32(c):.9g}f")


if __name__ == "__main__":
    main()
