"""Weld (fixed) pair."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from .._custom_types import Coordinates, PairRowVector, Scalar, Vector2
from ._base import AbstractHolonomicPair
from .geometry import Body, as_f64, point, relative_angle


class Weld(AbstractHolonomicPair):
    """Bodies i and j rigidly joined: point s_i coincides with s_j and phi_j - phi_i = angle.

    Phi = [r_i + A_i s_i - r_j - A_j s_j; phi_j - phi_i - angle] (seed 001, eq. 40 plus the
    rotation row of eq. 42).

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `s_i`: the weld point on body i, in body i's frame (m, default (0, 0)).
    - `s_j`: the weld point on body j, in body j's frame (m, default (0, 0)).
    - `angle`: the fixed relative angle phi_j - phi_i (rad, default 0).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector2 = eqx.field(converter=as_f64, default=(0.0, 0.0))
    s_j: Vector2 = eqx.field(converter=as_f64, default=(0.0, 0.0))
    angle: Scalar = eqx.field(converter=as_f64, default=0.0)
    num_rows: ClassVar[int] = 3

    def __check_init__(self):
        self.check_point_pair(self.i, self.j, self.s_i, self.s_j)
        self.check_scalar(self.angle, "angle")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        d = point(q, self.i, self.s_i) - point(q, self.j, self.s_j)
        angle = relative_angle(q, self.i, self.j) - self.angle
        return jnp.concatenate([d, jnp.reshape(angle, (1,))])
