"""Point-on-plane constraint."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from ..._custom_types import Coordinates, PairRowVector, Scalar
from ..geometry import Body, as_f64
from ._base import AbstractSpatialHolonomicPair
from .basic import dot2, joint_frames
from .vectors import Vector3, unit


class PointOnPlane(AbstractSpatialHolonomicPair):
    """Point s_j of body j stays in the plane of body i through s_i with normal `normal_i`
    (1 row, 5 dof left).

    Phi = dot-2(h_i, d_ij) = 0, h_i = normal_i / |normal_i| (Haug, "Computer-Aided Kinematics
    and Dynamics of Mechanical Systems"); the multiplier is the normal force.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i, holding the plane (a body handle, or the ground).
    - `j`: body j, holding the point (a body handle, or the ground).
    - `s_i`: a point of the plane, in body i's frame (m).
    - `s_j`: the point kept in the plane, in body j's frame (m).
    - `normal_i`: the plane's normal in body i's frame (non-zero; normalised).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector3 = eqx.field(converter=as_f64)
    s_j: Vector3 = eqx.field(converter=as_f64)
    normal_i: Vector3 = eqx.field(converter=as_f64)
    num_rows: ClassVar[int] = 1
    nonzero: ClassVar[tuple[str, ...]] = ("normal_i",)

    def __check_init__(self):
        self.check_point_pair3(self.i, self.j, self.s_i, self.s_j)
        self.check_axis(self.normal_i, "normal_i")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        d, (h,), _ = joint_frames(q, self.i, self.s_i, self.j, self.s_j, (unit(self.normal_i),))
        return jnp.reshape(dot2(h, d), (1,))
