"""Translation driver along a prismatic's axis."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from ..._custom_types import Coordinates, PairRowVector, Scalar
from .._base import drive_field
from ..drive import AbstractDrive
from ..geometry import Body, as_f64
from ._base import AbstractSpatialHolonomicPair
from .basic import dot2, joint_frames
from .vectors import Vector3, unit


class PrismaticDriver(AbstractSpatialHolonomicPair):
    """The distance from point s_i of body i to point s_j of body j along axis_i is f(t)
    (1 row; use it beside the `Prismatic` or `Cylindrical` it drives).

    Phi = dot-2(h_i, d_ij) - f(t) = (A_i h_i) . (r_j + A_j s_j - r_i - A_i s_i) - f(t) = 0,
    h_i = axis_i / |axis_i| (Haug, "Computer-Aided Kinematics and Dynamics of Mechanical
    Systems", driving constraints); the multiplier is the driving force.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i, the guide (a body handle, or the ground).
    - `j`: body j, the slider (a body handle, or the ground).
    - `s_i`: the reference point on body i, in body i's frame (m).
    - `s_j`: the driven point on body j, in body j's frame (m).
    - `axis_i`: the sliding axis in body i's frame (non-zero; normalised).
    - `f`: f(t), the prescribed distance (m; a constant or a drive function of time t).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector3 = eqx.field(converter=as_f64)
    s_j: Vector3 = eqx.field(converter=as_f64)
    axis_i: Vector3 = eqx.field(converter=as_f64)
    f: AbstractDrive = eqx.field(converter=drive_field)
    num_rows: ClassVar[int] = 1
    nonzero: ClassVar[tuple[str, ...]] = ("axis_i",)

    def __check_init__(self):
        self.check_point_pair3(self.i, self.j, self.s_i, self.s_j)
        self.check_axis(self.axis_i, "axis_i")
        self.check_drive(self.f, "f")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        d, (h,), _ = joint_frames(q, self.i, self.s_i, self.j, self.s_j, (unit(self.axis_i),))
        return jnp.reshape(dot2(h, d) - self.f(t), (1,))
