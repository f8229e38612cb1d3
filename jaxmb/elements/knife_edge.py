"""Knife edge: the nonholonomic (Pfaffian) pair of a rolling wheel."""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp

from .._custom_types import Coordinates, PairRowVector, Scalar, Vector2
from ._base import AbstractNonholonomicPair
from .geometry import Body, as_f64, direction, dot2, point


class KnifeEdge(AbstractNonholonomicPair):
    """The velocity of body point s has no component along the body-frame unit normal n.

    Psi qd = (A n)^T v_K = (A n)^T (rd + phid Omega A s) = 0 (seed 001, eq. 30). n is normalised,
    so the multiplier is the lateral contact force.

    **Arguments:**
    - `name`: the element's name.
    - `body`: the body that carries the knife edge (wheel).
    - `s`: the contact point, in the body's frame (m).
    - `n`: the edge's lateral normal, in the body's frame (any non-zero length; normalised).
    """

    name: str = eqx.field(static=True)
    body: Body = eqx.field(static=True)
    s: Vector2 = eqx.field(converter=as_f64)
    n: Vector2 = eqx.field(converter=as_f64)
    num_rows: ClassVar[int] = 1
    nonzero: ClassVar[tuple[str, ...]] = ("n",)

    def __check_init__(self):
        self.check_body(self.body, "body")
        if self.body.is_ground:
            self.fail("a knife edge must be attached to a moving body, not the ground")
        self.check_vector(self.s, "s")
        self.check_vector(self.n, "n")

    def bodies(self) -> tuple[Body, ...]:
        return (self.body,)

    def velocity_residual(self, q: Coordinates, qd: Coordinates, t: Scalar) -> PairRowVector:
        v_K = jax.jvp(lambda q_: point(q_, self.body, self.s), (q,), (qd,))[1]
        normal = direction(q, self.body, self.n / jnp.linalg.norm(self.n))
        return jnp.reshape(dot2(normal, v_K), (1,))
