"""Torsional spring-damper about a revolute's axis."""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import ArrayLike, Real

from ..._custom_types import Coordinates, Scalar
from ..geometry import Body, as_f64
from ..model_view import ModelView
from ._base import (
    AbstractSpatialForceElement,
    as_optional_f64,
    check_reference_field,
    require_reference,
    with_reference,
)
from .angle import check_zero_angle, cos_sin, zero_angle_vectors
from .vectors import Matrix3, Vector3


class RotationalSpringDamper(AbstractSpatialForceElement):
    """Torsion spring-damper on the angle theta of body j relative to body i about a
    revolute's axis: the torque tau = k (theta - theta0) + c dtheta/dt turns body j back
    (-tau about the axis on j, +tau on i).

    theta0 is taken out before the angle is read: delta = atan2(s', c') with
    (c', s') = (cos theta, sin theta) turned by -theta0, the cos and sin of theta being the
    dot products of `angle.cos_sin` (theta is zero at the build-time orientations, positive
    about +axis_i). So delta = theta - theta0 in (-pi, pi], and the only jump of the torque is
    at delta = +-pi, the spring's unstable extreme (half a turn away from the free angle).
    Q = -tau (d delta/dq)^T (q-space); its potential is k delta^2 / 2.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `axis_i`: the revolute's axis in body i's frame (non-zero; normalised).
    - `axis_j`: the revolute's axis in body j's frame (non-zero; normalised).
    - `stiffness`: k, the torsional stiffness (N m/rad, >= 0).
    - `damping`: c, the torsional damping coefficient (N m s/rad, >= 0).
    - `free_angle`: theta0, the angle at which the spring is relaxed (rad, default 0).
    - `reference`: R0 = A_i^T A_j at theta = 0 (3 x 3; default None: bound by
      `bind_reference` from the build-time orientations).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    axis_i: Vector3 = eqx.field(converter=as_f64)
    axis_j: Vector3 = eqx.field(converter=as_f64)
    stiffness: Scalar = eqx.field(converter=as_f64)
    damping: Scalar = eqx.field(converter=as_f64)
    free_angle: Scalar = eqx.field(converter=as_f64, default=0.0)
    reference: Matrix3 | None = eqx.field(converter=as_optional_f64, default=None)
    nonnegative: ClassVar[tuple[str, ...]] = ("stiffness", "damping")
    nonzero: ClassVar[tuple[str, ...]] = ("axis_i", "axis_j")

    local: ClassVar[bool] = True

    def __check_init__(self):
        self.check_distinct(self.i, self.j)
        self.check_axis(self.axis_i, "axis_i")
        self.check_axis(self.axis_j, "axis_j")
        self.check_scalar(self.stiffness, "stiffness")
        self.check_scalar(self.damping, "damping")
        self.check_scalar(self.free_angle, "free_angle")
        check_reference_field(self, self.reference)
        if self.reference is not None:
            check_zero_angle(self, self.axis_i, self.axis_j, self.reference)

    def bind_reference(
        self, A_i: Real[ArrayLike, "3 3"], A_j: Real[ArrayLike, "3 3"]
    ) -> "RotationalSpringDamper":
        """A copy with `reference` = A_i^T A_j (the bodies' rotation matrices at build time,
        identity for the ground): the zero of theta."""
        return with_reference(self, A_i, A_j)

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def deflection(self, q: Coordinates) -> Scalar:
        """delta = theta - theta0, in (-pi, pi]."""
        reference = require_reference(self, self.reference)
        c, s = cos_sin(q, self.i, self.j, zero_angle_vectors(self.axis_i, self.axis_j, reference))
        c0, s0 = jnp.cos(self.free_angle), jnp.sin(self.free_angle)
        return jnp.arctan2(s * c0 - c * s0, c * c0 + s * s0)

    def potential(self, q: Coordinates) -> Scalar:
        """V = k delta^2 / 2, the spring's elastic energy."""
        return 0.5 * self.stiffness * self.deflection(q) ** 2

    def generalized_force(
        self, model: ModelView, q: Coordinates, qd: Coordinates, t: Scalar
    ) -> Coordinates:
        delta, rate = jax.jvp(self.deflection, (q,), (qd,))
        tau = self.stiffness * delta + self.damping * rate
        return -tau * jax.grad(self.deflection)(q)
