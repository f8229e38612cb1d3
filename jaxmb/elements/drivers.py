"""Drivers: holonomic rheonomic pairs whose multipliers are driving forces and torques."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from .._custom_types import Coordinates, PairRowVector, Scalar, Vector2
from ._base import AbstractHolonomicPair, drive_field
from .drive import AbstractDrive
from .geometry import Body, as_f64, direction, dot2, point, pose, relative_angle


class TranslationalDriver(AbstractHolonomicPair):
    """Distance from point s_i of body i to point s_j of body j along body-j unit vector u is d(t).

    Phi = (r_j + A_j s_j - r_i - A_i s_i)^T A_j u - d(t) = 0 (seed 001, eq. 43).

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `s_i`: the driven point on body i, in body i's frame (m).
    - `s_j`: the reference point on body j, in body j's frame (m).
    - `u`: the direction of the driven distance, in body j's frame (any non-zero length;
      normalised).
    - `d`: d(t), the prescribed distance (m; a constant or a drive function of time t).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector2 = eqx.field(converter=as_f64)
    s_j: Vector2 = eqx.field(converter=as_f64)
    u: Vector2 = eqx.field(converter=as_f64)
    d: AbstractDrive = eqx.field(converter=drive_field)
    num_rows: ClassVar[int] = 1
    nonzero: ClassVar[tuple[str, ...]] = ("u",)

    def __check_init__(self):
        self.check_point_pair(self.i, self.j, self.s_i, self.s_j)
        self.check_vector(self.u, "u")
        self.check_drive(self.d, "d")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        d = point(q, self.j, self.s_j) - point(q, self.i, self.s_i)
        u = direction(q, self.j, self.u / jnp.linalg.norm(self.u))
        return jnp.reshape(dot2(d, u) - self.d(t), (1,))


class RelativeAngleDriver(AbstractHolonomicPair):
    """phi_j - phi_i - offset = f(t) (seed 003, "Relative angle driver").

    Torque on i: lambda, on j: -lambda.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `f`: f(t), the prescribed relative angle phi_j - phi_i - offset (rad; a constant or a drive
      function of time t).
    - `offset`: the relative angle phi_j - phi_i at which f(t) = 0 (rad, default 0).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    f: AbstractDrive = eqx.field(converter=drive_field)
    offset: Scalar = eqx.field(converter=as_f64, default=0.0)
    num_rows: ClassVar[int] = 1

    def __check_init__(self):
        self.check_distinct(self.i, self.j)
        self.check_scalar(self.offset, "offset")
        self.check_drive(self.f, "f")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        angle = relative_angle(q, self.i, self.j)
        return jnp.reshape(angle - self.offset - self.f(t), (1,))


class AbsoluteDriver(AbstractHolonomicPair):
    """Coordinate `coordinate` (0: x, 1: y, 2: phi) of `body` equals f(t).

    **Arguments:**
    - `name`: the element's name.
    - `body`: the driven body (not the ground).
    - `coordinate`: which coordinate of the body is driven: 0 (x), 1 (y) or 2 (phi).
    - `f`: f(t), the prescribed value of the coordinate (m for x and y, rad for phi; a constant or
      a drive function of time t).
    """

    name: str = eqx.field(static=True)
    body: Body = eqx.field(static=True)
    coordinate: int = eqx.field(static=True)
    f: AbstractDrive = eqx.field(converter=drive_field)
    num_rows: ClassVar[int] = 1

    def __check_init__(self):
        if self.coordinate not in (0, 1, 2):
            self.fail(f"coordinate must be 0 (x), 1 (y) or 2 (phi), got {self.coordinate!r}")
        self.check_body(self.body, "body")
        if self.body.is_ground:
            self.fail("cannot drive a coordinate of the ground")
        self.check_drive(self.f, "f")

    def bodies(self) -> tuple[Body, ...]:
        return (self.body,)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        r, phi = pose(q, self.body)
        value = jnp.concatenate([r, phi[None]])[self.coordinate]
        return jnp.reshape(value - self.f(t), (1,))
