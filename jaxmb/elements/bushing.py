"""Bushing: a compliant joint (linear spring-damper in x, y and the relative angle)."""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._custom_types import Coordinates, Scalar, Vector2
from ._base import AbstractForceElement
from .geometry import Body, as_f64, is_concrete, point, pose
from .model_view import ModelView


class Bushing(AbstractForceElement):
    """Point s_i of body i held to point s_j of body j by springs and dampers.

    Deflection e = [r_i + A_i s_i - r_j - A_j s_j; phi_j - phi_i - free_angle] (the rows of a
    Weld, seed 001 eq. 40; a Revolute's are the first two; x and y in the global frame), force
    lambda = K e + D de/dt with K = diag(stiffness), D = diag(damping), generalized force
    Q = -(de/dq)^T lambda. So lambda plays the part of the rigid pair's multipliers:
    (lambda_x, lambda_y) is the force on body j at the point (minus it on body i), -lambda_phi
    the torque on body j. Stiffness (k, k, 0) is a compliant revolute, (kx, ky, kphi) a
    compliant weld; as the stiffness grows, lambda tends to the `mb.Compliance` reactions of the
    rigid pair (tests/test_rigid_limit.py).

    **Arguments:**
    - `name`: the element's name.
    - `i`, `j`: the two bodies.
    - `s_i`, `s_j`: the points, in the frames of bodies i and j (m).
    - `stiffness`: (kx, ky, kphi) in N/m, N/m, N m/rad.
    - `damping`: (cx, cy, cphi) in N s/m, N s/m, N m s/rad.
    - `free_angle`: phi_j - phi_i at which the angular spring is relaxed (rad).
    """

    nonnegative: ClassVar[tuple[str, ...]] = ("stiffness", "damping")

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector2 = eqx.field(converter=as_f64)
    s_j: Vector2 = eqx.field(converter=as_f64)
    stiffness: Float[Array, "3"] = eqx.field(converter=as_f64)
    damping: Float[Array, "3"] = eqx.field(converter=as_f64, default=(0.0, 0.0, 0.0))
    free_angle: Scalar = eqx.field(converter=as_f64, default=0.0)

    local: ClassVar[bool] = True

    def __check_init__(self):
        self.check_point_pair(self.i, self.j, self.s_i, self.s_j)
        for label in ("stiffness", "damping"):
            self._check_rates(getattr(self, label), label)
        self.check_scalar(self.free_angle, "free_angle")

    def _check_rates(self, value, label):
        """A 3-vector (x, y, angle) of finite numbers (non-negative: `nonnegative`)."""
        if jnp.shape(value) != (3,):
            self.fail(f"{label} must be 3 numbers (x, y, angle), got shape {jnp.shape(value)}")
        if is_concrete(value) and not np.all(np.isfinite(np.asarray(value))):
            self.fail(f"{label} = {np.asarray(value).tolist()} is not finite")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def deflection(self, q: Coordinates) -> Float[Array, "3"]:
        """e(q): point offset (global x, y) and relative angle, as the rows of a Weld."""
        d = point(q, self.i, self.s_i) - point(q, self.j, self.s_j)
        angle = pose(q, self.j)[1] - pose(q, self.i)[1] - self.free_angle
        return jnp.concatenate([d, jnp.reshape(angle, (1,))])

    def force(self, q: Coordinates, qd: Coordinates) -> Float[Array, "3"]:
        """lambda = K e + D de/dt (3,): the rigid pair's multipliers' counterpart."""
        e, ed = jax.jvp(self.deflection, (q,), (qd,))
        return self.stiffness * e + self.damping * ed

    def generalized_force(
        self, model: ModelView, q: Coordinates, qd: Coordinates, t: Scalar
    ) -> Coordinates:
        _, vjp = jax.vjp(self.deflection, q)
        return -vjp(self.force(q, qd))[0]
