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

import contextlib
from typing import ClassVar, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from . import _errors, _native
from ._geometry import is_concrete
from ._linalg import (
    RANK_RTOL,
    _vectorized,
    cond,
    economic_pivoted_qr,
    independent_rows,
    null_space,
    pinv,
    rank_mask,
    solve,
    solve_triangular,
)
from ._formulation_base import AbstractStateFormulation
from ._model import Model
from ._passages import pivot_ratios
from ._reaction_methods._base import AbstractReactionMethod
from ._reaction_methods._base import ConstraintMatrix, Forces, MassMatrix, RowValues, Solution
from ._solvability import solvability
from ._terms import StateTerms

ELIMINATED_COND_LIMIT = 1e12
"""Largest condition number accepted for the reduced augmented system of `Eliminate`."""


class NullSpace(AbstractStateFormulation):
    """The null-space formulation (seed 001, eq. 13), simulate's default (spelled
    "null_space"): qdd = C^+ gamma + V z with V a basis of null(C) from a pivoted QR of the
    mass-scaled C^T (`null_space_solve`); unique however redundant C is. A singular passage
    (C losing rank along the motion) is reported by the passage monitor."""

    def accelerations(self, model: Model, terms: StateTerms, label: str) -> Float[Array, " n"]:
        return null_space_solve(terms.M, terms.F, terms.C, terms.gamma)

    def accelerations_and_ratios(
        self, model: Model, terms: StateTerms, label: str
    ) -> tuple[Float[Array, " n"], Float[Array, " width"]]:
        """Both from one factorization (`null_space_solve_with_ratios`)."""
        return null_space_solve_with_ratios(terms.M, terms.F, terms.C, terms.gamma)


class Eliminate(AbstractReactionMethod, AbstractStateFormulation):
    """Redundant-constraint elimination (seed 001, section 3.1): drop the rows `rows` (0-based
    rows of C), solve the reduced, nonsingular augmented system (eq. 11) and give the dropped
    rows zero multipliers. The rows must be a removable set of exactly p = redundancy rows,
    e.g. `mb.solvability(...).redundant_rows` or the paper's (5, 20). A reaction method and a
    `simulate` formulation."""

    rows: tuple[int, ...] = eqx.field(static=True, converter=lambda r: tuple(int(k) for k in r))
    physical: ClassVar[bool] = False

    def __check_init__(self):
        repeated = sorted({k for k in self.rows if self.rows.count(k) > 1})
        if repeated:
            raise ValueError(f"Eliminate: row(s) {repeated} listed more than once in {self.rows}")

    @property
    def name(self) -> str:
        return f"Eliminate(rows={self.rows})"

    def bind(self, model: Model, where: str) -> AbstractReactionMethod:
        """The kept rows as a mask array: every elimination shares one compiled program."""
        return KeptRows(keep_mask(model, self, None))

    def multipliers(self, model: Model, M: MassMatrix, F: Forces, C: ConstraintMatrix,
                    gamma: RowValues, qdd: Forces | None, label: str) -> Solution:
        return self.bind(model, "reactions").multipliers(model, M, F, C, gamma, qdd, label)

    def accelerations(self, model: Model, terms: StateTerms, label: str) -> Float[Array, " n"]:
        keep = keep_mask(model, self, terms.C)
        return eliminated_solve(terms.M, terms.F, terms.C, terms.gamma, keep, label=label)[0]

    def check_start(
        self, model: Model, q0: Float[Array, " n"], t0: Float[Array, ""], label: str
    ) -> Float[Array, " n"]:
        """The rows in range (trace time) and removable at (q0, t0) (run time)."""
        keep = keep_mask(model, self, None)
        return check_removable(q0, model.C(q0, t0), keep, label)


