"""The eliminated formulation's solve (seed 001, section 3.1): the augmented system (eq. 11)
with a removable set of redundant rows dropped, and the check that a set is removable.
`mb.Eliminate(rows)` and `mb.Auto()` (`jaxmb._reaction_methods`) choose the rows."""

import jax
import jax.numpy as jnp

from .._linalg.dense import cond, null_space, solve
from .._runtime import errors as _errors

ELIMINATED_COND_LIMIT = 1e12
"""Largest condition number accepted for the reduced augmented system of `Eliminate`."""


def eliminated_solve(M, F, C, gamma, keep):
    """Augmented system (seed 001, eq. 11)

        [M  C_k^T] [qdd   ]   [F      ]
        [C_k  0  ] [lambda] = [gamma_k]

    with the rows outside `keep` removed; fixed shapes: their rows are zeroed and their
    multipliers pinned to 0 by an identity block. Raises when the reduced system is singular
    (`RESULTS.singular_system`, reported as the analysis being run: `_errors.reporting`)."""
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
        _errors.named(
            "the remaining rows leave a singular augmented system (condition number above "
            f"{ELIMINATED_COND_LIMIT:g}): they are still dependent, or too many rows were "
            "dropped; eliminate exactly p rows that form a removable set "
            "(see mb.solvability(model, q).redundant_rows)."
        ),
        cause="singular_system",
    )
    return sol[:n], sol[n:]


def check_removable(x, C, keep):
    """x, raising (also inside jit) unless the rows outside `keep` form a removable set (seed
    001, section 3.1): exactly p = m + h - rank(C) rows are dropped and the kept rows keep the
    rank, rank(C_kept) = rank(C). Dropping a row that is not redundant (p = 0 for a
    non-redundant mechanism) would silently remove a constraint from the equations. The
    failure is `RESULTS.not_removable`."""
    rows, n = C.shape
    C = jax.lax.stop_gradient(C)
    rank = n - jnp.sum(null_space(C)[1])
    rank_kept = n - jnp.sum(null_space(jnp.where(keep[:, None], C, 0.0))[1])
    dropped = rows - jnp.sum(keep)
    bad = (rank_kept != rank) | (dropped != rows - rank)
    messages = tuple(
        _errors.named(
            "the eliminated rows are not a removable set at this configuration: C has rank "
            f"{r} here, so exactly p = {rows - r} row(s) must be eliminated and the {r} kept "
            "rows must be independent (rank(C without them) = rank(C)); find a removable set "
            "with mb.solvability(model, q).redundant_rows, or use method='auto'."
        )
        for r in range(rows + 1)
    )
    index = jnp.where(bad, rank, 0)
    return _errors.branched_error_if(x, bad, index, messages, cause="not_removable")
