"""Rank-revealing linear algebra with fixed shapes (the rank is data, never a shape).

Rank decisions use singular values s_k > RANK_RTOL * s_max (a relative tolerance): a
redundant constraint set leaves singular values at round-off level (~1e-16 s_max), a genuine
near-singular configuration shows up in the solvability report's margin.
"""

import equinox as eqx
import jax
import jax.numpy as jnp

RANK_RTOL = 1e-9


def rank_mask(s, rtol=RANK_RTOL):
    """Mask of the singular values counted in the rank: s_k > rtol * max(s)."""
    smax = jnp.max(s, initial=0.0)
    return s > rtol * smax


def pinv_solve(A, b, rtol=RANK_RTOL):
    """Minimum-norm least-squares solution x = A^+ b, via the SVD with masked singular values."""
    U, s, Vt = jnp.linalg.svd(A, full_matrices=False)
    mask = rank_mask(s, rtol)
    s_inv = jnp.where(mask, 1.0 / jnp.where(mask, s, 1.0), 0.0)
    return Vt.T @ (s_inv * (U.T @ b))


def null_space(A, rtol=RANK_RTOL):
    """Orthonormal basis of null(A) with fixed shape (n, n): columns outside it are zero.

    Returns (V, mask) where mask[k] says whether column k belongs to the null space.
    """
    n = A.shape[1]
    _, s, Vt = jnp.linalg.svd(A, full_matrices=True)
    s_full = jnp.zeros(n, A.dtype).at[: s.shape[0]].set(s)
    in_range = rank_mask(s_full, rtol) if s.shape[0] else jnp.zeros(n, bool)
    mask = ~in_range
    return Vt.T * mask[None, :], mask


def materialise(primal, tangent):
    """Replace symbolic-zero (None) tangents of a pytree by arrays of zeros."""
    return jax.tree_util.tree_map(
        lambda p, t: jnp.zeros_like(p) if t is None else t,
        primal,
        tangent,
        is_leaf=lambda x: x is None,
    )


def split_inexact(tree):
    """(differentiable, static) parts of a pytree, as `eqx.partition` with inexact arrays."""
    return eqx.partition(tree, eqx.is_inexact_array)
