"""The terms of the equations of motion at one state, computed in one place.

    M qdd + C^T lambda = F,    C qdd = gamma                  (seed 001, eq. 11)

`state_terms` is the first stage of every analysis, in the spirit of MJX's `forward()`
stages: `accelerations`, `reactions` (and inverse dynamics, statics), the friction solve and
the integrator's right-hand side all start from it, so a term is formed the same way
everywhere. With a stabilization (e.g. `mb.Baumgarte`) its `gamma` is the stabilized
right-hand side and `gamma_exact` the one of the constraints themselves. `EquationTerms` is
the four terms of the equations alone, as a reaction method receives them.
"""

import functools
from typing import NamedTuple, Protocol

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._custom_types import (
    ConstraintMatrix,
    Coordinates,
    MassMatrix,
    RowVector,
    Scalar,
    ScalarLike,
)
from .model import KinematicTerms, Model


class EquationTerms(NamedTuple):
    """The terms of the equations of motion at one state,

        M qdd + C^T lambda = F,    C qdd = gamma                  (seed 001, eq. 11),

    what a reaction method solves (`AbstractReactionMethod.multipliers`): `M` (n, n) the mass
    matrix, `F` (n,) the applied forces, `C` (rows, n) the constraint matrix, `gamma` (rows,)
    the acceleration right-hand side. Immutable and a pytree; `terms._replace(F=..., gamma=...)`
    is the same system with other loads (the friction solve's unit loads)."""

    M: MassMatrix
    F: Coordinates
    C: ConstraintMatrix
    gamma: RowVector


class StateTerms:
    """The terms at one state, each formed when first read (so a formulation that reads only
    some of them, e.g. the sparse augmented Lagrangian, traces no dense C or M): M (n, n), F
    (n,) (applied forces), C (m + h, n), gamma (m + h,) (stabilized when asked), the kinematic
    residuals g = C qd + b and phi (Phi in the holonomic rows, 0 in the Pfaffian ones) that
    stabilizations and checks use, gamma_exact (gamma unstabilized), and the state (q, qd, t)
    itself. Read inside one trace (a jitted analysis); not a pytree."""

    def __init__(self, model, q, qd, t, stabilization=None, direction: ArrayLike = 1.0):
        self.model, self.q, self.qd, self.t = model, q, qd, t
        self._stabilization, self._direction = stabilization, direction

    @functools.cached_property
    def M(self) -> Float[Array, "n n"]:
        return self.model.mass_matrix()

    @functools.cached_property
    def F(self) -> Coordinates:
        return self.model.forces(self.q, self.qd, self.t)

    @functools.cached_property
    def _kinematic(self) -> KinematicTerms:
        if self.model.num_rows == 0:
            empty = jnp.zeros(0, self.q.dtype)
            return KinematicTerms(jnp.zeros((0, self.model.n), self.q.dtype), empty, empty, empty)
        return self.model.kinematic_terms(self.q, self.qd, self.t)

    @property
    def C(self) -> ConstraintMatrix:
        return self._kinematic.C

    @property
    def g(self) -> RowVector:
        return self._kinematic.g

    @property
    def phi(self) -> RowVector:
        return self._kinematic.phi

    @property
    def gamma_exact(self) -> RowVector:
        return self._kinematic.gamma

    @functools.cached_property
    def gamma(self) -> RowVector:
        if self._stabilization is None or self.model.num_rows == 0:
            return self._kinematic.gamma
        return self._stabilization.stabilized(self._kinematic, self._direction)

    @property
    def equation_terms(self) -> EquationTerms:
        """M, F, C and gamma (stabilized when asked) as one `EquationTerms`."""
        return EquationTerms(self.M, self.F, self.C, self.gamma)


class Stabilization(Protocol):
    """What `state_terms` needs of a stabilization (e.g. `mb.Baumgarte`)."""

    def stabilized(self, terms: KinematicTerms, direction: ScalarLike = 1.0) -> RowVector: ...


def state_terms(
    model: Model,
    q: Coordinates,
    qd: Coordinates,
    t: Scalar,
    stabilization: Stabilization | None = None,
    direction: ScalarLike = 1.0,
) -> StateTerms:
    """`StateTerms` of `model` at (q, qd, t): C, gamma, g and phi from one pass of
    `Model.kinematic_terms` (seed 001, eq. 5-9), formed when first read; `stabilization`: None
    or an object with `stabilized(kinematic_terms, direction)` giving the right-hand side that
    replaces gamma (`direction` = sign(t1 - t0) of an integration)."""
    return StateTerms(model, q, qd, t, stabilization, direction)
