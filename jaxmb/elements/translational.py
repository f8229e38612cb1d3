"""Translational (prismatic) pair."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from .._custom_types import Coordinates, PairRowVector, Scalar, Vector2
from ._base import AbstractHolonomicPair
from .geometry import Body, as_f64, direction, dot2, point, relative_angle


class Translational(AbstractHolonomicPair):
    """Body i slides along body j without relative rotation.

    Phi = [(r_j + A_j s_j - r_i - A_i s_i)^T A_j v; phi_i - phi_j - angle] (seed 001, eq. 42),
    with v a body-j vector perpendicular to the sliding axis (normalised, so the first
    multiplier is a force) and `angle` the constant relative angle (default 0).

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i, the slider (a body handle, or the ground).
    - `j`: body j, the guide (a body handle, or the ground).
    - `s_i`: a point on body i's sliding axis, in body i's frame (m).
    - `s_j`: a point on body j's sliding axis, in body j's frame (m).
    - `v`: a vector perpendicular to the sliding axis, in body j's frame (any non-zero length;
      normalised).
    - `angle`: the constant relative angle phi_i - phi_j (rad, default 0).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector2 = eqx.field(converter=as_f64)
    s_j: Vector2 = eqx.field(converter=as_f64)
    v: Vector2 = eqx.field(converter=as_f64)
    angle: Scalar = eqx.field(converter=as_f64, default=0.0)
    num_rows: ClassVar[int] = 2
    nonzero: ClassVar[tuple[str, ...]] = ("v",)

    def __check_init__(self):
        self.check_point_pair(self.i, self.j, self.s_i, self.s_j)
        self.check_vector(self.v, "v")
        self.check_scalar(self.angle, "angle")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        d = point(q, self.j, self.s_j) - point(q, self.i, self.s_i)
        v = direction(q, self.j, self.v / jnp.linalg.norm(self.v))
        return jnp.stack([dot2(d, v), relative_angle(q, self.j, self.i) - self.angle])
