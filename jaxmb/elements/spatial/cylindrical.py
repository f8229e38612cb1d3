"""Cylindrical joint."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from ..._custom_types import Coordinates, PairRowVector, Scalar
from ..geometry import Body, as_f64
from ._base import AbstractSpatialHolonomicPair
from .basic import dot1, dot2, separation
from .vectors import Vector3, axis_frame


class Cylindrical(AbstractSpatialHolonomicPair):
    """The axes stay collinear through the points s_i and s_j (4 rows, 2 dof left: a slide
    along and a turn about the axis).

    Phi = [dot-1(f_i, h_j); dot-1(g_i, h_j); dot-2(f_i, d_ij); dot-2(g_i, d_ij)] = 0 (Haug,
    "Computer-Aided Kinematics and Dynamics of Mechanical Systems", sec. 9.3, the cylindrical
    joint), f_i, g_i perpendicular to axis_i (`vectors.axis_frame`), h_j = axis_j / |axis_j|.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `s_i`: a point of the axis on body i, in body i's frame (m).
    - `s_j`: a point of the axis on body j, in body j's frame (m).
    - `axis_i`: the axis in body i's frame (non-zero; normalised).
    - `axis_j`: the axis in body j's frame (non-zero; normalised).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector3 = eqx.field(converter=as_f64)
    s_j: Vector3 = eqx.field(converter=as_f64)
    axis_i: Vector3 = eqx.field(converter=as_f64)
    axis_j: Vector3 = eqx.field(converter=as_f64)
    num_rows: ClassVar[int] = 4
    nonzero: ClassVar[tuple[str, ...]] = ("axis_i", "axis_j")

    def __check_init__(self):
        self.check_point_pair3(self.i, self.j, self.s_i, self.s_j)
        self.check_axis(self.axis_i, "axis_i")
        self.check_axis(self.axis_j, "axis_j")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        return cylindrical_rows(q, self.i, self.s_i, self.axis_i, self.j, self.s_j, self.axis_j)


def cylindrical_rows(
    q: Coordinates, i: Body, s_i: Vector3, axis_i: Vector3, j: Body, s_j: Vector3, axis_j: Vector3
) -> PairRowVector:
    """The four cylindrical rows (shared with `Prismatic`)."""
    f_i, g_i, _ = axis_frame(axis_i)
    _, _, h_j = axis_frame(axis_j)
    d = separation(q, i, s_i, j, s_j)
    return jnp.stack(
        [
            dot1(q, i, f_i, j, h_j),
            dot1(q, i, g_i, j, h_j),
            dot2(q, i, f_i, d),
            dot2(q, i, g_i, d),
        ]
    )
