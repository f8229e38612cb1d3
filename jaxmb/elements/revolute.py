"""Revolute pair."""

from typing import ClassVar

import equinox as eqx

from .._custom_types import Coordinates, PairRowVector, Scalar, Vector2
from ._base import AbstractHolonomicPair
from .geometry import Body, as_f64, point


class Revolute(AbstractHolonomicPair):
    """Point s_i of body i coincides with point s_j of body j.

    Phi = r_i + A_i s_i - r_j - A_j s_j = 0 (seed 001, eq. 40). The multipliers are the force
    on body j at the joint (the force on body i is -lambda).

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `s_i`: the joint's point on body i, in body i's frame (m).
    - `s_j`: the joint's point on body j, in body j's frame (m).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector2 = eqx.field(converter=as_f64)
    s_j: Vector2 = eqx.field(converter=as_f64)
    num_rows: ClassVar[int] = 2

    def __check_init__(self):
        self.check_point_pair(self.i, self.j, self.s_i, self.s_j)

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        return point(q, self.i, self.s_i) - point(q, self.j, self.s_j)
