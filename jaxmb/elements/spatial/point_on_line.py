"""Point-on-line constraint."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from ..._custom_types import Coordinates, PairRowVector, Scalar
from ..geometry import Body, as_f64
from ._base import AbstractSpatialHolonomicPair
from .basic import dot2, joint_frames
from .vectors import Vector3, axis_frame


class PointOnLine(AbstractSpatialHolonomicPair):
    """Point s_j of body j stays on the line of body i through s_i along axis_i (2 rows,
    4 dof left).

    Phi = [dot-2(f_i, d_ij); dot-2(g_i, d_ij)] = 0 (Haug, "Computer-Aided Kinematics and
    Dynamics of Mechanical Systems"), f_i, g_i perpendicular to axis_i
    (`vectors.axis_frame`).

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i, holding the line (a body handle, or the ground).
    - `j`: body j, holding the point (a body handle, or the ground).
    - `s_i`: a point of the line, in body i's frame (m).
    - `s_j`: the point kept on the line, in body j's frame (m).
    - `axis_i`: the line's direction in body i's frame (non-zero; normalised).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector3 = eqx.field(converter=as_f64)
    s_j: Vector3 = eqx.field(converter=as_f64)
    axis_i: Vector3 = eqx.field(converter=as_f64)
    num_rows: ClassVar[int] = 2
    nonzero: ClassVar[tuple[str, ...]] = ("axis_i",)

    def __check_init__(self):
        self.check_point_pair3(self.i, self.j, self.s_i, self.s_j)
        self.check_axis(self.axis_i, "axis_i")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        f_i, g_i, _ = axis_frame(self.axis_i)
        d, (f, g), _ = joint_frames(q, self.i, self.s_i, self.j, self.s_j, (f_i, g_i))
        return jnp.stack([dot2(f, d), dot2(g, d)])
