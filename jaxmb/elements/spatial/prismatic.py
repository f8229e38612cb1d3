"""Prismatic (translational) joint."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import ArrayLike, Real

from ..._custom_types import Coordinates, PairRowVector, Scalar
from ..geometry import Body, as_f64
from ._base import (
    AbstractSpatialHolonomicPair,
    as_optional_f64,
    check_reference_field,
    require_reference,
    with_reference,
)
from .basic import dot1, joint_frames
from .cylindrical import cylindrical_rows
from .vectors import Matrix3, Vector3, axis_frame


class Prismatic(AbstractSpatialHolonomicPair):
    """Body j slides along the axis of body i without turning (5 rows, 1 dof left).

    Phi = [cylindrical rows; dot-1(f_i, R0^T g_i)] = 0 (Haug, "Computer-Aided Kinematics and
    Dynamics of Mechanical Systems", the translational joint: the cylindrical joint
    and one dot-1 row that stops the twist). R0 = A_i^T A_j at the build-time orientations
    (`reference`), so R0^T g_i is the body-j vector that coincides with g_i there and the last
    row is -sin of the twist about the axis since then. `Mechanism.add` binds R0 through
    `bind_reference`; an unbound joint refuses to be evaluated.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i, the guide (a body handle, or the ground).
    - `j`: body j, the slider (a body handle, or the ground).
    - `s_i`: a point of the sliding axis on body i, in body i's frame (m).
    - `s_j`: a point of the sliding axis on body j, in body j's frame (m).
    - `axis_i`: the sliding axis in body i's frame (non-zero; normalised).
    - `axis_j`: the sliding axis in body j's frame (non-zero; normalised).
    - `reference`: R0 = A_i^T A_j, the relative orientation kept (3 x 3; default None: bound
      by `bind_reference` from the build-time orientations).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector3 = eqx.field(converter=as_f64)
    s_j: Vector3 = eqx.field(converter=as_f64)
    axis_i: Vector3 = eqx.field(converter=as_f64)
    axis_j: Vector3 = eqx.field(converter=as_f64)
    reference: Matrix3 | None = eqx.field(converter=as_optional_f64, default=None)
    num_rows: ClassVar[int] = 5
    nonzero: ClassVar[tuple[str, ...]] = ("axis_i", "axis_j")

    def __check_init__(self):
        self.check_point_pair3(self.i, self.j, self.s_i, self.s_j)
        self.check_axis(self.axis_i, "axis_i")
        self.check_axis(self.axis_j, "axis_j")
        check_reference_field(self, self.reference)

    def bind_reference(
        self, A_i: Real[ArrayLike, "3 3"], A_j: Real[ArrayLike, "3 3"]
    ) -> "Prismatic":
        """A copy with `reference` = A_i^T A_j (the bodies' rotation matrices at build time,
        identity for the ground)."""
        return with_reference(self, A_i, A_j)

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        reference = require_reference(self, self.reference)
        f_i, g_i, _ = axis_frame(self.axis_i)
        _, _, h_j = axis_frame(self.axis_j)
        carried = jnp.einsum("kj,k->j", reference, g_i)  # R0^T g_i
        frames = joint_frames(q, self.i, self.s_i, self.j, self.s_j, (f_i, g_i), (h_j, carried))
        twist = dot1(frames.on_i[0], frames.on_j[1])
        return jnp.concatenate([cylindrical_rows(frames), twist[None]])
