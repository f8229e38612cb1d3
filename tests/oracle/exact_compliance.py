"""The Compliance reactions in exact rational arithmetic: the reference the stiffness-ratio
tests (tests/test_compliance.py) and their sweep (benchmarks/bench_stiffness_ratio.py) compare
with, independent of jaxmb (numpy and scipy for lambda_p and the null space, Fractions after)."""

from fractions import Fraction

import numpy as np
import scipy.linalg


def exact_projection(lam, N, w, rows):
    """lam - N a, a minimising sum_{i in rows} w_i (lam - N a)_i^2, in exact rational
    arithmetic (Fractions): no round-off however far apart the weights are."""
    p = N.shape[1]
    Nf = [[Fraction(float(x)) for x in row] for row in N]
    A = [[sum(w[i] * Nf[i][a] * Nf[i][b] for i in rows) for b in range(p)] for a in range(p)]
    b = [sum(w[i] * Nf[i][a] * lam[i] for i in rows) for a in range(p)]
    for c in range(p):  # Gauss-Jordan
        r = next(r for r in range(c, p) if A[r][c] != 0)
        A[c], A[r], b[c], b[r] = A[r], A[c], b[r], b[c]
        for r in range(p):
            if r != c and A[r][c] != 0:
                m = A[r][c] / A[c][c]
                A[r] = [x - m * y for x, y in zip(A[r], A[c])]
                b[r] -= m * b[c]
    a = [b[c] / A[c][c] for c in range(p)]
    return [lam[i] - sum(Nf[i][j] * a[j] for j in range(p)) for i in range(len(lam))]


def exact_reference(C, f, k, holonomic):
    """`null_space_reference` (tests/test_compliance.py) with the p x p solves exact:
    lambda_p (lstsq) and N (scipy) in float64, the weights 1 / k and everything after them as
    Fractions."""
    lam = [Fraction(float(x)) for x in np.linalg.lstsq(C.T, f, rcond=None)[0]]
    N = scipy.linalg.null_space(C.T)
    w = [1 / Fraction(float(x)) for x in k]
    knife = np.flatnonzero(~holonomic)
    if len(knife):
        _, s, Vt = np.linalg.svd(N[knife])
        rank = int(np.sum(s > 1e-10 * s.max()))
        lam = exact_projection(lam, N @ Vt[:rank].T, w, knife)
        N = N @ Vt[rank:].T
    if N.shape[1]:
        lam = exact_projection(lam, N, w, np.flatnonzero(holonomic))
    return np.array([float(x) for x in lam])
