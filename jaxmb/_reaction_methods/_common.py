"""Helpers shared by the reaction methods."""

from jaxtyping import Array

from .._formulations import augmented_lagrangian as al
from .._formulations.null_space import null_space_solve


def unique_accelerations(model, M, F, C, gamma, qdd) -> Array:
    """`qdd` when given, else the unique accelerations: of the null-space formulation (seed
    001, eq. 13) up to DENSE_BODIES, above it of the augmented-Lagrangian iteration on the
    sparse factorization (the same qdd to round-off on a regular configuration, without the
    dense pivoted QR); F / diag(M) without constraint rows."""
    if qdd is not None:
        return qdd
    if C.shape[0] == 0:
        return F / M.diagonal()
    if al.is_dense(model):
        return null_space_solve(M, F, C, gamma)
    formulation = al.AugmentedLagrangian()
    s = al.system(model, model.mass_diagonal(), al.blocks_of(model, C), formulation.penalty)
    qdd, _, _ = al.constrained_solve(s, F, s.scale * gamma, formulation.iterations, formulation.tol)
    return qdd
