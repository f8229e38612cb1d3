"""C as per-pair blocks: the constraint matrix in the form its sparsity gives.

Each pair's rows of C depend on the coordinates of its own bodies only (seed 001, eq. 5), so C
is stored as one (k, r, nv b) block array per group of pairs (`jaxmb._model.groups`: k pairs
of r rows on b bodies) and never as a dense (rows, n) matrix. The products

    C x,      C^T y,      C^T W C = sum over pairs  B_k^T W_k B_k   (nv b x nv b, bodies of k)

cost the number of nonzeros, so analyses of large mechanisms (the sparse augmented-Lagrangian
formulation) scale with the number of pairs instead of rows x n.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._custom_types import RowVector
from .groups import PairGroup, evaluate, scatter_rows


class ConstraintBlocks(NamedTuple):
    """C as blocks (`blocks[j]`: (k, r, nv b) of group j) with the row vectors of
    `Model.kinematic_terms`: g = C qd + b, gamma (C qdd = gamma), phi (Phi in the holonomic
    rows, 0 in the Pfaffian ones)."""

    blocks: tuple[Float[Array, "k r c"], ...]
    g: RowVector
    gamma: RowVector
    phi: RowVector


def velocity_residual(pair, kind):
    """g(q, v, t) of `pair` over the velocity coordinates v of its bodies: the pair's own
    velocity residual (over qdot) at qdot = T(q) v (the spatial note, section 2)."""
    return lambda q, v, t: pair.velocity_residual(q, kind.stacked_qdot(q, v), t)


def pair_terms(pair, kind, q, v, t):
    """(g, C block, gamma, Phi or 0) of one pair on its local coordinates (seed 001, eq. 4-9):
    one batch of forward-mode tangents of g(q, v, t) gives the columns of C (tangents e_k
    along v) and -gamma (tangent (qdot, 0, 1) along (q, v, t), qdot = T(q) v)."""
    nq, nv = q.shape[0], v.shape[0]
    tangent_q = jnp.concatenate([jnp.zeros((nv, nq), q.dtype), kind.stacked_qdot(q, v)[None]])
    tangent_v = jnp.concatenate([jnp.eye(nv, dtype=q.dtype), jnp.zeros((1, nv), q.dtype)])
    tangent_t = jnp.zeros(nv + 1, q.dtype).at[nv].set(1.0)
    g, dg = jax.vmap(lambda a, b, c: jax.jvp(velocity_residual(pair, kind), (q, v, t), (a, b, c)))(
        tangent_q, tangent_v, tangent_t
    )
    phi = pair.residual(q, t) if pair.holonomic else jnp.zeros_like(g[0])
    return g[0], dg[:nv].T, -dg[nv], phi


def constraint_blocks(pairs, groups: list[PairGroup], num_rows, kind, q, qd, t) -> ConstraintBlocks:
    """`ConstraintBlocks` of `pairs` (grouped as `groups`, bodies of `kind`) at (q, qd, t)."""
    values = evaluate(pairs, groups, lambda p, ql, vl: pair_terms(p, kind, ql, vl, t), q, qd)
    if not groups:
        zero = jnp.zeros(0, q.dtype)
        return ConstraintBlocks((), zero, zero, zero)
    g, gamma, phi = (
        scatter_rows(groups, [v[k] for v in values], num_rows, q.dtype) for k in (0, 2, 3)
    )
    return ConstraintBlocks(tuple(v[1] for v in values), g, gamma, phi)


def velocity_pair_terms(pair, kind, q, v, t):
    """(g, C block) of one pair on its local coordinates: g(q, v, t) = C v + b and its
    forward-mode tangents along the unit vectors of v, the columns of C (g is linear in v).
    The first-order part of `pair_terms`, for the velocity projection."""
    basis = jnp.eye(v.shape[0], dtype=q.dtype)
    g_of = velocity_residual(pair, kind)
    g, dg = jax.vmap(lambda e: jax.jvp(lambda v_: g_of(q, v_, t), (v,), (e,)))(basis)
    return g[0], dg.T


def velocity_blocks(pairs, groups: list[PairGroup], num_rows, kind, q, qd, t):
    """(C as blocks, g = C qd + b) of `pairs` (grouped as `groups`, bodies of `kind`) at
    (q, qd, t), from one evaluation of each group's velocity residual and its tangents."""
    values = evaluate(
        pairs, groups, lambda p, ql, vl: velocity_pair_terms(p, kind, ql, vl, t), q, qd
    )
    g = scatter_rows(groups, [v[0] for v in values], num_rows, q.dtype)
    return tuple(v[1] for v in values), g


def multiply(groups, blocks, x, num_rows):
    """C x (rows,) from the blocks."""
    if not groups:
        return jnp.zeros(0, x.dtype)
    return scatter_rows(
        groups,
        [jnp.einsum("krc,kc->kr", B, x[g.columns]) for g, B in zip(groups, blocks)],
        num_rows,
        x.dtype,
    )


def multiply_transposed(groups, blocks, y, n):
    """C^T y (n,) from the blocks."""
    out = jnp.zeros(n, y.dtype)
    for g, B in zip(groups, blocks):
        out = out.at[g.columns].add(jnp.einsum("krc,kr->kc", B, y[g.rows]))
    return out


def weighted_normal_blocks(groups, blocks, w):
    """B_k^T diag(w_k) B_k per pair, (k, nv b, nv b) per group: the terms of C^T W C."""
    return [jnp.einsum("kri,kr,krj->kij", B, w[g.rows], B) for g, B in zip(groups, blocks)]


def mass_row_norms(groups, blocks, inverse_mass, num_rows):
    """C_i M^-1 C_i^T per row (M diagonal, `inverse_mass` its inverse): the squared norm of
    each row in the metric of the inverse mass (units row^2 / mass)."""
    if not groups:
        return jnp.zeros(0, inverse_mass.dtype)
    return scatter_rows(
        groups,
        [jnp.einsum("krc,kc->kr", B * B, inverse_mass[g.columns]) for g, B in zip(groups, blocks)],
        num_rows,
        inverse_mass.dtype,
    )


def body_cliques(groups) -> list[np.ndarray]:
    """Per group, the (k, b) body indices of its pairs' blocks (slot s: the s-th body's
    velocity coordinates of the pair's local vector)."""
    return [g.bodies for g in groups]
