"""The terms of the equations of motion at one state, computed in one place.

    M qdd + C^T lambda = F,    C qdd = gamma                  (seed 001, eq. 11)

`state_terms` is the first stage of every analysis, in the spirit of MJX's `forward()`
stages: `accelerations`, `reactions` (and inverse dynamics, statics), the friction solve and
the integrator's right-hand side all start from it, so a term is formed the same way
everywhere. With a stabilization (e.g. `mb.Baumgarte`) its `gamma` is the stabilized
right-hand side and `gamma_exact` the one of the constraints themselves.
"""

from typing import NamedTuple

import jax.numpy as jnp


class StateTerms(NamedTuple):
    """M (n, n), F (n,) (applied forces), C (m + h, n), gamma (m + h,) (stabilized when
    asked), and the kinematic residuals g = C qd + b and phi (Phi in the holonomic rows, 0 in
    the Pfaffian ones) that stabilizations and checks use; gamma_exact: gamma unstabilized."""

    M: jnp.ndarray
    F: jnp.ndarray
    C: jnp.ndarray
    gamma: jnp.ndarray
    g: jnp.ndarray
    phi: jnp.ndarray
    gamma_exact: jnp.ndarray


def state_terms(model, q, qd, t, stabilization=None, direction=1.0) -> StateTerms:
    """`StateTerms` of `model` at (q, qd, t): C, gamma, g and phi in one pass of
    `Model.kinematic_terms` (seed 001, eq. 5-9); `stabilization`: None or an object with
    `stabilized(kinematic_terms, direction)` giving the right-hand side that replaces gamma
    (`direction` = sign(t1 - t0) of an integration)."""
    M = model.mass_matrix()
    F = model.forces(q, qd, t)
    if model.num_rows == 0:
        empty = jnp.zeros(0, q.dtype)
        return StateTerms(M, F, jnp.zeros((0, model.n), q.dtype), empty, empty, empty, empty)
    kin = model.kinematic_terms(q, qd, t)
    gamma = kin.gamma if stabilization is None else stabilization.stabilized(kin, direction)
    return StateTerms(M, F, kin.C, gamma, kin.g, kin.phi, kin.gamma)
