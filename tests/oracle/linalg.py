"""Ranks, null spaces and the solvability test of seed 001 (section 3.3) in numpy/scipy, with
the relative tolerances jaxmb documents: a singular value (or |R_kk|) counts in the rank when
it exceeds RANK_RTOL times the largest; B_X is zero when |B_X|_F <= B_RTOL |C_X|_F."""

import numpy as np
import scipy.linalg

RANK_RTOL = 1e-9
B_RTOL = 1e-8


def rank(M, rtol=RANK_RTOL, scale=None):
    """Number of singular values above rtol times the largest one (or times `scale` when given,
    for a matrix that may be round-off only, such as a zero B_X); 0 for an empty matrix."""
    M = np.asarray(M)
    if M.size == 0:
        return 0
    s = np.linalg.svd(M, compute_uv=False)
    ref = s[0] if scale is None else scale
    return int(np.sum(s > rtol * ref)) if ref > 0 else 0


def null_space(A, rtol=RANK_RTOL):
    """Orthonormal basis (columns) of null(A) from the SVD, rank decided as in `rank`."""
    Vt = np.linalg.svd(A)[2]
    return Vt[rank(A, rtol) :].T


def qr_solvability(C, row_sets, rtol=RANK_RTOL, btol=B_RTOL):
    """Seed 001 eq. 21-27: pivoted QR C E = Q R; r = #(|R_kk| > rtol max |R_kk|); the last
    rows - r columns Q~ of Q span null(C^T); B_X = C_X^T Q~_X for each row set X (a slice or a
    boolean mask); X solvable iff |B_X|_F <= btol |C_X|_F.

    Returns (r, [B_X], |B_X|_F array, solvable array)."""
    Q, R, _ = scipy.linalg.qr(C, pivoting=True)
    d = np.abs(np.diag(R))
    r = int(np.sum(d > rtol * d.max()))
    Qt = Q[:, r:]
    Bs = [C[rows].T @ Qt[rows] for rows in row_sets]
    norms = np.array([np.linalg.norm(B) for B in Bs])
    ok = np.array([n <= btol * np.linalg.norm(C[rows]) for n, rows in zip(norms, row_sets)])
    return r, Bs, norms, ok
