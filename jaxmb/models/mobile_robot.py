"""The mobile robot of seed 001 (Wojtyra & Fraczek 2013, section 4, Fig. 1, Tables 1-3).

Seven bodies: platform 1, wheel holders 2 and 3 (edges W1, W2), steering links 4 and 5,
steering slider 6 and trolley 7 (edge W5); edges W3 and W4 sit on the platform. Pairs in the
paper's row order: revolutes A-G (rows 0-13), translational H (14-15), the steering driver (16),
knife edges W1-W5 (17-21). So row 5 is eq. 6 (y of joint C), row 17 is W1 and row 20 is W4.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Real

from .._model import builder_checks as _checks
from .._model.mechanism import Mechanism
from .._model.model import Model
from ..elements import KnifeEdge, Revolute, Translational, TranslationalDriver, drive

if TYPE_CHECKING:
    from .._reaction_methods.compliance import Compliance

A_UNIT = 0.05
"""The paper's length unit a (m)."""

V0 = 0.1
"""Initial forward speed of every body (m/s), seed 001 eq. 39."""

T_END = 20.0
"""Duration of the simulated manoeuvre (s)."""

STIFFNESS = {
    "B": 2e7,
    "C": 2e7,
    "H": (1e8, 5e4),
    "W1": 500.0,
    "W2": 500.0,
    "W3": 500.0,
    "W4": 500.0,
}
"""Plausible joint stiffness for `mb.Compliance` (not in seed 001): the wheel holders' bearings B
and C 2e7 N/m, the slider H 1e8 N/m and 5e4 N m/rad; the knife edges W1-W4 are tyres of
cornering stiffness 50 N/rad rolling at V0: lateral damping 50 / 0.1 = 500 N s/m. Every other
pair: `DEFAULT_STIFFNESS` (steel joints)."""

DEFAULT_STIFFNESS = 1e8
"""N/m, N m/rad and N s/m of the pairs not in `STIFFNESS`."""


def geometry(a: Real[ArrayLike, ""] = A_UNIT) -> tuple[Array, Array, Array, Array]:
    """bx, by, cx, cy of Table 3: zeta = arctan(1/4), bx = a sin zeta, by = a cos zeta,
    cx = 4a - bx, cy = sqrt((5a)^2 - cx^2)."""
    a = jnp.asarray(a, jnp.float64)
    zeta = jnp.arctan(0.25)
    bx, by = a * jnp.sin(zeta), a * jnp.cos(zeta)
    cx = 4 * a - bx
    cy = jnp.sqrt((5 * a) ** 2 - cx**2)
    return bx, by, cx, cy


def steering_profile(
    amplitude: Real[ArrayLike, ""] = 0.02, t_end: Real[ArrayLike, ""] = T_END
) -> drive.SmoothSteps:
    """Steering offset delta(t) relative to the q0 slider distance (seed 001, Fig. 2).

    Zero (with zero rate, so eq. 39's initial velocity is consistent) at t = 0, a C2 ramp from
    0.5 s to 2.5 s to
    +amplitude (turn right), back to 0 (straight run), to -amplitude (turn left) and back to 0,
    so the robot ends moving parallel to x0. The amplitude is a differentiable parameter.
    """
    f = t_end / 20.0
    starts = jnp.array([0.5, 5.0, 11.0, 15.0]) * f
    ends = jnp.array([2.5, 7.0, 13.0, 17.0]) * f
    levels = jnp.array([1.0, 0.0, -1.0, 0.0])
    return drive.SmoothSteps(starts, ends, amplitude * levels)


