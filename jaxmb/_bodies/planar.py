"""The planar body: q = v = (x, y, phi), qdot = v, M = diag(m, m, J) (seed 003)."""

import dataclasses
from typing import ClassVar

import jax.numpy as jnp

from .kind import AbstractBodyKind


@dataclasses.dataclass(frozen=True)  # no fields: every instance equal; pinned by its class
class Planar(AbstractBodyKind):
    """A planar rigid body in absolute coordinates (x, y, phi) of its centre of mass (the API's
    conventions): the velocities are the time derivatives of the coordinates, so T = I and the
    retraction is the sum q + dv; no inertia force arises in centroidal frames."""

    dim: ClassVar[int] = 2
    nq: ClassVar[int] = 3
    nv: ClassVar[int] = 3
    nodes: ClassVar[tuple[int, ...]] = (3,)
    position_names: ClassVar[tuple[str, ...]] = ("x", "y", "phi")
    velocity_names: ClassVar[tuple[str, ...]] = ("xd", "yd", "phid")
    force_names: ClassVar[tuple[str, ...]] = ("fx", "fy", "torque")

    def qdot(self, q, v):
        return v

    def pull_back(self, q, Q):
        return Q

    def retract(self, q, dv):
        return q + dv

    def difference(self, q1, q0):
        return q1 - q0

    def normalize(self, q):
        return q

    def mass_diagonal(self, mass, inertia):
        return jnp.stack([mass, mass, inertia], axis=-1)

    def inertia_force(self, inertias, v):
        return None

    # q and v share one layout: the whole-vector forms are the per-body ones, no reshapes
    stacked_qdot = qdot
    stacked_pull_back = pull_back
    stacked_retract = retract
    stacked_difference = difference
    stacked_normalize = normalize


PLANAR = Planar()
"""The planar kind (every model of `Mechanism()` / `Mechanism(dim=2)`)."""
