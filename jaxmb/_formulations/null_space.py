"""Forward dynamics by the null-space formulation (seed 001, eq. 10-13).

    [V^T M; C] qdd = [V^T F; gamma],   C V = 0, V orthonormal.

qdd is unique even when C is rank-deficient (redundant constraints), the multipliers are not.
The equations say C qdd = gamma and M qdd - F in range(C^T), i.e. qdd minimises Gauss's
constraint in the mass metric; `null_space_solve` computes that projection from one
column-pivoted QR of the mass-scaled C (no basis V, no SVD).

The derivative rule does not differentiate the factorization (undefined where the rank of a
redundant C would change). Differentiating M qdd + C^T lambda = F, C qdd = gamma gives

    [V^T M; C] dqdd = [V^T (dF - dM qdd - dC^T lambda); dgamma - dC qdd]

with any multiplier solution lambda (V^T dC^T eta = 0 for eta in null(C^T) when the rank is
locally constant), i.e. the same solve with new right-hand sides and the same factorization.
"""

from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._custom_types import Coordinates
from .._linalg import native as _native
from .._linalg.dense import (
    RANK_RTOL,
    _vectorized,
    economic_pivoted_qr,
    pinv,
    rank_mask,
    solve_triangular,
)
from .._model.model import Model
from .._model.terms import StateTerms
from .base import AbstractMonitored, AbstractUnchecked
from .passages import pivot_ratios


class NullSpace(AbstractMonitored, AbstractUnchecked):
    """The null-space formulation (seed 001, eq. 13), simulate's default (spelled
    "null_space"): qdd = C^+ gamma + V z with V a basis of null(C) from a pivoted QR of the
    mass-scaled C^T (`null_space_solve`); unique however redundant C is. A singular passage
    (C losing rank along the motion) is reported by the passage monitor."""

    baumgarte: ClassVar[bool] = True
    stabilizable: ClassVar[bool] = True

    def accelerations(self, model: Model, terms: StateTerms) -> Coordinates:
        return null_space_solve(terms.M, terms.F, terms.C, terms.gamma)

    def accelerations_and_ratios(
        self, model: Model, terms: StateTerms
    ) -> tuple[Coordinates, Float[Array, " width"]]:
        """Both from one factorization (`null_space_solve_with_ratios`)."""
        return null_space_solve_with_ratios(terms.M, terms.F, terms.C, terms.gamma)


class _GaussFactor(NamedTuple):
    """Pivoted QR of the mass-scaled constraint matrix, C^ = C M^(-1/2):
    C^^T[:, perm] = Q R; `kept` marks the leading pivots above RANK_RTOL (the rank)."""

    w: jnp.ndarray  # M^(-1/2) (diagonal)
    Ch: jnp.ndarray
    Q: jnp.ndarray
    R11: jnp.ndarray  # leading square block of R, identity outside the rank
    perm: jnp.ndarray
    kept: jnp.ndarray
    pivots: jnp.ndarray  # |R_jj|, non-increasing


def _gauss_factor(M, C):
    return _scaled_factor(_inverse_sqrt_mass(M), C)


def _inverse_sqrt_mass(M):
    return 1.0 / jnp.sqrt(jnp.diagonal(M))


def _scaled_factor(w, C):
    Ch = C * w[None, :]
    Q, R, perm = economic_pivoted_qr(Ch.T)
    k = R.shape[0]
    d = jnp.abs(jnp.diagonal(R))
    kept = rank_mask(d)  # geqp3: |R_jj| non-increasing
    both = kept[:, None] & kept[None, :]
    R11 = jnp.where(both, R[:, :k], jnp.eye(k, dtype=R.dtype))
    return _GaussFactor(w, Ch, Q, R11, perm, kept, d)


def _gauss_solve(f: _GaussFactor, F, gamma):
    """y = y0 + Q1 u with y0 = M^(-1/2) F and R11^T u = [P^T (gamma - C^ y0)]_1 (the rows
    that pivoted QR keeps), qdd = M^(-1/2) y."""
    k = f.R11.shape[0]
    y0 = f.w * F
    c = (gamma - f.Ch @ y0)[f.perm[:k]]
    u = solve_triangular(f.R11, jnp.where(f.kept, c, 0.0), trans=True)
    return f.w * (y0 + f.Q @ jnp.where(f.kept, u, 0.0))


