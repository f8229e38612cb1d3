"""The terms of the equations of motion at one state, computed in one place.

    M qdd + C^T lambda = F,    C qdd = gamma                  (seed 001, eq. 11)

`state_terms` is the first stage of every analysis, in the spirit of MJX's `forward()`
stages: `accelerations`, `reactions` (and inverse dynamics, statics), the friction solve and
the integrator's right-hand side all start from it, so a term is formed the same way
everywhere. With a stabilization (e.g. `mb.Baumgarte`) its `gamma` is the stabilized
right-hand side and `gamma_exact` the one of the constraints themselves.
"""

from typing import NamedTuple, Protocol

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Real

from .model import KinematicTerms, Model


class StateTerms(NamedTuple):
    """M (n, n), F (n,) (applied forces), C (m + h, n), gamma (m + h,) (stabilized when
    asked), and the kinematic residuals g = C qd + b and phi (Phi in the holonomic rows, 0 in
    the Pfaffian ones) that stabilizations and checks use; gamma_exact: gamma unstabilized; and
    the state (q, qd, t) itself, for terms that need more than these (friction's slip)."""

    M: Float[Array, "n n"]
    F: Float[Array, " n"]
    C: Float[Array, "rows n"]
    gamma: Float[Array, " rows"]
    g: Float[Array, " rows"]
    phi: Float[Array, " rows"]
    gamma_exact: Float[Array, " rows"]
    q: Float[Array, " n"]
    qd: Float[Array, " n"]
    t: Float[Array, ""]


class Stabilization(Protocol):
    """What `state_terms` needs of a stabilization (e.g. `mb.Baumgarte`)."""

    def stabilized(
        self, terms: KinematicTerms, direction: Real[ArrayLike, ""] = 1.0
    ) -> Float[Array, " rows"]: ...


def state_terms(
    model: Model,
    q: Float[Array, " n"],
    qd: Float[Array, " n"],
    t: Float[Array, ""],
    stabilization: Stabilization | None = None,
    direction: Real[ArrayLike, ""] = 1.0,
) -> StateTerms:
    """`StateTerms` of `model` at (q, qd, t): C, gamma, g and phi in one pass of
    `Model.kinematic_terms` (seed 001, eq. 5-9); `stabilization`: None or an object with
    `stabilized(kinematic_terms, direction)` giving the right-hand side that replaces gamma
    (`direction` = sign(t1 - t0) of an integration)."""
    M = model.mass_matrix()
    F = model.forces(q, qd, t)
    if model.num_rows == 0:
        empty = jnp.zeros(0, q.dtype)
        return StateTerms(M, F, jnp.zeros((0, model.n), q.dtype), empty, empty, empty, empty,
                          q, qd, t)
    kin = model.kinematic_terms(q, qd, t)
    gamma = kin.gamma if stabilization is None else stabilization.stabilized(kin, direction)
    return StateTerms(M, F, kin.C, gamma, kin.g, kin.phi, kin.gamma, q, qd, t)