def build(
    a: Real[ArrayLike, ""] = A_UNIT,
    *,
    masses: Sequence[Real[ArrayLike, ""]] = (10.0, 1.0, 1.0, 1.0, 1.0, 1.0, 5.0),
    inertias: Sequence[Real[ArrayLike, ""]] = (0.25, 0.005, 0.005, 0.005, 0.005, 0.005, 0.05),
    steering: drive.AbstractDrive | None = None,
    amplitude: Real[ArrayLike, ""] = 0.02,
    t_end: Real[ArrayLike, ""] = T_END,
) -> Model:
    """Build the robot. `a` scales every length (traceable); `steering` is a drive function of
    the offset delta(t) (default: `steering_profile(amplitude)`).

    **Arguments:**
    - `a`: the paper's length unit (m; `A_UNIT` by default), which scales every length.
    - `masses`: of the seven bodies, in the order platform, holder_W1, holder_W2, link_4,
      link_5, slider, trolley (kg).
    - `inertias`: their moments of inertia about the centres of mass, in the same order
      (kg m^2).
    - `steering`: the steering offset delta(t) (m): a drive function of time t (s), added to
      the slider distance 20 a of q0; None for `steering_profile(amplitude, t_end)`.
    - `amplitude`: the steering offset of the default manoeuvre (m; unused with `steering`).
    - `t_end`: the duration of the default manoeuvre (s; unused with `steering`).
    """
    B = "mobile_robot.build"
    a = _checks.real(B, "a", a, "positive")
    masses = _checks.reals(B, "masses", masses, 7, "positive")
    inertias = _checks.reals(B, "inertias", inertias, 7, "positive")
    steering = _checks.drive_or_none(B, "steering", steering)
    if steering is None:
        amplitude = _checks.real(B, "amplitude", amplitude)
        t_end = _checks.real(B, "t_end", t_end, "positive")
    bx, by, cx, cy = geometry(a)
    dx, dy = cx / 2, cy / 2 - by
    z = 0.0 * a
    m = Mechanism()
    q0 = [
        (20 * a, z, z),
        (24 * a, z, z),
        (16 * a, z, z),
        (20 * a + dx, dy, z),
        (20 * a - dx, dy, z),
        (20 * a, z, z),
        (5 * a, z, z),
    ]
    names = ["platform", "holder_W1", "holder_W2", "link_4", "link_5", "slider", "trolley"]
    b = [
        m.body(nm, mass=mm, inertia=jj, q=qq) for nm, mm, jj, qq in zip(names, masses, inertias, q0)
    ]
    p1, p2, p3, p4, p5, p6, p7 = b
    vec = jnp.array
    m.add(Revolute("A", p7, p1, s_i=vec([7 * a, z]), s_j=vec([-8 * a, z])))
    m.add(Revolute("B", p2, p1, s_i=vec([z, z]), s_j=vec([4 * a, z])))
    m.add(Revolute("C", p3, p1, s_i=vec([z, z]), s_j=vec([-4 * a, z])))
    m.add(Revolute("D", p4, p2, s_i=vec([cx / 2, -cy / 2]), s_j=vec([-bx, -by])))
    m.add(Revolute("E", p5, p3, s_i=vec([-cx / 2, -cy / 2]), s_j=vec([bx, -by])))
    m.add(Revolute("F", p6, p4, s_i=vec([z, cy - by]), s_j=vec([-cx / 2, cy / 2])))
    m.add(Revolute("G", p6, p5, s_i=vec([z, cy - by]), s_j=vec([cx / 2, cy / 2])))
    s_P, s_Q = vec([z, 10 * a]), vec([z, -10 * a])
    m.add(Translational("H", p6, p1, s_i=s_P, s_j=s_Q, v=vec([1.0, 0.0])))
    # u = (0, -1): d0 = (Q - P) . u = 20 a at q0, so the slider distance is 20 a + delta(t).
    if steering is None:
        steering = steering_profile(amplitude, t_end)
    d = drive.Offset(20 * a, steering)
    m.add(TranslationalDriver("driver", p6, p1, s_i=s_P, s_j=s_Q, u=vec([0.0, -1.0]), d=d))
    normal = vec([0.0, 1.0])
    m.add(KnifeEdge("W1", p2, s=vec([z, z]), n=normal))
    m.add(KnifeEdge("W2", p3, s=vec([z, z]), n=normal))
    m.add(KnifeEdge("W3", p1, s=vec([z, -4 * a]), n=normal))
    m.add(KnifeEdge("W4", p1, s=vec([z, 4 * a]), n=normal))
    m.add(KnifeEdge("W5", p7, s=vec([z, z]), n=normal))
    return m.build()


def initial_velocity(model: Model, v: Real[ArrayLike, ""] = V0) -> Float[Array, " n"]:
    """qd0 of seed 001 eq. 39: every body moves along x0 at speed v."""
    return jnp.tile(jnp.array([v, 0.0, 0.0]), model.num_bodies)


def compliance() -> "Compliance":
    """`mb.Compliance(STIFFNESS, default=DEFAULT_STIFFNESS)`: the reaction method with the
    plausible stiffness (also the `compliance` entry of examples/models/mobile_robot.yaml)."""
    from .._reaction_methods.compliance import Compliance

    return Compliance(STIFFNESS, default=DEFAULT_STIFFNESS)
