"""Revolute (hinge) joint."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from ..._custom_types import Coordinates, PairRowVector, Scalar
from ..geometry import Body, as_f64
from ._base import AbstractSpatialHolonomicPair
from .basic import dot1, joint_frames
from .vectors import Vector3, axis_frame


class Revolute(AbstractSpatialHolonomicPair):
    """Points s_i and s_j coincide and the axes stay aligned (5 rows, 1 dof left).

    Phi = [d_ij; dot-1(f_i, h_j); dot-1(g_i, h_j)] = 0 (Haug, "Computer-Aided Kinematics and
    Dynamics of Mechanical Systems", the revolute joint), with h_j = axis_j / |axis_j|
    and f_i, g_i the unit vectors perpendicular to axis_i of `vectors.axis_frame`.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `s_i`: a point of the axis on body i, in body i's frame (m).
    - `s_j`: the same point on body j, in body j's frame (m).
    - `axis_i`: the hinge axis in body i's frame (non-zero; normalised).
    - `axis_j`: the hinge axis in body j's frame (non-zero; normalised).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector3 = eqx.field(converter=as_f64)
    s_j: Vector3 = eqx.field(converter=as_f64)
    axis_i: Vector3 = eqx.field(converter=as_f64)
    axis_j: Vector3 = eqx.field(converter=as_f64)
    num_rows: ClassVar[int] = 5
    nonzero: ClassVar[tuple[str, ...]] = ("axis_i", "axis_j")

    def __check_init__(self):
        self.check_point_pair3(self.i, self.j, self.s_i, self.s_j)
        self.check_axis(self.axis_i, "axis_i")
        self.check_axis(self.axis_j, "axis_j")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        f_i, g_i, _ = axis_frame(self.axis_i)
        _, _, h_j = axis_frame(self.axis_j)
        d, (f, g), (h,) = joint_frames(q, self.i, self.s_i, self.j, self.s_j, (f_i, g_i), (h_j,))
        return jnp.concatenate([d, jnp.stack([dot1(f, h), dot1(g, h)])])
