"""The composed (double) pendulum of seed 004, section 5: two slender rods hanging from O1.

l1 = 0.5 m, l2 = 0.75 m, m1 = 0.25 kg, m2 = 1 kg, g = 9.81 m/s^2. Absolute angles are
measured from the downward vertical: phi_body = -pi/2 + angle. Driven by the relative angles
phi10(t) = (pi/12)(1 - cos(pi t / 6)) (motor M1, ground -> rod 1) and
phi21(t) = (pi/6)(1 - cos(pi t / 6)) (motor M2, rod 1 -> rod 2), for 0 <= t <= 6 s.

The paper's fixed frame has x pointing DOWN (along gravity: its force function is
U = m g u1^T r, eq. 5.5) and y to the right; jaxmb's global frame has X to the right and Y up,
so paper (x, y) = (-Y, X). `build_fictitious` adds the paper's fictitious mobility of the
support O1 (section 4 and eq. 5.8); `closed_form` evaluates the closed forms (5.7), (5.8).
"""

from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Real

from .._model import builder_checks as _checks
from .._model.mechanism import Mechanism
from .._model.model import Model
from ..elements import (
    Gravity,
    RelativeAngleDriver,
    Revolute,
    Translational,
    TranslationalDriver,
    drive,
)
from ..elements.geometry import Body

L1, L2, M1, M2, G = 0.5, 0.75, 0.25, 1.0, 9.81
AMP10, AMP21, OMEGA = np.pi / 12, np.pi / 6, np.pi / 6


def phi10(amplitude: float = np.pi / 12) -> drive.Harmonic:
    """phi10(t) = A (1 - cos(pi t / 6)) as a Harmonic drive."""
    return drive.Harmonic(-amplitude, jnp.pi / 6, 0.0, amplitude)


def build(
    l1: Real[ArrayLike, ""] = L1,
    l2: Real[ArrayLike, ""] = L2,
    m1: Real[ArrayLike, ""] = M1,
    m2: Real[ArrayLike, ""] = M2,
    g: Real[ArrayLike, ""] = G,
    *,
    driven: bool = True,
) -> Model:
    """Build the pendulum (at t = 0 both rods hang vertically).

    **Arguments:**
    - `l1`, `l2`: the lengths of rod 1 and rod 2 (m).
    - `m1`, `m2`: their masses (kg; slender rods).
    - `g`: the gravitational acceleration (m/s^2), along -y.
    - `driven`: adds the motors "M1" (ground - rod 1) and "M2" (rod 1 - rod 2) that impose
      phi10(t) and phi21(t) (module docstring; dof 0); without them the pendulum swings
      freely (dof 2).
    """
    B = "composed_pendulum.build"
    l1, l2, m1, m2, g = _rods(B, l1, l2, m1, m2, g)
    driven = _checks.flag(B, "driven", driven)
    m = Mechanism()
    _hang_rods(m, m.ground, l1, l2, m1, m2, g, driven=driven)
    return m.build()


def _rods(builder, l1, l2, m1, m2, g):
    """The rods' lengths and masses (positive) and g (finite), checked."""
    lengths = (_checks.real(builder, k, x, "positive") for k, x in (("l1", l1), ("l2", l2)))
    masses = (_checks.real(builder, k, x, "positive") for k, x in (("m1", m1), ("m2", m2)))
    return (*lengths, *masses, _checks.real(builder, "g", g))


