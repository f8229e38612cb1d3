"""Translational spring-damper between two body points."""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp

from ..._custom_types import Coordinates, Scalar
from ..geometry import Body, as_f64
from ..model_view import ModelView
from ._base import AbstractSpatialForceElement
from .basic import joint_frames
from .vectors import Vector3, dot


class SpringDamper(AbstractSpatialForceElement):
    """Linear spring-damper between point s_i of body i and point s_j of body j.

    The tension T = k (l - l0) + c dl/dt (positive when stretched) pulls the points together:
    Q = -T (dl/dq)^T with l = |d_ij| (q-space, a gradient through the points; the planar
    `SpringDamper` in 3D). Its potential is k (l - l0)^2 / 2.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `s_i`: the attachment point on body i, in body i's frame (m).
    - `s_j`: the attachment point on body j, in body j's frame (m).
    - `stiffness`: k, the spring stiffness (N/m, >= 0).
    - `damping`: c, the damping coefficient on the length rate (N s/m, >= 0).
    - `free_length`: l0, the spring's unstretched length (m, >= 0).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector3 = eqx.field(converter=as_f64)
    s_j: Vector3 = eqx.field(converter=as_f64)
    stiffness: Scalar = eqx.field(converter=as_f64)
    damping: Scalar = eqx.field(converter=as_f64)
    free_length: Scalar = eqx.field(converter=as_f64)
    nonnegative: ClassVar[tuple[str, ...]] = ("stiffness", "damping", "free_length")

    local: ClassVar[bool] = True

    def __check_init__(self):
        self.check_point_pair3(self.i, self.j, self.s_i, self.s_j)
        self.check_scalar(self.stiffness, "stiffness")
        self.check_scalar(self.damping, "damping")
        self.check_scalar(self.free_length, "free_length")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def length(self, q: Coordinates) -> Scalar:
        """l = |d_ij|, the distance between the two points."""
        d = joint_frames(q, self.i, self.s_i, self.j, self.s_j).d
        return jnp.sqrt(dot(d, d))

    def tension(self, q: Coordinates, qd: Coordinates) -> Scalar:
        """T = k (l - l0) + c dl/dt, with dl/dt along qd (the time derivative of q)."""
        l, ldot = jax.jvp(self.length, (q,), (qd,))
        return self.stiffness * (l - self.free_length) + self.damping * ldot

    def potential(self, q: Coordinates) -> Scalar:
        """V = k (l - l0)^2 / 2, the spring's elastic energy."""
        return 0.5 * self.stiffness * (self.length(q) - self.free_length) ** 2

    def generalized_force(
        self, model: ModelView, q: Coordinates, qd: Coordinates, t: Scalar
    ) -> Coordinates:
        return -self.tension(q, qd) * jax.grad(self.length)(q)
