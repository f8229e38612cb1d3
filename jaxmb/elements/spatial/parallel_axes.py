"""Parallel-axes constraint."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from ..._custom_types import Coordinates, PairRowVector, Scalar
from ..geometry import Body, as_f64
from ._base import AbstractSpatialHolonomicPair
from .basic import dot1
from .geometry import transform
from .vectors import Vector3, axis_frame


class ParallelAxes(AbstractSpatialHolonomicPair):
    """axis_j of body j stays parallel to axis_i of body i (2 rows, 4 dof left).

    Phi = [dot-1(f_i, h_j); dot-1(g_i, h_j)] = 0 (Haug, "Computer-Aided Kinematics and Dynamics
    of Mechanical Systems", parallel-1), f_i, g_i perpendicular to axis_i
    (`vectors.axis_frame`), h_j = axis_j / |axis_j|. Antiparallel axes satisfy it too.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `axis_i`: the direction in body i's frame (non-zero; normalised).
    - `axis_j`: the direction in body j's frame (non-zero; normalised).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    axis_i: Vector3 = eqx.field(converter=as_f64)
    axis_j: Vector3 = eqx.field(converter=as_f64)
    num_rows: ClassVar[int] = 2
    nonzero: ClassVar[tuple[str, ...]] = ("axis_i", "axis_j")

    def __check_init__(self):
        self.check_distinct(self.i, self.j)
        self.check_axis(self.axis_i, "axis_i")
        self.check_axis(self.axis_j, "axis_j")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        f_i, g_i, _ = axis_frame(self.axis_i)
        _, _, h_j = axis_frame(self.axis_j)
        f, g = transform(q, self.i, f_i, g_i)
        (h,) = transform(q, self.j, h_j)
        return jnp.stack([dot1(f, h), dot1(g, h)])