class KeptRows(AbstractReactionMethod):
    """`Eliminate` with its kept rows as data (a boolean mask over the rows of C)."""

    keep: Bool[Array, " rows"]
    name: ClassVar[str] = "mb.Eliminate(rows)"
    physical: ClassVar[bool] = False

    def bind(self, model: Model, where: str) -> AbstractReactionMethod:
        if self.keep.shape != (model.num_rows,):
            raise ValueError(f"{where}: the kept-row mask has shape {self.keep.shape}; C has "
                             f"{model.num_rows} rows")
        return self

    def multipliers(self, model: Model, M: MassMatrix, F: Forces, C: ConstraintMatrix,
                    gamma: RowValues, qdd: Forces | None, label: str) -> Solution:
        C = check_removable(C, C, self.keep, label)
        qdd_e, lam = eliminated_solve(M, F, C, gamma, self.keep, label=label)
        return (qdd_e if qdd is None else qdd), lam


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
in one custom call, `jaxmb._native`) where it was built, else the vmapped jnp steps."""


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


def eliminated_solve(M, F, C, gamma, keep, label="Eliminate"):
    """Augmented system (seed 001, eq. 11)

        [M  C_k^T] [qdd   ]   [F      ]
        [C_k  0  ] [lambda] = [gamma_k]

    with the rows outside `keep` removed; fixed shapes: their rows are zeroed and their
    multipliers pinned to 0 by an identity block. Raises when the reduced system is singular,
    the message starting with `label` (the method that chose the rows)."""
    n = M.shape[0]
    w = keep.astype(C.dtype)
    Ck = C * w[:, None]
    K = jnp.block([[M, Ck.T], [Ck, jnp.diag(1.0 - w)]])
    sol = solve(K, jnp.concatenate([F, gamma * w]))
    cond_K = cond(K)
    bad = ~jnp.all(jnp.isfinite(sol)) | ~(cond_K < ELIMINATED_COND_LIMIT)
    sol = _errors.error_if(
        sol,
        bad,
        f"{label}: the remaining rows leave a singular augmented system (condition number "
        f"above {ELIMINATED_COND_LIMIT:g}): they are still dependent, or too many rows were "
        "dropped; eliminate exactly p rows that form a removable set "
        "(see mb.solvability(model, q).redundant_rows).",
    )
    return sol[:n], sol[n:]


NOT_REMOVABLE = "the eliminated rows are not a removable set"


def check_removable(x, C, keep, label):
    """x, raising (also inside jit) unless the rows outside `keep` form a removable set (seed
    001, section 3.1): exactly p = m + h - rank(C) rows are dropped and the kept rows keep the
    rank, rank(C_kept) = rank(C). Dropping a row that is not redundant (p = 0 for a
    non-redundant mechanism) would silently remove a constraint from the equations."""
    rows, n = C.shape
    C = jax.lax.stop_gradient(C)
    rank = n - jnp.sum(null_space(C)[1])
    rank_kept = n - jnp.sum(null_space(jnp.where(keep[:, None], C, 0.0))[1])
    dropped = rows - jnp.sum(keep)
    bad = (rank_kept != rank) | (dropped != rows - rank)
    messages = tuple(
        f"{label}: {NOT_REMOVABLE} at this configuration: C has rank {r} here, so exactly "
        f"p = {rows - r} row(s) must be eliminated and the {r} kept rows must be independent "
        "(rank(C without them) = rank(C)); find a removable set with "
        "mb.solvability(model, q).redundant_rows, or use method='auto'."
        for r in range(rows + 1)
    )
    return _errors.branched_error_if(x, bad, jnp.where(bad, rank, 0), messages)


@contextlib.contextmanager
def suggesting_rows(model, q, t, where="here"):
    """Eagerly, when `check_removable` fails, add the rows that would work at (q, t)
    (`redundant_rows` of the solvability report; `where` says which state that is)."""
    try:
        yield
    except Exception as err:  # equinox's runtime error (its type depends on the JAX version)
        if NOT_REMOVABLE not in str(err) or not is_concrete(q):
            raise
        rows = solvability(model, q, t).redundant_rows
        hint = (f"Rows that form a removable set {where}: {rows}" if rows else
                f"No row is redundant {where} (p = 0): eliminate none, use method='min_norm'")
        raise eqx.EquinoxRuntimeError(f"{str(err).rstrip()} {hint}") from None


def keep_mask(model, method, C):
    """Rows kept by `Eliminate(rows)` or by "auto" (the rows that pivoted QR of C^T ranks
    after the numerical rank are the dependent ones, seed 001 section 3.3)."""
    rows = model.num_rows
    if isinstance(method, Eliminate):
        for k in method.rows:
            if not 0 <= k < rows:
                raise ValueError(
                    f"Eliminate: row {k} is out of range; C has {rows} rows (0..{rows - 1})"
                )
        keep = np.ones(rows, bool)
        keep[list(method.rows)] = False
        return jnp.asarray(keep)
    if method != "auto":
        raise ValueError(f"expected 'auto' or mb.Eliminate(rows), got {method!r}")
    return independent_rows(C)


__all__ = [
    "Eliminate",
    "check_removable",
    "eliminated_solve",
    "keep_mask",
    "min_norm_multipliers",
    "null_space_solve",
    "suggesting_rows",
]
