"""Spherical (ball) joint."""

from typing import ClassVar

import equinox as eqx

from ..._custom_types import Coordinates, PairRowVector, Scalar
from ..geometry import Body, as_f64
from ._base import AbstractSpatialHolonomicPair
from .basic import joint_frames
from .vectors import Vector3


class Spherical(AbstractSpatialHolonomicPair):
    """Point s_i of body i coincides with point s_j of body j (3 rows, 3 dof left).

    Phi = d_ij = r_j + A_j s_j - r_i - A_i s_i = 0 (Haug, "Computer-Aided Kinematics and
    Dynamics of Mechanical Systems", the spherical joint). The multipliers are the
    force on body i at the joint, global (the force on body j is -lambda).

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `s_i`: the joint's centre on body i, in body i's frame (m; global for the ground).
    - `s_j`: the joint's centre on body j, in body j's frame (m; global for the ground).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector3 = eqx.field(converter=as_f64)
    s_j: Vector3 = eqx.field(converter=as_f64)
    num_rows: ClassVar[int] = 3

    def __check_init__(self):
        self.check_point_pair3(self.i, self.j, self.s_i, self.s_j)

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        return joint_frames(q, self.i, self.s_i, self.j, self.s_j).d
