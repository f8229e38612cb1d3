"""The triple-crank parallelogram: a parallelogram linkage with a redundant third crank.

Cranks 1, 2, 3 of length L are pivoted on the ground at O1 = (0, 0), O2 = (d, 0) and
O3 = (d/2, 0), all at the angle theta from +x; their tips A1, A2, A3 hold a coupler of length d
at its ends and at its middle (its centre of mass). Pairs, in row order: revolutes "O1", "O2",
"O3" (ground - crank k), "A1", "A2", "A3" (crank k - coupler), then the optional motor
(RelativeAngleDriver ground - crank 1). Bodies: "crank1", "crank2", "crank3", "coupler"
(slender rods of masses `masses`).

The third crank is redundant (p = 1, hand derivation in tests/test_solvability.py): its one
self-stress is an axial force t in cranks 1 and 2 and -2t in crank 3, carried by every revolute,
so no revolute reaction is unique; the motor torque is. With the motor dof = 0 (rank 12 of 13
rows), without it dof = 1.
"""

from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np

from .._custom_types import Coordinates, ScalarLike, Vector2Like
from .._model import builder_checks as _checks
from .._model.mechanism import Mechanism
from .._model.model import Model
from .._runtime.exceptions import JaxmbError
from ..elements import Force, Gravity, RelativeAngleDriver, Revolute, drive
from ..elements.drive import AbstractDrive

PIVOTS = {"1": 0.0, "2": 1.0, "3": 0.5}
"""Ground pivot of each crank as a fraction of d."""


def configuration(theta: ScalarLike, L: ScalarLike = 0.2, d: ScalarLike = 0.4) -> Coordinates:
    """q of crank1, crank2, crank3, coupler with every crank at `theta` (traceable)."""
    theta, L, d = (jnp.asarray(x, jnp.float64) for x in (theta, L, d))
    u = jnp.stack([jnp.cos(theta), jnp.sin(theta)])
    z = 0.0 * theta
    cranks = [jnp.stack([f * d + L / 2 * u[0], L / 2 * u[1], theta]) for f in PIVOTS.values()]
    coupler = jnp.stack([d / 2 + L * u[0], L * u[1], z])
    return jnp.concatenate([*cranks, coupler])


def build(
    L: ScalarLike = 0.2,
    d: ScalarLike = 0.4,
    theta: ScalarLike = 0.7,
    *,
    motor: bool | AbstractDrive = True,
    masses: Sequence[ScalarLike] = (0.5, 0.5, 0.5, 1.0),
    gravity: Vector2Like | None = (0.0, -9.81),
    load: Vector2Like | None = None,
) -> Model:
    """Build the linkage at crank angle `theta` (every argument but the flags is traceable).

    **Arguments:**
    - `L`: the crank length (m).
    - `d`: the coupler length (m).
    - `theta`: the crank angle from +x (rad).
    - `motor`: True (hold crank 1 at `theta`), False (no motor), or a drive function of
      time t (s) giving crank 1's absolute angle (rad).
    - `masses`: of the three cranks and the coupler (kg; slender rods).
    - `gravity`: (gx, gy) in m/s^2, or None for none.
    - `load`: a constant global force (fx, fy) in N at the coupler's right end (the Force
      element "load"), or None.
    """
    B = "parallelogram.build"
    L, d = _checks.real(B, "L", L, "positive"), _checks.real(B, "d", d, "positive")
    theta = _checks.real(B, "theta", theta)
    masses = _checks.reals(B, "masses", masses, 4, "positive")
    gravity = _checks.vector(B, "gravity", gravity)
    load = _checks.vector(B, "load", load)
    if not isinstance(motor, (bool, np.bool_, AbstractDrive)):
        raise JaxmbError.about(
            B, f"motor must be True, False or a drive function (jaxmb.drive), got {motor!r}"
        )
    motor = bool(motor) if isinstance(motor, np.bool_) else motor
    m = Mechanism()
    q = configuration(theta, L, d).reshape(4, 3)
    lengths = (L, L, L, d)
    names = ("crank1", "crank2", "crank3", "coupler")
    bodies = {
        nm: m.body(nm, mass=mm, inertia=mm * ll**2 / 12, q=qq)
        for nm, mm, ll, qq in zip(names, masses, lengths, q)
    }
    z = 0.0 * L
    coupler = bodies["coupler"]
    for k, f in PIVOTS.items():
        crank = bodies[f"crank{k}"]
        m.add(
            Revolute(
                f"O{k}", m.ground, crank, s_i=jnp.stack([f * d, z]), s_j=jnp.stack([-L / 2, z])
            )
        )
    for k, f in PIVOTS.items():
        m.add(
            Revolute(
                f"A{k}",
                bodies[f"crank{k}"],
                coupler,
                s_i=jnp.stack([L / 2, z]),
                s_j=jnp.stack([(f - 0.5) * d, z]),
            )
        )
    if motor is not False:
        f = motor if isinstance(motor, AbstractDrive) else drive.Constant(theta)
        m.add(RelativeAngleDriver("motor", m.ground, bodies["crank1"], f=f))
    if gravity is not None:
        m.add(Gravity(g=gravity))
    if load is not None:
        m.add(Force("load", coupler, s=jnp.stack([d / 2, z]), f=jnp.asarray(load, jnp.float64)))
    return m.build()
