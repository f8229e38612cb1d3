"""Distance (revolute-revolute, rev-rev) pair."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from .._custom_types import Coordinates, PairRowVector, Scalar, Vector2
from ._base import AbstractHolonomicPair
from .geometry import Body, as_f64, dot2, point


class Distance(AbstractHolonomicPair):
    """Points s_i and s_j stay `length` apart (a massless link with a revolute at each end).

    Phi = d^T d - L^2 with d = r_j^P - r_i^P (seed 003, "Double revolute"); the force on body i
    is 2 d lambda at P_i.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `s_i`: the link's end point on body i, in body i's frame (m).
    - `s_j`: the link's end point on body j, in body j's frame (m).
    - `length`: L, the distance kept between the two points (m, > 0).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector2 = eqx.field(converter=as_f64)
    s_j: Vector2 = eqx.field(converter=as_f64)
    length: Scalar = eqx.field(converter=as_f64)
    num_rows: ClassVar[int] = 1
    positive: ClassVar[tuple[str, ...]] = ("length",)

    def __check_init__(self):
        self.check_point_pair(self.i, self.j, self.s_i, self.s_j)
        self.check_scalar(self.length, "length")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        d = point(q, self.j, self.s_j) - point(q, self.i, self.s_i)
        return jnp.reshape(dot2(d, d) - self.length**2, (1,))