def _factor_multipliers(f: _GaussFactor, F, qdd):
    """A multiplier solution of C^T lambda = F - M qdd from the same factorization:
    C^^T lambda = M^(-1/2) (F - M qdd), basic solution on the kept pivots."""
    k = f.R11.shape[0]
    r = f.w * F - qdd / f.w  # M^(-1/2) F - M^(1/2) qdd
    mu = solve_triangular(f.R11, jnp.where(f.kept, f.Q.T @ r, 0.0))
    lam = jnp.zeros(f.Ch.shape[0], r.dtype)
    return lam.at[f.perm[:k]].set(jnp.where(f.kept, mu, 0.0))


@jax.custom_jvp
def null_space_solve(M, F, C, gamma):
    """qdd with [V^T M; C] qdd = [V^T F; gamma] (seed 001, eq. 13), M diagonal.

    These equations say C qdd = gamma and M qdd - F in range(C^T): qdd minimises Gauss's
    constraint (qdd - M^-1 F)^T M (qdd - M^-1 F) subject to C qdd = gamma. With y = M^(1/2) qdd
    and C^ = C M^(-1/2) that is the projection of y0 = M^(-1/2) F onto {C^ y = gamma}, done
    with one column-pivoted QR of C^^T (LAPACK geqp3, far cheaper than an SVD for small C;
    under vmap a Householder QR vectorized over the batch, `_linalg`): no null-space
    basis V is formed. Redundant rows (pivots below RANK_RTOL) are dropped, so a gamma
    slightly off range(C) (constraint drift) is met on the independent rows."""
    return _projection(_inverse_sqrt_mass(M), F, C, gamma)[0]


def _projection_single(w, F, C, gamma):
    """(qdd, pivots |R_jj|) of `null_space_solve` with w = M^(-1/2): factor, then solve."""
    factor = _scaled_factor(w, C)
    return _gauss_solve(factor, F, gamma), factor.pivots


_projection = _vectorized(
    _projection_single,
    _projection_single,
    native=lambda w, F, C, gamma: _native.gauss_projection(w, F, C, gamma, RANK_RTOL),
)
"""`_projection_single`; under vmap, one compiled kernel for the whole batch (factor and solve
in one custom call, `jaxmb._linalg.native`) where it was built, else the vmapped jnp steps."""


def _solve_and_tangent(primals, tangents):
    """(factor, qdd, dqdd): the solve and its tangent, which re-solves the same system with
    right-hand sides dF - dM qdd - dC^T lambda, dgamma - dC qdd (no derivative of the QR)."""
    M, F, C, gamma = primals
    dM, dF, dC, dgamma = tangents
    factor = _gauss_factor(M, C)
    qdd = _gauss_solve(factor, F, gamma)
    lam = _factor_multipliers(factor, F, qdd)
    rhs_f = dF - dM @ qdd - dC.T @ lam
    rhs_g = dgamma - dC @ qdd
    return factor, qdd, _gauss_solve(factor, rhs_f, rhs_g)


@null_space_solve.defjvp
def _null_space_solve_jvp(primals, tangents):
    _, qdd, dqdd = _solve_and_tangent(primals, tangents)
    return qdd, dqdd


@jax.custom_jvp
def null_space_solve_with_ratios(M, F, C, gamma):
    """(`null_space_solve`, `pivot_ratios` of the same factorization): the monitor of singular
    passages reads the ratios from the right-hand side instead of factorizing C again. The
    ratios are a diagnosis: their tangent is zero."""
    qdd, pivots = _projection(_inverse_sqrt_mass(M), F, C, gamma)
    return qdd, pivot_ratios(jax.lax.stop_gradient(pivots))


@null_space_solve_with_ratios.defjvp
def _null_space_solve_with_ratios_jvp(primals, tangents):
    factor, qdd, dqdd = _solve_and_tangent(primals, tangents)
    ratios = pivot_ratios(jax.lax.stop_gradient(factor.pivots))
    return (qdd, ratios), (dqdd, jnp.zeros_like(ratios))


def min_norm_multipliers(C, f):
    """Minimum-norm lambda with C^T lambda = f (seed 001, eq. 15), via the pseudo-inverse, whose
    JAX derivative rule holds where the rank is locally constant."""
    return pinv(C.T, RANK_RTOL) @ f
