"""Helpers shared by the reaction methods."""

from .._formulations.null_space import null_space_solve


def unique_accelerations(M, F, C, gamma, qdd):
    """`qdd` when given, else the unique accelerations of the null-space formulation (seed 001,
    eq. 13); F / diag(M) without constraint rows."""
    if qdd is not None:
        return qdd
    if C.shape[0] == 0:
        return F / M.diagonal()
    return null_space_solve(M, F, C, gamma)
