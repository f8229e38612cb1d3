"""Planar joint (plane on plane)."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from ..._custom_types import Coordinates, PairRowVector, Scalar
from ..geometry import Body, as_f64
from ._base import AbstractSpatialHolonomicPair
from .basic import dot1, dot2, joint_frames
from .vectors import Vector3, axis_frame


class Planar(AbstractSpatialHolonomicPair):
    """A plane of body j slides on a plane of body i: the normals stay parallel and s_j stays
    in body i's plane (3 rows, 3 dof left: two slides and a turn about the normal).

    Phi = [dot-1(f_i, h_j); dot-1(g_i, h_j); dot-2(h_i, d_ij)] = 0 (Haug, "Computer-Aided
    Kinematics and Dynamics of Mechanical Systems"), (f_i, g_i, h_i) the frame of
    axis_i (`vectors.axis_frame`), h_j = axis_j / |axis_j|.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `s_i`: a point of body i's plane, in body i's frame (m).
    - `s_j`: a point of body j's plane, in body j's frame (m).
    - `axis_i`: the normal of body i's plane, in body i's frame (non-zero; normalised).
    - `axis_j`: the normal of body j's plane, in body j's frame (non-zero; normalised).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector3 = eqx.field(converter=as_f64)
    s_j: Vector3 = eqx.field(converter=as_f64)
    axis_i: Vector3 = eqx.field(converter=as_f64)
    axis_j: Vector3 = eqx.field(converter=as_f64)
    num_rows: ClassVar[int] = 3
    nonzero: ClassVar[tuple[str, ...]] = ("axis_i", "axis_j")

    def __check_init__(self):
        self.check_point_pair3(self.i, self.j, self.s_i, self.s_j)
        self.check_axis(self.axis_i, "axis_i")
        self.check_axis(self.axis_j, "axis_j")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        f_i, g_i, h_i = axis_frame(self.axis_i)
        _, _, h_j = axis_frame(self.axis_j)
        d, (f, g, h), (n,) = joint_frames(
            q, self.i, self.s_i, self.j, self.s_j, (f_i, g_i, h_i), (h_j,)
        )
        return jnp.stack([dot1(f, n), dot1(g, n), dot2(h, d)])