def _hang_rods(m: Mechanism, support: Body, l1, l2, m1, m2, g, *, driven: bool) -> None:
    """Add to `m` the two rods hanging from `support` (the ground, or the fictitious support)
    at O1 (both vertical at t = 0): their bodies, the revolutes "O1" (support - rod 1) and "O2"
    (rod 1 - rod 2), when `driven` the motors "M1" and "M2" that impose phi10(t) and phi21(t),
    and gravity."""
    l1, l2, g = (jnp.asarray(x, jnp.float64) for x in (l1, l2, g))
    down = -jnp.pi / 2
    rod1 = m.body("rod1", mass=m1, inertia=m1 * l1**2 / 12, q=jnp.stack([0.0, -l1 / 2, down]))
    rod2 = m.body("rod2", mass=m2, inertia=m2 * l2**2 / 12, q=jnp.stack([0.0, -l1 - l2 / 2, down]))
    m.add(Revolute("O1", support, rod1, s_i=(0.0, 0.0), s_j=(-l1 / 2, 0.0)))
    m.add(Revolute("O2", rod1, rod2, s_i=(l1 / 2, 0.0), s_j=(-l2 / 2, 0.0)))
    if driven:
        m.add(RelativeAngleDriver("M1", support, rod1, f=phi10(jnp.pi / 12), offset=down))
        m.add(RelativeAngleDriver("M2", rod1, rod2, f=phi10(jnp.pi / 6)))
    m.add(Gravity(g=(0.0, -g)))


def build_fictitious(
    l1: Real[ArrayLike, ""] = L1,
    l2: Real[ArrayLike, ""] = L2,
    m1: Real[ArrayLike, ""] = M1,
    m2: Real[ArrayLike, ""] = M2,
    g: Real[ArrayLike, ""] = G,
    *,
    direction: Real[ArrayLike, "2"] | Sequence[float] = (0.0, -1.0),
    support_mass: Real[ArrayLike, ""] = 1.0,
    support_inertia: Real[ArrayLike, ""] = 1.0,
) -> Model:
    """The driven pendulum with the fictitious mobility of seed 004, section 4: the support O1
    is a body "support" that may slide along the global unit vector `direction` (Translational
    pair "slide" with the ground), carries rod 1 through the Revolute "O1" and motor "M1", and is
    held at the origin by the TranslationalDriver "X" with the constant d = 0.

    **Arguments:**
    - `l1`, `l2`, `m1`, `m2`, `g`: as `build` (m, kg, m/s^2).
    - `direction`: the global direction along which the support may slide (normalized here).
    - `support_mass`: the support's mass (kg; positive).
    - `support_inertia`: its moment of inertia (kg m^2; positive).

    The paper's choice (eq. 5.8, "fictitious vertical displacement x") is its x axis, which points
    down: `direction=(0, -1)` (the default); `direction=(1, 0)` frees the horizontal instead.

    Sign of X's multiplier (derived from the residuals, not from the paper): X has
    Phi = (r_O1 - r_support - A_support s)^T u - d = -r_support^T u (u = `direction`), so the
    force it applies to the support is -C^T lambda = +lambda u; Newton on the (fixed) support
    along u, where "slide" acts only across u, gives

        lambda_X = u^T f_O1->rod1 - support_mass g^T u,

    i.e. the component along u of the force that joint O1 applies to rod 1 (the paper's
    R_{h+1} = f10^x of eq. 4.2 for u = down) less the support's own weight along u (zero for
    the horizontal direction). The support's mass must be positive in jaxmb; the paper's
    fictitious support is massless, hence the correction.
    """
    B = "composed_pendulum.build_fictitious"
    l1, l2, m1, m2, g = _rods(B, l1, l2, m1, m2, g)
    u = _checks.real(B, "direction", direction, "nonzero", (2,))
    support_mass = _checks.real(B, "support_mass", support_mass, "positive")
    support_inertia = _checks.real(B, "support_inertia", support_inertia, "positive")
    u = u / jnp.linalg.norm(u)
    v = jnp.stack([-u[1], u[0]])  # perpendicular to the sliding axis
    m = Mechanism()
    support = m.body("support", mass=support_mass, inertia=support_inertia, q=(0.0, 0.0, 0.0))
    m.add(Translational("slide", support, m.ground, s_i=(0.0, 0.0), s_j=(0.0, 0.0), v=v))
    m.add(
        TranslationalDriver(
            "X", support, m.ground, s_i=(0.0, 0.0), s_j=(0.0, 0.0), u=u, d=drive.Constant(0.0)
        )
    )
    _hang_rods(m, support, l1, l2, m1, m2, g, driven=True)
    return m.build()


