"""Rotation driver about a revolute's axis."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import ArrayLike, Real

from ..._custom_types import Coordinates, PairRowVector, Scalar
from .._base import drive_field
from ..drive import AbstractDrive
from ..geometry import Body, as_f64
from ._base import (
    AbstractSpatialHolonomicPair,
    as_optional_f64,
    check_reference_field,
    require_reference,
    with_reference,
)
from .angle import check_zero_angle, cos_sin, zero_angle_vectors
from .vectors import Matrix3, Vector3


class RevoluteDriver(AbstractSpatialHolonomicPair):
    """The rotation theta of body j relative to body i about a revolute's axis is f(t) (1 row;
    use it beside the `Revolute` it drives).

    Phi = cos(f) (g_i . f_j) - sin(f) (f_i . f_j) = 0 (global components), f_i, g_i
    perpendicular to axis_i (`vectors.axis_frame`) and f_j the body-j vector that coincided
    with f_i at the build-time orientations (`angle.zero_angle_vectors`). With the axes aligned
    f_i . f_j = cos(theta), g_i . f_j = sin(theta), so Phi = sin(theta - f): smooth everywhere,
    with no atan2 branch (nothing jumps at theta = +-pi), and dPhi/dtheta = 1 at the driven
    angle, so the multiplier is the driving torque. Its other root theta = f + pi is a
    separate branch (dPhi/dtheta = -1 there): a continuation from an assembled state stays on
    theta = f mod 2 pi (the spatial note, section 3, the sine form with dot products).
    theta is positive about +axis_i and zero at the build-time orientations (`reference`,
    bound by `Mechanism.add` through `bind_reference`).

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `axis_i`: the revolute's axis in body i's frame (non-zero; normalised).
    - `axis_j`: the revolute's axis in body j's frame (non-zero; normalised).
    - `f`: f(t), the prescribed angle (rad; a constant or a drive function of time t).
    - `reference`: R0 = A_i^T A_j at the zero angle (3 x 3; default None: bound by
      `bind_reference` from the build-time orientations).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    axis_i: Vector3 = eqx.field(converter=as_f64)
    axis_j: Vector3 = eqx.field(converter=as_f64)
    f: AbstractDrive = eqx.field(converter=drive_field)
    reference: Matrix3 | None = eqx.field(converter=as_optional_f64, default=None)
    num_rows: ClassVar[int] = 1
    nonzero: ClassVar[tuple[str, ...]] = ("axis_i", "axis_j")

    def __check_init__(self):
        self.check_distinct(self.i, self.j)
        self.check_axis(self.axis_i, "axis_i")
        self.check_axis(self.axis_j, "axis_j")
        self.check_drive(self.f, "f")
        check_reference_field(self, self.reference)
        if self.reference is not None:
            check_zero_angle(self, self.axis_i, self.axis_j, self.reference)

    def bind_reference(
        self, A_i: Real[ArrayLike, "3 3"], A_j: Real[ArrayLike, "3 3"]
    ) -> "RevoluteDriver":
        """A copy with `reference` = A_i^T A_j (the bodies' rotation matrices at build time,
        identity for the ground): the zero of the driven angle."""
        return with_reference(self, A_i, A_j)

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        reference = require_reference(self, self.reference)
        vectors = zero_angle_vectors(self.axis_i, self.axis_j, reference)
        c, s = cos_sin(q, self.i, self.j, vectors)
        angle = self.f(t)
        return jnp.reshape(jnp.cos(angle) * s - jnp.sin(angle) * c, (1,))
