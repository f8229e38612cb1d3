"""Solvability of large models without a dense factorization of C: `method="sparse"`.

Seed 001's criterion (section 3.2, eq. 27): pair X's reaction is unique iff B_X = C_X^T Q~_X
= 0, Q~ an orthonormal basis of the self-stresses null(C^T). The dense tests find Q~ by a
pivoted QR or an SVD of C, O(rows n^2). Here both halves of the report come from one sparse
factorization of

    S = I + alpha C^T C,        alpha = PENALTY / sigma_max^2,

(the pattern of the body graph, `jaxmb._formulations.augmented_lagrangian.system` with unit
mass and unit rows: the Euclidean metric of the dense tests, so the singular values below are
those of C that the dense SVD test thresholds, not of a rescaled C).

Rank, by the slow block. The b largest eigenvalues of S^-1 are 1 / (1 + alpha sigma^2) for the
b smallest singular values sigma of C. Subspace iteration X <- orth(S^-1 X) (ITERATIONS times,
b columns), then the SVD C X = U diag(s) V^T gives the Ritz values s and the Ritz vectors
Z = X V; those s <= rtol sigma_max (sigma_max by power iteration) are modes, rank = n - modes.
The block is `resolved` when its largest Ritz value s_b has alpha s_b^2 >= GAP (or b = n):
every direction left outside then has alpha sigma^2 >= GAP and keeps a share at most
(1 + GAP)^-ITERATIONS in the block, so s equals C's small singular values to round-off. Near
a singular position many singular values are small at once (the N = 30 N-four-bar 1e-4 rad
from its collinear position: the mode and 30 values from 4.8e-6 to 1e-4, the next 0.66, of
2.2); a block narrower than that cluster holds mixtures of it, whose Ritz values overstate
the modes' (the rank came out above the number of rows). An unresolved block is repeated
wider eagerly; traced, it is refused or (for the flags of `reactions`) left undecided.

Verdicts, by probes. With P_N = Q~ Q~^T and G a fixed rows x k matrix of independent standard
normal numbers (k = PROBES),

    R = P_N G,      C_X^T R_X = B_X (Q~^T G),

and Q~^T G is a p x k standard normal matrix, so C_X^T R_X = 0 iff B_X = 0 (with probability
one), E |C_X^T R_X|_F^2 / k = |B_X|_F^2 (`b_norm`: relative spread about sqrt(2 / (k rank
B_X))), and range(C_X^T R_X) = range(B_X) for k >= rank B_X. R by a two-level iteration from
R = G: the coarse step removes the kept Ritz directions exactly, R <- R - U_k U_k^T R (U_k the
columns of U whose s is kept: C Z_k = U_k diag(s_k)), the fine step the rest,
R <- R - alpha C S^-1 C^T R (a factor 1 / (1 + alpha sigma^2) <= 1 / (1 + GAP) per round on
every direction outside the block). Without the coarse step a kept direction of the cluster
contracts by 1 / (1 + alpha sigma^2) only, as little as 1 - 2e-3 there: the iterated Tikhonov
solve used before (at most 64 iterations) left |R - P_N G| = 0.13 |G| (0.39 at 1e-7 rad), and
every pair non-unique.

Undecided (`undecided`, per pair): the block is not resolved; the closest rank decision is
within MARGIN_UNDECIDED of the threshold (margin, as the dense tests'); the probes did not
converge; or a pair's estimate |B_X|_F / |C_X|_F lies within the probes' spread B_SPREAD of
btol. An undecided pair is reported not solvable.

Not computed: `row_order` (a redundant row set needs the pivoted QR of C^T), so
`redundant_rows` refers to method "qr".
"""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._formulations import augmented_lagrangian as al
from .._linalg.dense import qr, svd
from .._model.blocks import multiply, multiply_transposed
from .._model.model import Model

PROBES = 16
"""Columns of the probe matrix G: 16 estimate |B_X|_F to about +-35 % (one standard deviation,
a pair whose B_X has rank one) and decide B_X = 0 exactly."""

ITERATIONS = 8
"""Subspace iterations: a direction with alpha sigma^2 >= GAP keeps a share below
(1 + GAP)^-8 = 1e-24 in the block."""

GAP = 1e3
"""The block is resolved when its largest Ritz value s_b has alpha s_b^2 >= GAP (module
docstring)."""

POWER_ITERATIONS = 30
"""Power iterations for sigma_max (the rank threshold's scale; a few per cent suffice)."""

PENALTY = 1e8
"""alpha sigma_max^2: the fastest direction contracts by 1e-8 per solve; cond(S) = 1e8."""

MIN_BLOCK = 16
"""Columns of the subspace iteration beyond n - rows (which bounds the modes from below)."""

PROBE_ROUNDS = 4
"""Coarse + fine rounds of the probes: each contracts every direction outside the block by
1 / (1 + GAP) or more."""

PROBE_TOL = 1e-9
"""The probes have converged when the last fine step changed them by at most this much
relative to |G| (a mode just below the threshold loses alpha sigma^2 <= 1e8 rtol^2 = 1e-10
per round)."""

MARGIN_UNDECIDED = 4.0
"""A rank decision closer than this factor to the threshold is undecided: the dense pivoted
QR's |R_kk| and the singular values it approximates differ by such factors there."""

