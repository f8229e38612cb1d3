"""A crank-rocker four-bar: ground pivots O2 = (0, 0) and O4 = (d, 0), crank a, coupler b,
rocker c, optional coupler point (u, v) in the coupler frame. Links are slender rods."""

from collections.abc import Sequence

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Real

from .._model import builder_checks as _checks
from .._model.mechanism import Mechanism
from .._model.model import Model
from ..elements import Gravity, RelativeAngleDriver, Revolute, drive


def configuration(
    theta: Real[ArrayLike, ""],
    a: Real[ArrayLike, ""],
    b: Real[ArrayLike, ""],
    c: Real[ArrayLike, ""],
    d: Real[ArrayLike, ""],
    branch: float = 1.0,
) -> tuple[Float[Array, "3"], Float[Array, "3"], Float[Array, "3"]]:
    """Closed-form link poses for crank angle theta: A = a(cos, sin); B is the intersection of
    the circles |B - A| = b and |B - O4| = c on the side selected by `branch` (+1: open)."""
    A = jnp.stack([a * jnp.cos(theta), a * jnp.sin(theta)])
    O4 = jnp.stack([d, 0.0 * d])
    e = O4 - A
    L = jnp.sqrt(e @ e)
    x = (b**2 - c**2 + L**2) / (2 * L)
    y = jnp.sqrt(jnp.maximum(b**2 - x**2, 0.0))  # 0 when the links cannot close
    ex = e / L
    ey = jnp.stack([-ex[1], ex[0]])
    B = A + x * ex + branch * y * ey
    phi3 = jnp.arctan2(B[1] - A[1], B[0] - A[0])
    phi4 = jnp.arctan2(B[1] - O4[1], B[0] - O4[0])
    crank = jnp.stack([A[0] / 2, A[1] / 2, theta])
    coupler = jnp.stack([(A[0] + B[0]) / 2, (A[1] + B[1]) / 2, phi3])
    rocker = jnp.stack([(O4[0] + B[0]) / 2, (O4[1] + B[1]) / 2, phi4])
    return crank, coupler, rocker


def build(
    a: Real[ArrayLike, ""] = 0.1,
    b: Real[ArrayLike, ""] = 0.35,
    c: Real[ArrayLike, ""] = 0.3,
    d: Real[ArrayLike, ""] = 0.35,
    *,
    masses: Sequence[Real[ArrayLike, ""]] = (1.0, 2.0, 1.5),
    theta0: Real[ArrayLike, ""] = 0.5,
    omega: Real[ArrayLike, ""] | None = None,
    gravity: Real[ArrayLike, "2"] | Sequence[float] | None = (0.0, -9.81),
) -> Model:
    """Build the four-bar (Grashof crank-rocker with the defaults). With `omega` the crank is
    driven at constant speed (dof = 0).

    **Arguments:**
    - `a`, `b`, `c`: the lengths of the crank, the coupler and the rocker (m).
    - `d`: the distance between the ground pivots O2 = (0, 0) and O4 = (d, 0) (m).
    - `masses`: of the crank, the coupler and the rocker (kg; slender rods).
    - `theta0`: the crank angle from +x at the start (rad).
    - `omega`: the crank's constant speed (rad/s; the motor "motor" turns it to
      theta0 + omega t), or None for a free crank (dof = 1).
    - `gravity`: (gx, gy) in m/s^2, or None for none.

    Every argument is traceable and checked (lengths and masses positive; inside jit when the
    model is used). Links that cannot close at theta0 give a q0 off the constraints
    (`configuration`), which `mb.assemble` or the analyses' checks refuse.
    """
    B = "four_bar.build"
    a, b, c, d = (_checks.real(B, k, x, "positive") for k, x in zip("abcd", (a, b, c, d)))
    masses = _checks.reals(B, "masses", masses, 3, "positive")
    theta0 = _checks.real(B, "theta0", theta0)
    omega = None if omega is None else _checks.real(B, "omega", omega)
    gravity = _checks.vector(B, "gravity", gravity)
    m = Mechanism()
    lengths = (a, b, c)
    q_links = configuration(theta0, a, b, c, d)
    names = ("crank", "coupler", "rocker")
    crank, coupler, rocker = (
        m.body(nm, mass=mm, inertia=mm * ll**2 / 12, q=qq)
        for nm, mm, ll, qq in zip(names, masses, lengths, q_links)
    )
    z = 0.0 * a
    m.add(Revolute("O2", m.ground, crank, s_i=(0.0, 0.0), s_j=jnp.stack([-a / 2, z])))
    m.add(Revolute("A", crank, coupler, s_i=jnp.stack([a / 2, z]), s_j=jnp.stack([-b / 2, z])))
    m.add(Revolute("B", coupler, rocker, s_i=jnp.stack([b / 2, z]), s_j=jnp.stack([c / 2, z])))
    m.add(Revolute("O4", rocker, m.ground, s_i=jnp.stack([-c / 2, z]), s_j=jnp.stack([d, z])))
    if omega is not None:
        m.add(RelativeAngleDriver("motor", m.ground, crank, f=drive.Linear(omega, theta0)))
    if gravity is not None:
        m.add(Gravity(g=gravity))
    return m.build()


def _rotate(beta, v):
    c, s = jnp.cos(beta), jnp.sin(beta)
    return jnp.stack([c * v[0] - s * v[1], s * v[0] + c * v[1]])


