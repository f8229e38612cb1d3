"""Helpers shared by the reaction methods."""

from jaxtyping import Array, Bool

from .._custom_types import Coordinates
from .._formulations import augmented_lagrangian as al
from .._formulations.eliminated import eliminated_solve
from .._formulations.null_space import null_space_solve
from .._model.model import Model
from .._model.terms import EquationTerms
from ._base import Solution


def unique_accelerations(model: Model, terms: EquationTerms, qdd: Coordinates | None) -> Array:
    """`qdd` when given, else the unique accelerations of `terms`: of the null-space
    formulation (seed 001, eq. 13) up to DENSE_BODIES, above it of the augmented-Lagrangian
    iteration on the sparse factorization (the same qdd to round-off on a regular
    configuration, without the dense pivoted QR); F / diag(M) without constraint rows."""
    if qdd is not None:
        return qdd
    M, F, C, gamma = terms
    if C.shape[0] == 0:
        return F / M.diagonal()
    if al.is_dense(model):
        return null_space_solve(M, F, C, gamma)
    formulation = al.AugmentedLagrangian()
    s = al.system(model, model.mass_diagonal(), al.blocks_of(model, C), formulation.penalty)
    qdd, _, _ = al.constrained_solve(s, F, s.scale * gamma, formulation.iterations, formulation.tol)
    return qdd


def eliminated_multipliers(
    terms: EquationTerms, keep: Bool[Array, " rows"], qdd: Coordinates | None
) -> Solution:
    """(qdd, lambda) of the augmented system (seed 001, eq. 11) without the rows outside
    `keep`, whose multipliers are 0 (`eliminated_solve`); `qdd` when given, else the system's
    accelerations."""
    qdd_e, lam = eliminated_solve(terms.M, terms.F, terms.C, terms.gamma, keep)
    return (qdd_e if qdd is None else qdd), lam
