"""The composed (double) pendulum of seed 004, section 5: two slender rods hanging from O1.

l1 = 0.5 m, l2 = 0.75 m, m1 = 0.25 kg, m2 = 1 kg, g = 9.81 m/s^2. Absolute angles are
measured from the downward vertical: phi_body = -pi/2 + angle. Driven by the relative angles
phi10(t) = (pi/12)(1 - cos(pi t / 6)) (motor M1, ground -> rod 1) and
phi21(t) = (pi/6)(1 - cos(pi t / 6)) (motor M2, rod 1 -> rod 2), for 0 <= t <= 6 s.
"""

import jax.numpy as jnp

from .. import drive
from .._mechanism import Mechanism
from ..elements import Gravity, RelativeAngleDriver, Revolute

L1, L2, M1, M2, G = 0.5, 0.75, 0.25, 1.0, 9.81


def phi10(amplitude=jnp.pi / 12):
    """phi10(t) = A (1 - cos(pi t / 6)) as a Harmonic drive."""
    return drive.Harmonic(-amplitude, jnp.pi / 6, 0.0, amplitude)


def build(l1=L1, l2=L2, m1=M1, m2=M2, g=G, *, driven=True):
    """Build the pendulum (at t = 0 both rods hang vertically)."""
    m = Mechanism()
    down = -jnp.pi / 2
    rod1 = m.body("rod1", mass=m1, inertia=m1 * l1**2 / 12, q=(0.0, -l1 / 2, down))
    rod2 = m.body("rod2", mass=m2, inertia=m2 * l2**2 / 12, q=(0.0, -l1 - l2 / 2, down))
    m.add(Revolute("O1", m.ground, rod1, s_i=(0.0, 0.0), s_j=(-l1 / 2, 0.0)))
    m.add(Revolute("O2", rod1, rod2, s_i=(l1 / 2, 0.0), s_j=(-l2 / 2, 0.0)))
    if driven:
        m.add(RelativeAngleDriver("M1", m.ground, rod1, f=phi10(jnp.pi / 12), offset=down))
        m.add(RelativeAngleDriver("M2", rod1, rod2, f=phi10(jnp.pi / 6)))
    m.add(Gravity((0.0, -g)))
    return m.build()