def closed_form(
    ts: Real[ArrayLike, " T"] | Sequence[float],
    l1: float = L1,
    l2: float = L2,
    m1: float = M1,
    m2: float = M2,
    g: float = G,
    amp10: float = AMP10,
    amp21: float = AMP21,
    omega: float = OMEGA,
) -> dict[str, np.ndarray]:
    """Seed 004's closed forms in numpy, for the drive laws (5.11) phi = A (1 - cos(omega t)).

    Returns a dict of arrays over `ts`: the relative angles phi10, phi21 and their rates and
    accelerations; the motor torques M1 (on rod 1, by the ground) and M2 (on rod 2, by rod 1),
    eq. (5.7); the force of joint O1 on rod 1 in the paper's fixed frame, f10x (down, eq. 5.8)
    and f10y (horizontal, to the right); the force of joint O2 on rod 2, f21x (down) and f21y.

    (5.7) and (5.8) were re-derived by hand (Lagrange's equations with
    T = 1/2 (m1/3 + m2) l1^2 w1^2 + 1/6 m2 l2^2 w2^2 + 1/2 m2 l1 l2 w1 w2 cos phi21,
    V = -m1 g l1/2 cos phi1 - m2 g (l1 cos phi1 + l2/2 cos phi2), phi1 = phi10,
    phi2 = phi10 + phi21) and agree with the paper's text; the forces f10y, f21x, f21y (not
    printed in the paper) are Newton's law for the centres of mass: f10 = sum m_k (a_k - g),
    f21 = m2 (a_2 - g).
    """
    t = np.asarray(ts, float)
    c, s = np.cos(omega * t), np.sin(omega * t)
    p1, p1d, p1dd = amp10 * (1 - c), amp10 * omega * s, amp10 * omega**2 * c
    p21, p21d, p21dd = amp21 * (1 - c), amp21 * omega * s, amp21 * omega**2 * c
    p2, p2d, p2dd = p1 + p21, p1d + p21d, p1dd + p21dd
    h = 0.5 * m2 * l1 * l2
    M1_ = (
        (m1 / 3 + m2) * l1**2 * p1dd
        + m2 * l2**2 / 3 * p2dd
        + h * (2 * p1dd + p21dd) * np.cos(p21)
        - h * p21d * (2 * p1d + p21d) * np.sin(p21)
        + 0.5 * (m1 + 2 * m2) * g * l1 * np.sin(p1)
        + 0.5 * m2 * g * l2 * np.sin(p2)
    )
    M2_ = (
        m2 * l2**2 / 3 * p2dd
        + h * (p1dd * np.cos(p21) + p1d**2 * np.sin(p21))
        + 0.5 * m2 * g * l2 * np.sin(p2)
    )

    # second derivatives of (cos phi, sin phi): the paper-frame (down, right) unit vector
    def acc(p, pd, pdd):
        return (-(pdd * np.sin(p) + pd**2 * np.cos(p)), pdd * np.cos(p) - pd**2 * np.sin(p))

    e1x, e1y = acc(p1, p1d, p1dd)
    e2x, e2y = acc(p2, p2d, p2dd)
    a2x, a2y = l1 * e1x + 0.5 * l2 * e2x, l1 * e1y + 0.5 * l2 * e2y
    f10x = -(m1 + m2) * g + 0.5 * (m1 + 2 * m2) * l1 * e1x + 0.5 * m2 * l2 * e2x  # (5.8)
    f10y = 0.5 * (m1 + 2 * m2) * l1 * e1y + 0.5 * m2 * l2 * e2y
    return dict(
        t=t,
        phi10=p1,
        phi10_d=p1d,
        phi10_dd=p1dd,
        phi21=p21,
        phi21_d=p21d,
        phi21_dd=p21dd,
        M1=M1_,
        M2=M2_,
        f10x=f10x,
        f10y=f10y,
        f21x=m2 * a2x - m2 * g,
        f21y=m2 * a2y,
    )
