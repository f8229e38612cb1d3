"""A slider-crank: crank (ground pivot O), connecting rod, slider on the ground x axis.

Bodies are slender rods (J = m L^2 / 12) with centroidal frames; the slider is a block.
Pairs: revolutes O (ground-crank), A (crank-rod), B (rod-slider), translational P
(slider-ground); optionally a crank-angle driver.
"""

from collections.abc import Sequence

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Real

from .._model import builder_checks as _checks
from .._model.mechanism import Mechanism
from .._model.model import Model
from .._runtime import errors as _errors
from .._runtime.exceptions import JaxmbError
from ..elements import Gravity, RelativeAngleDriver, Revolute, Translational, drive
from ..elements.geometry import is_concrete


def configuration(
    theta: Real[ArrayLike, ""], r: Real[ArrayLike, ""], l: Real[ArrayLike, ""]
) -> tuple[tuple[Array, Array, Array], tuple[Array, Array, Array], tuple[Array, Array, Array]]:
    """Closed-form q for crank angle theta (slider on the +x side): crank tip A = r(cos, sin),
    slider at x_B = r cos theta + sqrt(l^2 - (r sin theta)^2)."""
    theta, r, l = (jnp.asarray(x, jnp.float64) for x in (theta, r, l))
    ax, ay = r * jnp.cos(theta), r * jnp.sin(theta)
    xb = ax + jnp.sqrt(l**2 - ay**2)
    beta = jnp.arctan2(-ay, xb - ax)
    z = 0.0 * theta
    return (
        (ax / 2, ay / 2, theta),
        ((ax + xb) / 2, ay / 2, beta),
        (xb, z, z),
    )


def build(
    r: Real[ArrayLike, ""] = 0.1,
    l: Real[ArrayLike, ""] = 0.3,
    *,
    m_crank: Real[ArrayLike, ""] = 1.0,
    m_rod: Real[ArrayLike, ""] = 2.0,
    m_slider: Real[ArrayLike, ""] = 0.5,
    theta0: Real[ArrayLike, ""] = 0.3,
    gravity: Real[ArrayLike, "2"] | Sequence[float] | None = (0.0, -9.81),
    omega: Real[ArrayLike, ""] | None = None,
) -> Model:
    """Build the slider-crank. With `omega`, the crank is driven at constant speed
    (dof = 0); otherwise it is free (dof = 1) and, without damping, conservative.

    **Arguments:**
    - `r`: the crank length (m).
    - `l`: the connecting rod length (m).
    - `m_crank`, `m_rod`: the masses of the crank and the rod (kg; slender rods).
    - `m_slider`: the slider's mass (kg; its moment of inertia is 1e-3 kg m^2).
    - `theta0`: the crank angle from +x at the start (rad).
    - `gravity`: (gx, gy) in m/s^2, or None for none.
    - `omega`: the crank's constant speed (rad/s; the motor "motor" turns it to
      theta0 + omega t), or None for a free crank.

    Every argument is traceable and checked (lengths and masses positive, the rod reaching
    the slider's axis at theta0; inside jit when the model is used).
    """
    B = "slider_crank.build"
    r, l = _checks.real(B, "r", r, "positive"), _checks.real(B, "l", l, "positive")
    m_crank, m_rod, m_slider = (
        _checks.real(B, k, x, "positive")
        for k, x in (("m_crank", m_crank), ("m_rod", m_rod), ("m_slider", m_slider))
    )
    theta0 = _checks.real(B, "theta0", theta0)
    omega = None if omega is None else _checks.real(B, "omega", omega)
    gravity = _checks.vector(B, "gravity", gravity)
    reach = l**2 - (r * jnp.sin(theta0)) ** 2  # the rod reaches the slider's axis
    if is_concrete(reach):
        if not reach >= 0.0:
            raise JaxmbError(
                f"{B}: the rod cannot reach the slider's axis at theta0: l = {float(l):g} is "
                f"shorter than the crank tip's height r sin(theta0) = "
                f"{float(r * jnp.sin(theta0)):g}"
            )
    else:
        message = f"{B}: the rod cannot reach the slider's axis at theta0 (traced value)"
        l = jnp.asarray(_errors.error_if(l, ~(reach >= 0.0), message))
    m = Mechanism()
    q_crank, q_rod, q_slider = configuration(theta0, r, l)
    crank = m.body("crank", mass=m_crank, inertia=m_crank * r**2 / 12, q=q_crank)
    rod = m.body("rod", mass=m_rod, inertia=m_rod * l**2 / 12, q=q_rod)
    slider = m.body("slider", mass=m_slider, inertia=1e-3, q=q_slider)
    m.add(Revolute("O", m.ground, crank, s_i=(0.0, 0.0), s_j=jnp.stack([-r / 2, 0.0 * r])))
    m.add(
        Revolute("A", crank, rod, s_i=jnp.stack([r / 2, 0.0 * r]), s_j=jnp.stack([-l / 2, 0.0 * l]))
    )
    m.add(Revolute("B", rod, slider, s_i=jnp.stack([l / 2, 0.0 * l]), s_j=(0.0, 0.0)))
    m.add(Translational("P", slider, m.ground, s_i=(0.0, 0.0), s_j=(0.0, 0.0), v=(0.0, 1.0)))
    if omega is not None:
        m.add(RelativeAngleDriver("motor", m.ground, crank, f=drive.Linear(omega, theta0)))
    if gravity is not None:
        m.add(Gravity(g=gravity))
    return m.build()