B_SPREAD = 3.0
"""|B_X|_F estimates within this factor of btol |C_X|_F are undecided: 16 probes estimate
a rank-one |B_X|_F within a factor 0.3 to 3 but with probability 1e-6."""


def block_size(model: Model) -> int:
    """b: MIN_BLOCK more than the least possible number of modes, at most n."""
    return int(min(model.n, MIN_BLOCK + max(0, model.n - model.num_rows)))


def _probes(rows: int, k: int) -> np.ndarray:
    return np.random.default_rng(20261126).standard_normal((rows, k))


class Modes(eqx.Module):
    """The b smallest singular values of C over the active rows, their vectors and the
    decisions."""

    sigma: jax.Array  # (b,) ascending Ritz values
    sigma_max: jax.Array
    count: jax.Array  # the modes: sigma <= rtol sigma_max
    saturated: jax.Array  # the block is not resolved (b < n and alpha s_b^2 < GAP)
    left: jax.Array  # (rows, b): C Z = left diag(sigma), zero columns for the padded values
    penalty: jax.Array  # alpha
    S: Any  # the factorization of S = I + alpha C^T C (sparse or dense: `.solve`)

    @property
    def resolved(self) -> jax.Array:
        return ~self.saturated


def _products(model: Model, C, active):
    """(C x, C^T y) over the active rows, from C's per-pair blocks."""
    _, groups, _, _ = al.pattern(model)
    blocks = al.blocks_of(model, C)
    rows, n = C.shape
    mask = jnp.ones(rows, C.dtype) if active is None else jnp.asarray(active, C.dtype)

    def Cx(x):
        return mask * multiply(groups, blocks, x, rows)

    def CTy(y):
        return multiply_transposed(groups, blocks, mask * y, n)

    return blocks, mask, Cx, CTy


def _columns(fn, X):
    return jax.vmap(fn, in_axes=1, out_axes=1)(X)


def modes(model: Model, C, rtol: float, active=None, block: int | None = None) -> Modes:
    """Subspace iteration on S^-1 and the SVD of C X (module docstring); rows outside the
    static mask `active` are left out."""
    C = jax.lax.stop_gradient(C)
    rows, n = C.shape
    b = block_size(model) if block is None else int(min(block, n))
    blocks, mask, Cx, CTy = _products(model, C, active)

    def power(u, _):  # u <- C^T C u
        w = CTy(Cx(u))
        return w / jnp.maximum(jnp.linalg.norm(w), 1e-300), None

    u, _ = jax.lax.scan(
        power,
        jnp.asarray(np.random.default_rng(11).standard_normal(n)),
        None,
        length=POWER_ITERATIONS,
    )
    sigma_max = jnp.linalg.norm(Cx(u))
    alpha = PENALTY / jnp.maximum(sigma_max, 1e-150) ** 2
    s = al.system(model, jnp.ones(n, C.dtype), blocks, alpha, scale=mask)

    def iterate(X, _):
        return qr(_columns(s.S.solve, X))[0], None

    start = qr(jnp.asarray(np.random.default_rng(7).standard_normal((n, b))))[0]
    X, _ = jax.lax.scan(iterate, start, None, length=ITERATIONS)
    U, values, _ = svd(_columns(Cx, X))  # min(rows, b) values; the rest are modes
    width = min(rows, b)
    left = jnp.zeros((rows, b), C.dtype).at[:, :width].set(U[:, :width])
    sigma = jnp.zeros(b, C.dtype).at[:width].set(values[:width])
    order = jnp.argsort(sigma)  # ascending
    sigma, left = sigma[order], left[:, order]
    sigma_max = jnp.maximum(sigma_max, sigma[-1])
    count = jnp.sum(sigma <= rtol * sigma_max)
    resolved = (b >= n) | (alpha * sigma[-1] ** 2 >= GAP)
    return Modes(sigma, sigma_max, count, ~resolved, left, alpha, s.S)


def self_stress_probes(model: Model, C, found: Modes, rtol: float, k: int = PROBES):
    """(R, converged): R = P_N G / sqrt(k) (rows x k), no derivative, by the two-level
    iteration of the module docstring; its rows restricted to a pair X give |C_X^T R_X|_F, an
    estimate of |B_X|_F."""
    C = jax.lax.stop_gradient(C)
    _, _, Cx, CTy = _products(model, C, None)
    G = jnp.asarray(_probes(model.num_rows, k) / np.sqrt(k))
    kept = found.sigma > rtol * found.sigma_max
    Uk = jnp.where(kept[None, :], found.left, 0.0)

    def coarse(R):
        return R - Uk @ (Uk.T @ R)

    def fine(R):
        return R - found.penalty * _columns(lambda r: Cx(found.S.solve(CTy(r))), R)

    def round_(R, _):
        R = coarse(R)
        nxt = fine(R)
        return nxt, jnp.linalg.norm(nxt - R)

    R, changes = jax.lax.scan(round_, G, None, length=PROBE_ROUNDS)
    R = coarse(R)
    return R, changes[-1] <= PROBE_TOL * jnp.linalg.norm(G)


__all__ = ["Modes", "PROBES", "block_size", "modes", "self_stress_probes"]
