"""Solvability of large models without a dense factorization of C: `method="sparse"`.

Seed 001's criterion (section 3.2, eq. 27): pair X's reaction is unique iff B_X = C_X^T Q~_X
= 0, Q~ an orthonormal basis of the self-stresses null(C^T). The dense tests find Q~ by a
pivoted QR or an SVD of C, O(rows n^2). Here both halves of the report come from the
augmented-Lagrangian matrix's sparse factorization (`jaxmb._formulations.augmented_lagrangian`,
a static pattern, no rank decision inside):

Verdicts, by probes. With P_N = Q~ Q~^T the projector onto the self-stresses and G a fixed
rows x k matrix of independent standard normal numbers (k = PROBES),

    R = P_N G = G - C (C^T C)^+ C^T G,      C_X^T R_X = B_X (Q~^T G),

and Q~^T G is a p x k standard normal matrix, so C_X^T R_X = 0 iff B_X = 0 (with probability
one), E |C_X^T R_X|_F^2 / k = |B_X|_F^2 (`b_norm` is this estimate: relative spread about
sqrt(2 / (k rank B_X)), under 40 %), and range(C_X^T R_X) = range(B_X) for k >= rank B_X
(at most the pair's rows), which gives the unique directions exactly. C (C^T C)^+ C^T G are
the minimum-norm multipliers of the loads C^T G: the compliance-resolved ones with uniform
stiffness, by the sparse iterated Tikhonov solve (`sparse_compliance_multipliers`).

Rank, by the modes. The b largest eigenvalues of S^-1 M (S = M + alpha C'^T C', C' = D C
with rows of unit length in the metric of M^-1) are 1 / (1 + alpha sigma^2) for the b smallest
singular values sigma of C' M^(-1/2): 1 on the modes null(C), at most 1e-4 in every direction
that a row of a regular configuration holds. Subspace iteration X <- S^-1 M X (ITERATIONS
times, a block of b columns kept M-orthonormal), then the singular values of C' X, gives those
sigma; those at most rtol sigma_max (sigma_max by power iteration) are modes, so
rank = n - modes and the margin is that of the dense tests on these values. A block whose
every column is a mode is `saturated` (more modes than b may exist): the eager call repeats
with a larger block, a traced one raises.

Not computed: `row_order` (a redundant row set needs the pivoted QR of C^T), so
`redundant_rows` refers to method "qr".
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._formulations import augmented_lagrangian as al
from .._linalg.dense import qr, singular_values
from .._model.model import Model
from .._reaction_methods.compliance import sparse_compliance_multipliers

PROBES = 16
"""Columns of the probe matrix G: 16 estimate |B_X|_F to about +-35 % (one standard deviation,
a pair whose B_X has rank one) and decide B_X = 0 exactly."""

ITERATIONS = 8
"""Subspace iterations: a direction with alpha sigma^2 = 100 (sigma = 1e-3) is reduced by
101^-8 = 1e-16 relative to the modes."""

POWER_ITERATIONS = 30
"""Power iterations for sigma_max (the rank threshold's scale; a few per cent suffice)."""

PENALTY = 1e8
"""alpha of S (the augmented-Lagrangian formulation's default)."""

MIN_BLOCK = 16
"""Columns of the subspace iteration beyond n - rows (which bounds the modes from below)."""


def block_size(model: Model) -> int:
    """b: MIN_BLOCK more than the least possible number of modes, at most n."""
    return int(min(model.n, MIN_BLOCK + max(0, model.n - model.num_rows)))


def _probes(rows: int, k: int) -> np.ndarray:
    return np.random.default_rng(20261126).standard_normal((rows, k))


def self_stress_probes(model: Model, C, k: int = PROBES):
    """R = P_N G / sqrt(k) (rows x k), no derivative: its rows restricted to a pair X give
    |C_X^T R_X|_F, an estimate of |B_X|_F (module docstring)."""
    C = jax.lax.stop_gradient(C)
    G = jnp.asarray(_probes(model.num_rows, k) / np.sqrt(k))
    ones = jnp.ones(model.num_rows, C.dtype)
    return G - sparse_compliance_multipliers(model, C, C.T @ G, ones)


class Modes(eqx.Module):
    """The b smallest singular values of C' M^(-1/2) over the active rows and the decisions."""

    sigma: jax.Array  # (b,) ascending
    sigma_max: jax.Array
    count: jax.Array  # the modes: sigma <= rtol sigma_max
    saturated: jax.Array  # every column of the block is a mode (and b < n)


def modes(model: Model, C, rtol: float, active=None, block: int | None = None) -> Modes:
    """Subspace iteration on S^-1 M and the singular values of C' X (module docstring); rows
    outside the static mask `active` are left out."""
    C = jax.lax.stop_gradient(C)
    n = model.n
    b = block_size(model) if block is None else int(min(block, n))
    mass = jax.lax.stop_gradient(model.mass_diagonal())
    mask = None if active is None else jnp.asarray(active)
    s = al.system(model, mass, al.blocks_of(model, C), PENALTY, mask)
    sqrt_m = jnp.sqrt(mass)

    def orthonormal(X):  # M-orthonormal columns
        Q, _ = qr(sqrt_m[:, None] * X)
        return Q / sqrt_m[:, None]

    def iterate(X, _):
        return orthonormal(jax.vmap(s.S.solve, in_axes=1, out_axes=1)(mass[:, None] * X)), None

    start = orthonormal(jnp.asarray(np.random.default_rng(7).standard_normal((n, b))))
    X, _ = jax.lax.scan(iterate, start, None, length=ITERATIONS)
    CX = jax.vmap(s.C, in_axes=1, out_axes=1)(X)
    sigma = singular_values(CX)  # min(rows, b) of them: the rest of the block are modes
    sigma = jnp.sort(jnp.pad(sigma, (0, b - sigma.shape[0])))

    def power(u, _):  # u <- A^T A u, A = C' M^(-1/2)
        w = s.CT(s.C(u / sqrt_m)) / sqrt_m
        return w / jnp.maximum(jnp.linalg.norm(w), 1e-300), None

    u, _ = jax.lax.scan(
        power,
        jnp.asarray(np.random.default_rng(11).standard_normal(n)),
        None,
        length=POWER_ITERATIONS,
    )
    sigma_max = jnp.maximum(jnp.linalg.norm(s.C(u / sqrt_m)), jnp.max(sigma))
    count = jnp.sum(sigma <= rtol * sigma_max)
    return Modes(sigma, sigma_max, count, (count == b) & (b < n))


__all__ = ["Modes", "PROBES", "block_size", "modes", "self_stress_probes"]
