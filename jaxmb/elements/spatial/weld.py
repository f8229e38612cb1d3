"""Weld (fixed) joint."""

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
from .vectors import Matrix3, Vector3


class Weld(AbstractSpatialHolonomicPair):
    """Bodies i and j rigidly joined: the relative pose keeps its build-time value (6 rows).

    Phi = [d_ij; dot-1(e_2, R0^T e_3); dot-1(e_3, R0^T e_1); dot-1(e_1, R0^T e_2)] = 0, e_k the
    axes of body i and R0 = A_i^T A_j at the build-time orientations (`reference`): R0^T e_k is
    the body-j vector that coincides with e_k there (Haug, "Computer-Aided Kinematics and
    Dynamics of Mechanical Systems": a spherical joint and three dot-1 rows). For a
    small relative rotation theta (body i frame) since then, the last rows are -theta.
    `Mechanism.add` binds R0 through `bind_reference`; an unbound weld refuses to be evaluated.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `s_i`: the weld point on body i, in body i's frame (m, default the origin).
    - `s_j`: the weld point on body j, in body j's frame (m, default the origin).
    - `reference`: R0 = A_i^T A_j, the relative orientation kept (3 x 3; default None: bound
      by `bind_reference` from the build-time orientations).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector3 = eqx.field(converter=as_f64, default=(0.0, 0.0, 0.0))
    s_j: Vector3 = eqx.field(converter=as_f64, default=(0.0, 0.0, 0.0))
    reference: Matrix3 | None = eqx.field(converter=as_optional_f64, default=None)
    num_rows: ClassVar[int] = 6

    def __check_init__(self):
        self.check_point_pair3(self.i, self.j, self.s_i, self.s_j)
        check_reference_field(self, self.reference)

    def bind_reference(self, A_i: Real[ArrayLike, "3 3"], A_j: Real[ArrayLike, "3 3"]) -> "Weld":
        """A copy with `reference` = A_i^T A_j (the bodies' rotation matrices at build time,
        identity for the ground)."""
        return with_reference(self, A_i, A_j)

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        reference = require_reference(self, self.reference)
        e = jnp.eye(3, dtype=q.dtype)
        d, a, b = joint_frames(
            q, self.i, self.s_i, self.j, self.s_j, (e[0], e[1], e[2]), tuple(reference)
        )
        turn = [dot1(a[m], b[n]) for m, n in ((1, 2), (2, 0), (0, 1))]
        return jnp.concatenate([d, jnp.stack(turn)])
