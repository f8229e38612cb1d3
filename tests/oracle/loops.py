"""Constraint terms by a plain Python loop over the pairs (one jacfwd per pair): the reference
that jaxmb's grouped evaluation (`jaxmb._model.groups`, one vmapped kernel per pair type) is tested
against in tests/test_groups.py."""

import jax
import jax.numpy as jnp
import numpy as np


def _pair_coordinates(pair) -> np.ndarray:
    coords = sorted({c for body in pair.bodies() for c in body.coordinates()})
    return np.asarray(coords, dtype=np.int64)


def loop_C(model, q, t=0.0):
    """C(q, t) by a plain Python loop over the pairs (one jacfwd each): the reference that the
    grouped `Model.C` is tested against."""
    t = jnp.asarray(t, dtype=q.dtype)
    out = jnp.zeros((model.num_rows, model.n), q.dtype)
    start = 0
    for p in model.pairs:
        idx = _pair_coordinates(p)

        def g_local(v, p=p, idx=idx):
            return p.velocity_residual(q, jnp.zeros_like(q).at[idx].set(v), t)

        block = jax.jacfwd(g_local)(jnp.zeros(len(idx), q.dtype))
        out = out.at[np.ix_(np.arange(start, start + p.num_rows), idx)].set(block)
        start += p.num_rows
    return out


def loop_velocity_residual(model, q, qd, t=0.0):
    """g(q, qd, t) by a plain loop over the pairs (reference for the grouped version)."""
    t = jnp.asarray(t, dtype=q.dtype)
    parts = [p.velocity_residual(q, qd, t) for p in model.pairs]
    return jnp.concatenate(parts) if parts else jnp.zeros(0, q.dtype)


def loop_phi(model, q, t=0.0):
    """Phi(q, t) by a plain loop over the holonomic pairs (reference for the grouped version)."""
    t = jnp.asarray(t, dtype=q.dtype)
    parts = [p.residual(q, t) for p in model.pairs if p.holonomic]
    return jnp.concatenate(parts) if parts else jnp.zeros(0, q.dtype)
