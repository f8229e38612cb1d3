"""Universal (Hooke, Cardan) joint."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Real

from ..._custom_types import Coordinates, PairRowVector, Scalar
from ..geometry import Body, as_f64, is_concrete
from ._base import AbstractSpatialHolonomicPair
from .basic import dot1, joint_frames
from .vectors import Vector3, unit

PERPENDICULAR_TOL = 1e-6
"""Largest |cos| of the angle between the two axes at the build-time orientations."""


class Universal(AbstractSpatialHolonomicPair):
    """Points s_i and s_j coincide and axis_i stays perpendicular to axis_j (4 rows, 2 dof).

    Phi = [d_ij; dot-1(h_i, h_j)] = 0 (Haug, "Computer-Aided Kinematics and Dynamics of
    Mechanical Systems", the universal joint), h_i, h_j the unit axes. The axes must
    be perpendicular at the build-time orientations: `bind_reference` checks it (the model calls
    it when the joint is added) and returns the joint unchanged.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `s_i`: the cross's centre on body i, in body i's frame (m).
    - `s_j`: the cross's centre on body j, in body j's frame (m).
    - `axis_i`: the cross's arm fixed in body i, in body i's frame (non-zero; normalised).
    - `axis_j`: the cross's arm fixed in body j, in body j's frame (non-zero; normalised).
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

    def bind_reference(
        self, A_i: Real[ArrayLike, "3 3"], A_j: Real[ArrayLike, "3 3"]
    ) -> "Universal":
        """Check that the axes are perpendicular at the orientations A_i, A_j (rotation
        matrices, identity for the ground); returns the joint itself."""
        a_i = jnp.asarray(A_i, jnp.float64) @ unit(self.axis_i)
        a_j = jnp.asarray(A_j, jnp.float64) @ unit(self.axis_j)
        cosine = jnp.sum(a_i * a_j)
        if is_concrete(cosine) and not abs(float(np.asarray(cosine))) <= PERPENDICULAR_TOL:
            self.fail(
                f"axis_i and axis_j must be perpendicular at the build-time orientations; "
                f"the cosine of their angle is {float(np.asarray(cosine)):.3g}"
            )
        return self

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        d, (a,), (b,) = joint_frames(
            q, self.i, self.s_i, self.j, self.s_j, (unit(self.axis_i),), (unit(self.axis_j),)
        )
        return jnp.concatenate([d, dot1(a, b)[None]])
