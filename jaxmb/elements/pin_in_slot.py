"""Pin-in-slot pair (planar parallel-2)."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from .._custom_types import Coordinates, PairRowVector, Scalar, Vector2
from ._base import AbstractHolonomicPair
from .geometry import Body, as_f64, cross2, direction, point


class PinInSlot(AbstractHolonomicPair):
    """Pin s_j of body j moves in the slot of body i through s_i along body-i vector a_i.

    Phi = a_i^T Omega^T d_ij = a_i x d_ij with d_ij = r_j^P - r_i^P (seed 003, "Pin-in-slot");
    the force on body i is Omega a_i lambda at the pin.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i, which carries the slot (a body handle, or the ground).
    - `j`: body j, which carries the pin (a body handle, or the ground).
    - `s_i`: a point on the slot's centre line, in body i's frame (m).
    - `s_j`: the pin's centre, in body j's frame (m).
    - `a_i`: the slot's direction, in body i's frame (non-zero; its length scales the
      multiplier).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector2 = eqx.field(converter=as_f64)
    s_j: Vector2 = eqx.field(converter=as_f64)
    a_i: Vector2 = eqx.field(converter=as_f64)
    num_rows: ClassVar[int] = 1
    nonzero: ClassVar[tuple[str, ...]] = ("a_i",)

    def __check_init__(self):
        self.check_point_pair(self.i, self.j, self.s_i, self.s_j)
        self.check_vector(self.a_i, "a_i")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        a_i = direction(q, self.i, self.a_i)
        d = point(q, self.j, self.s_j) - point(q, self.i, self.s_i)
        return jnp.reshape(cross2(a_i, d), (1,))
