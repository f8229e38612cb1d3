"""Distance (spherical-spherical link) constraint."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from ..._custom_types import Coordinates, PairRowVector, Scalar
from ..geometry import Body, as_f64
from ._base import AbstractSpatialHolonomicPair
from .basic import joint_frames
from .vectors import Vector3, dot


class Distance(AbstractSpatialHolonomicPair):
    """Points s_i and s_j stay `length` apart: a massless link with a ball joint at each end
    (1 row, 5 dof left).

    Phi = d_ij . d_ij - L^2 = 0 (Haug, "Computer-Aided Kinematics and Dynamics of Mechanical
    Systems", the distance constraint; as the planar `Distance`). The squared form is
    a polynomial in q, smooth everywhere (|d| - L has no derivative at d = 0) and needs no
    square root in any derivative; the force on body i is 2 lambda d_ij at P_i.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `s_i`: the link's end on body i, in body i's frame (m).
    - `s_j`: the link's end on body j, in body j's frame (m).
    - `length`: L, the distance kept between the two points (m, > 0).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector3 = eqx.field(converter=as_f64)
    s_j: Vector3 = eqx.field(converter=as_f64)
    length: Scalar = eqx.field(converter=as_f64)
    num_rows: ClassVar[int] = 1
    positive: ClassVar[tuple[str, ...]] = ("length",)

    def __check_init__(self):
        self.check_point_pair3(self.i, self.j, self.s_i, self.s_j)
        self.check_scalar(self.length, "length")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        d = joint_frames(q, self.i, self.s_i, self.j, self.s_j).d
        return jnp.reshape(dot(d, d) - self.length**2, (1,))
