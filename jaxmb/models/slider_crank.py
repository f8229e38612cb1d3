"""A slider-crank: crank (ground pivot O), connecting rod, slider on the ground x axis.

Bodies are slender rods (J = m L^2 / 12) with centroidal frames; the slider is a block.
Pairs: revolutes O (ground-crank), A (crank-rod), B (rod-slider), translational P
(slider-ground); optionally a crank-angle driver.
"""

import jax.numpy as jnp

from .._model.mechanism import Mechanism
from ..elements import Gravity, RelativeAngleDriver, Revolute, Translational, drive


def configuration(theta, r, l):
    """Closed-form q for crank angle theta (slider on the +x side): crank tip A = r(cos, sin),
    slider at x_B = r cos theta + sqrt(l^2 - (r sin theta)^2)."""
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
    r=0.1,
    l=0.3,
    *,
    m_crank=1.0,
    m_rod=2.0,
    m_slider=0.5,
    theta0=0.3,
    gravity=(0.0, -9.81),
    omega=None,
):
    """Build the slider-crank. With `omega`, the crank is driven at constant speed
    (dof = 0); otherwise it is free (dof = 1) and, without damping, conservative."""
    m = Mechanism()
    q_crank, q_rod, q_slider = configuration(jnp.asarray(theta0, jnp.float64), r, l)
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
