"""A conical pendulum: a thin rod (length L, mass m) on a spherical joint at one end, turning
about the vertical at the steady rate that keeps it at the angle theta from the vertical.

For a body of transverse moment J_t about its centre (at a = L / 2 from the pivot) and axial
moment J_a, the steady precession about the vertical satisfies (Euler's equations about the
pivot) Omega^2 (J_t + m a^2 - J_a) sin(theta) cos(theta) = m g a sin(theta), so

    Omega^2 = m g a / ((J_t + m a^2 - J_a) cos theta)   (= 3 g / (2 L cos theta) for J_a = 0),

and the pivot holds m g vertically and m Omega^2 a sin(theta) towards the axis. L = 1 m,
m = 1 kg, theta = 30 degrees, g = 9.81: Omega = 4.122064825 rad/s, 4.247854606 N.
"""

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ..._custom_types import Scalar, ScalarLike
from ..._model.mechanism import Mechanism
from ..._model.model import Model
from ...elements import Gravity, spatial as sp

AXIAL = 1e-9
"""J_a (kg m^2) of the thin rod: small and positive (a mass matrix needs it), far below J_t."""


def steady_rate(
    L: ScalarLike = 1.0,
    m: ScalarLike = 1.0,
    theta: ScalarLike = np.pi / 6,
    g: ScalarLike = 9.81,
    axial: ScalarLike = AXIAL,
) -> Scalar:
    """Omega of the module docstring (traceable in every argument)."""
    a, J_t = L / 2, m * L**2 / 12
    return jnp.sqrt(m * g * a / ((J_t + m * a * a - axial) * jnp.cos(theta)))


def _frame(theta):
    """Body x along the rod (pivot -> tip, down and out), y horizontal, z = x cross y."""
    c, s = jnp.cos(theta), jnp.sin(theta)
    axis = jnp.stack([s, 0.0 * s, -c])
    y = jnp.stack([0.0 * s, 1.0 + 0.0 * s, 0.0 * s])
    return jnp.stack([axis, y, jnp.cross(axis, y)], axis=1)


def build(
    L: ScalarLike = 1.0, m: ScalarLike = 1.0, theta: ScalarLike = np.pi / 6, g: ScalarLike = 9.81
) -> Model:
    """The rod at angle theta in the x-z plane, pivot at the origin (body x along the rod)."""
    L, m, g = (jnp.asarray(x, jnp.float64) for x in (L, m, g))
    R = _frame(theta)
    mech = Mechanism(dim=3)
    J = m * L**2 / 12
    rod = mech.body("rod", m, (AXIAL, J, J), r=R[:, 0] * L / 2, rotation=R)
    zero = 0.0 * L
    mech.add(
        sp.Spherical("pivot", mech.ground, rod, (0.0, 0.0, 0.0), jnp.stack([-L / 2, zero, zero]))
    )
    mech.add(Gravity(g=jnp.stack([zero, zero, -g])))
    return mech.build()


def initial_velocity(
    L: ScalarLike = 1.0, m: ScalarLike = 1.0, theta: ScalarLike = np.pi / 6, g: ScalarLike = 9.81
) -> Float[Array, " 6"]:
    """The steady motion: angular velocity Omega about the global z axis."""
    R = _frame(theta)
    rate = steady_rate(L, m, theta, g)
    w = jnp.stack([0.0 * rate, 0.0 * rate, rate])
    return jnp.concatenate([jnp.cross(w, R[:, 0] * L / 2), R.T @ w])
