"""Parallel-vectors pair (planar parallel-1)."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from .._custom_types import Coordinates, PairRowVector, Scalar, Vector2
from ._base import AbstractHolonomicPair
from .geometry import Body, as_f64, cross2, direction


class Parallel(AbstractHolonomicPair):
    """Body-i vector a_i stays parallel to body-j vector a_j.

    Phi = a_i^T Omega^T a_j = a_i x a_j (global components; seed 003, "Parallel vectors");
    the torque on body i is |a_i| |a_j| lambda.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `a_i`: the vector fixed in body i, in body i's frame (non-zero; its length scales the
      multiplier).
    - `a_j`: the vector fixed in body j, in body j's frame (non-zero; its length scales the
      multiplier).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    a_i: Vector2 = eqx.field(converter=as_f64)
    a_j: Vector2 = eqx.field(converter=as_f64)
    num_rows: ClassVar[int] = 1
    nonzero: ClassVar[tuple[str, ...]] = ("a_i", "a_j")

    def __check_init__(self):
        self.check_distinct(self.i, self.j)
        self.check_vector(self.a_i, "a_i")
        self.check_vector(self.a_j, "a_j")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        a_i = direction(q, self.i, self.a_i)
        a_j = direction(q, self.j, self.a_j)
        return jnp.reshape(cross2(a_i, a_j), (1,))