def configuration_pivots(
    theta: Real[ArrayLike, ""],
    a: Real[ArrayLike, ""],
    b: Real[ArrayLike, ""],
    c: Real[ArrayLike, ""],
    o2: Real[ArrayLike, "2"] | Sequence[float],
    o4: Real[ArrayLike, "2"] | Sequence[float],
    branch: float = 1.0,
) -> tuple[Float[Array, "3"], ...]:
    """`configuration` with the ground pivots at arbitrary global points o2 and o4: the closed
    form in the frame with origin o2 and x axis along o4 - o2 (crank angle theta - beta,
    beta = angle of o4 - o2), rotated and translated back. theta is the absolute crank angle."""
    o2 = jnp.asarray(o2, jnp.float64)
    e = jnp.asarray(o4, jnp.float64) - o2
    d = jnp.sqrt(e @ e)
    beta = jnp.arctan2(e[1], e[0])
    local = configuration(theta - beta, a, b, c, d, branch)
    return tuple(jnp.concatenate([o2 + _rotate(beta, p[:2]), p[2:] + beta]) for p in local)


def build_pivots(
    a: Real[ArrayLike, ""],
    b: Real[ArrayLike, ""],
    c: Real[ArrayLike, ""],
    o2: Real[ArrayLike, "2"] | Sequence[float],
    o4: Real[ArrayLike, "2"] | Sequence[float],
    *,
    density: Real[ArrayLike, ""] | None = None,
    masses: Sequence[Real[ArrayLike, ""]] = (1.0, 2.0, 1.5),
    theta0: Real[ArrayLike, ""] = 0.5,
    omega: Real[ArrayLike, ""] | None = None,
    gravity: Real[ArrayLike, "2"] | Sequence[float] | None = (0.0, -9.81),
) -> Model:
    """Four-bar with ground pivots at the global points o2 (crank) and o4 (rocker), crank a,
    coupler b, rocker c (slender rods; with `density`, mass = density * length instead of
    `masses`). Same bodies and pairs as `build` ("O2", "A", "B", "O4", "motor" with `omega`:
    absolute crank angle theta0 + omega t). Traceable in every argument but the names.

    **Arguments:**
    - `a`, `b`, `c`: the lengths of the crank, the coupler and the rocker (m).
    - `o2`, `o4`: the ground pivots of the crank and the rocker, global (x, y) (m).
    - `density`: mass per length of the links (kg/m), or None to use `masses`.
    - `masses`: of the crank, the coupler and the rocker (kg; slender rods).
    - `theta0`: the absolute crank angle at the start (rad).
    - `omega`: the crank's constant speed (rad/s), or None for a free crank.
    - `gravity`: (gx, gy) in m/s^2, or None for none.
    """
    B = "four_bar.build_pivots"
    a, b, c = (_checks.real(B, k, x, "positive") for k, x in zip("abc", (a, b, c)))
    o2 = _checks.real(B, "o2", o2, "finite", (2,))
    o4 = _checks.real(B, "o4", o4, "finite", (2,))
    o4 = _checks.attached(o4, B, "o4 - o2", o4 - o2, "nonzero")  # the ground link's direction
    theta0 = _checks.real(B, "theta0", theta0)
    omega = None if omega is None else _checks.real(B, "omega", omega)
    gravity = _checks.vector(B, "gravity", gravity)
    lengths = (a, b, c)
    if density is not None:
        density = _checks.real(B, "density", density, "positive")
        masses = tuple(density * ll for ll in lengths)
    else:
        masses = _checks.reals(B, "masses", masses, 3, "positive")
    m = Mechanism()
    q_links = configuration_pivots(theta0, a, b, c, o2, o4)
    names = ("crank", "coupler", "rocker")
    crank, coupler, rocker = (
        m.body(nm, mass=mm, inertia=mm * ll**2 / 12, q=qq)
        for nm, mm, ll, qq in zip(names, masses, lengths, q_links)
    )
    z = 0.0 * a
    m.add(Revolute("O2", m.ground, crank, s_i=o2, s_j=jnp.stack([-a / 2, z])))
    m.add(Revolute("A", crank, coupler, s_i=jnp.stack([a / 2, z]), s_j=jnp.stack([-b / 2, z])))
    m.add(Revolute("B", coupler, rocker, s_i=jnp.stack([b / 2, z]), s_j=jnp.stack([c / 2, z])))
    m.add(Revolute("O4", rocker, m.ground, s_i=jnp.stack([-c / 2, z]), s_j=o4))
    if omega is not None:
        m.add(RelativeAngleDriver("motor", m.ground, crank, f=drive.Linear(omega, theta0)))
    if gravity is not None:
        m.add(Gravity(g=gravity))
    return m.build()


def coupler_point(
    q: Float[Array, "*batch 9"], u: Real[ArrayLike, ""], v: Real[ArrayLike, ""]
) -> Float[Array, "*batch 2"]:
    """Global position of the coupler point (u, v), given in the coupler frame (origin at the
    coupler's centre, the midpoint of AB; x axis from A to B). q: (..., 9) coordinates."""
    x, y, phi = q[..., 3], q[..., 4], q[..., 5]
    c, s = jnp.cos(phi), jnp.sin(phi)
    return jnp.stack([x + c * u - s * v, y + s * u + c * v], axis=-1)


def grashof_margins(
    a: Real[ArrayLike, ""], b: Real[ArrayLike, ""], c: Real[ArrayLike, ""], d: Real[ArrayLike, ""]
) -> Float[Array, "3"]:
    """Margins (b + c - d - a, d - a - b + c, d - a + b - c) of the crank-rocker closure
    condition |b - c| <= |O4 - A| <= b + c for every crank angle (|O4 - A| ranges over
    [d - a, d + a]): all positive iff the linkage assembles over the whole crank revolution
    (crank shorter than the ground link); a zero margin is a toggle (dead-centre) position."""
    a, b, c, d = (jnp.asarray(x, jnp.float64) for x in (a, b, c, d))
    return jnp.stack([b + c - d - a, d - a - b + c, d - a + b - c])
