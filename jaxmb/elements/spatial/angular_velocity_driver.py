"""Angular-velocity driver (a Pfaffian row)."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from ..._custom_types import Coordinates, PairRowVector, Scalar
from .._base import drive_field
from ..drive import AbstractDrive
from ..geometry import Body, as_f64
from ._base import AbstractSpatialPfaffianPair
from .geometry import direction, pose
from .quaternion import global_rate
from .vectors import Vector3, dot, unit


def angular_velocity(q: Coordinates, qdot: Coordinates, body: Body) -> Vector3:
    """The global angular velocity of `body`, 2 vec(pdot (x) conj(p)) / |p|^2 (zero for the
    ground); linear in qdot."""
    if body.is_ground:
        return jnp.zeros(3, dtype=q.dtype)
    return global_rate(pose(q, body)[1], pose(qdot, body)[1])


class AngularVelocityDriver(AbstractSpatialPfaffianPair):
    """The angular velocity of body j relative to body i about axis_i is f(t) (1 row,
    Pfaffian: it prescribes a rate, never an angle, so it has no branch at +-pi).

    g = (omega_j - omega_i) . (A_i h_i) - f(t) = 0, omega the global angular velocities from
    the quaternion rates, h_i = axis_i / |axis_i| (the spatial note, section 3); linear in
    qdot, b = -f(t). The multiplier is the driving torque about the axis.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `axis_i`: the axis in body i's frame (non-zero; normalised).
    - `f`: f(t), the prescribed angular velocity (rad/s; a constant or a drive function of
      time t).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    axis_i: Vector3 = eqx.field(converter=as_f64)
    f: AbstractDrive = eqx.field(converter=drive_field)
    num_rows: ClassVar[int] = 1
    nonzero: ClassVar[tuple[str, ...]] = ("axis_i",)

    def __check_init__(self):
        self.check_distinct(self.i, self.j)
        self.check_axis(self.axis_i, "axis_i")
        self.check_drive(self.f, "f")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def velocity_residual(self, q: Coordinates, qdot: Coordinates, t: Scalar) -> PairRowVector:
        relative = angular_velocity(q, qdot, self.j) - angular_velocity(q, qdot, self.i)
        h = direction(q, self.i, unit(self.axis_i))
        return jnp.reshape(dot(relative, h) - self.f(t), (1,))
