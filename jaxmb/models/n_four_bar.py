"""The N-four-bar mechanism, IFToMM benchmark A02: N parallelograms in a row.

N + 1 cranks of length L are pivoted on the ground at A_k = (k L, 0), k = 0..N; their tips B_k
are joined by N couplers of length L (coupler j from B_j to B_{j+1}). Every bar is a slender rod
(mass m, J = m L^2 / 12; the benchmark: L = 1 m, m = 1 kg, gravity 9.81 m/s^2 along -y). All
cranks share the angle `angle`, measured from the horizontal (+x): the benchmark starts at
pi/2 (cranks vertical) with B_0 moving at 1 m/s along +x.

Bodies, in order: "crank0" .. "crankN", then "coupler0" .. "coupler{N-1}". Pairs, in order:
revolutes "A0" .. "AN" (ground - crank k), then for each coupler j the revolutes "B{j}c{j}"
(crank j - coupler j, the coupler's left end) and "B{j+1}c{j}" (crank j+1 - its right end).

Counting (hand derivation, planar): 2N + 1 bodies, n = 6N + 3; 3N + 1 revolutes, 6N + 2 rows.
- General position: each window is a four-bar driven by the crank on its left, so dof = 1,
  rank C = 6N + 2 = number of rows: NO redundant constraint (p = 0), every reaction unique.
- Cranks horizontal (angle 0 or pi): every bar lies on the x axis. A bar on the x axis only
  forces equal x velocities at its ends, so the crank tips are fixed in x and each may move in
  y on its own (crank rates w_k free, coupler j turning at w_{j+1} - w_j): dof = N + 1,
  rank C = 5N + 2, p = N (the benchmark's "degrees of freedom increase from 1 to N + 1"). The
  N self-stresses are axial forces: a tension u_j in coupler j, u_j - u_{j-1} in crank j
  (u_{-1} = u_N = 0); every joint carries one of them, so no revolute reaction is unique
  (each keeps one unique component, the force across the line).

`rigid_coupler=True` replaces the N couplers by one bar "coupler" of length N L through all crank
tips (revolutes "A0" .. "AN", "B0" .. "BN"): n = 3N + 6, 4N + 4 rows; in general position dof 1,
rank 3N + 5, p = N - 1 (axial crank forces t_k with sum t_k = sum k t_k = 0), so for N >= 2 no
revolute reaction is unique; horizontal: dof 2, rank 3N + 4, p = N.
"""

from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Real

from .._custom_types import Coordinates, ScalarLike
from .._model import builder_checks as _checks
from .._model.mechanism import Mechanism
from .._model.model import Model
from ..elements import Gravity, Revolute

BUILDER = "n_four_bar.build"
"""The name the argument errors of `build` give."""

SINGULAR_ANGLES = {
    "cranks horizontal, pointing +x (all bars collinear)": 0.0,
    "cranks horizontal, pointing -x (all bars collinear)": float(np.pi),
}


def _check_n(N):
    if not isinstance(N, (int, np.integer)) or isinstance(N, bool) or N < 1:
        raise ValueError(f"n_four_bar: N must be an integer >= 1 (number of windows), got {N!r}")
    return int(N)


def configuration(
    angle: ScalarLike, N: int, length: ScalarLike = 1.0, rigid_coupler: bool = False
) -> Coordinates:
    """Coordinates q with every crank at `angle` (from +x) and the couplers horizontal.

    Crank k: centre A_k + (L / 2) u, u = (cos, sin)(angle); coupler j: centre A_j + L u +
    (L / 2, 0) (the rigid coupler: A_0 + L u + (N L / 2, 0)). Traceable in angle and length."""
    N = _check_n(N)
    angle = jnp.asarray(angle, jnp.float64)
    L = jnp.asarray(length, jnp.float64)
    u = jnp.stack([jnp.cos(angle), jnp.sin(angle)])
    z = 0.0 * angle
    poses = [jnp.stack([k * L + L / 2 * u[0], L / 2 * u[1], angle]) for k in range(N + 1)]
    if rigid_coupler:
        poses.append(jnp.stack([N * L / 2 + L * u[0], L * u[1], z]))
    else:
        poses += [jnp.stack([(j + 0.5) * L + L * u[0], L * u[1], z]) for j in range(N)]
    return jnp.concatenate(poses)


def velocity(
    angle: Real[ArrayLike, ""],
    rate: Real[ArrayLike, ""],
    N: int,
    length: Real[ArrayLike, ""] = 1.0,
    rigid_coupler: bool = False,
) -> Float[Array, " n"]:
    """Velocities qd of `configuration` when every crank turns at `rate` (rad/s): the couplers
    translate with the crank tips. The benchmark's start is velocity(pi/2, -1/L, N) (B_0 moving
    at 1 m/s along +x)."""
    N = _check_n(N)
    angle = jnp.asarray(angle, jnp.float64)
    rate = jnp.asarray(rate, jnp.float64)
    L = jnp.asarray(length, jnp.float64)
    du = jnp.stack([-jnp.sin(angle), jnp.cos(angle)]) * rate
    crank = jnp.stack([L / 2 * du[0], L / 2 * du[1], rate])
    coupler = jnp.stack([L * du[0], L * du[1], 0.0 * rate])
    count = 1 if rigid_coupler else N
    return jnp.concatenate([crank] * (N + 1) + [coupler] * count)


def build(
    N: int = 2,
    angle0: Real[ArrayLike, ""] = np.pi / 2,
    *,
    length: Real[ArrayLike, ""] = 1.0,
    mass: Real[ArrayLike, ""] = 1.0,
    gravity: Real[ArrayLike, "2"] | Sequence[float] | None = (0.0, -9.81),
    rigid_coupler: bool = False,
) -> Model:
    """Build the N-four-bar (benchmark A02 with the defaults and N = 2) at crank angle `angle0`.

    **Arguments:**
    - `N`: the number of windows (static, >= 1).
    - `angle0`: the crank angle from +x (rad).
    - `length`, `mass`: of every bar (m, kg; traceable; positive: checked, also inside jit).
    - `gravity`: (gx, gy) in m/s^2, or None for no gravity.
    - `rigid_coupler`: one coupler bar of length N L instead of N bars (the redundant variant,
      p = N - 1).

    ```python
    model = n_four_bar.build(3)
    report = mb.solvability(model, model.q0)   # rank 20, p = 0, dof = 1
    ```
    """
    N = _check_n(N)
    angle0 = _checks.real(BUILDER, "angle0", angle0)
    L = _checks.real(BUILDER, "length", length, "positive")
    mass = _checks.real(BUILDER, "mass", mass, "positive")
    gravity = _checks.vector(BUILDER, "gravity", gravity)
    rigid_coupler = _checks.flag(BUILDER, "rigid_coupler", rigid_coupler)
    q = configuration(angle0, N, L, rigid_coupler).reshape(-1, 3)
    m = Mechanism()
    # bodies and joints added as whole arrays (`add_bodies`, `add_stacked`: the same model as
    # one call per body and joint, whose traced build would grow with N)
    ones = jnp.ones(N + 1)
    cranks = m.add_bodies(
        [f"crank{k}" for k in range(N + 1)], mass * ones, mass * L**2 / 12 * ones, q[: N + 1]
    )
    z = 0.0 * L
    tip, foot = jnp.stack([L / 2, z]), jnp.stack([-L / 2, z])
    position = jnp.arange(N + 1.0)  # crank k's place along the ground, in bar lengths
    m.add_stacked(
        Revolute,
        [f"A{k}" for k in range(N + 1)],
        i=[m.ground] * (N + 1),
        j=list(cranks),
        s_i=jnp.stack([position * L, 0.0 * position + z], axis=1),
        s_j=jnp.broadcast_to(foot, (N + 1, 2)),
    )
    if rigid_coupler:
        bar = m.body("coupler", mass=N * mass, inertia=N * mass * (N * L) ** 2 / 12, q=q[N + 1])
        m.add_stacked(
            Revolute,
            [f"B{k}" for k in range(N + 1)],
            i=list(cranks),
            j=[bar] * (N + 1),
            s_i=jnp.broadcast_to(tip, (N + 1, 2)),
            s_j=jnp.stack([(position - N / 2) * L, 0.0 * position + z], axis=1),
        )
    else:
        ones = jnp.ones(N)
        bars = m.add_bodies(
            [f"coupler{j}" for j in range(N)], mass * ones, mass * L**2 / 12 * ones, q[N + 1 :]
        )
        # per window j: B_j on crank j (the bar's foot) and B_(j+1) on crank j + 1 (its tip)
        m.add_stacked(
            Revolute,
            [name for j in range(N) for name in (f"B{j}c{j}", f"B{j + 1}c{j}")],
            i=[cranks[j + e] for j in range(N) for e in (0, 1)],
            j=[bars[j] for j in range(N) for _ in (0, 1)],
            s_i=jnp.broadcast_to(tip, (2 * N, 2)),
            s_j=jnp.tile(jnp.stack([foot, tip]), (N, 1)),
        )
    if gravity is not None:
        m.add(Gravity(g=gravity))
    return m.build()


def counts(
    N: int, *, horizontal: bool = False, rigid_coupler: bool = False
) -> tuple[int, int, int, int, int]:
    """The hand-derived (n, rows, rank, p, dof) of the module docstring."""
    N = _check_n(N)
    if rigid_coupler:
        n, rows = 3 * N + 6, 4 * N + 4
        dof = 2 if horizontal else 1
    else:
        n, rows = 6 * N + 3, 6 * N + 2
        dof = N + 1 if horizontal else 1
    rank = n - dof
    return n, rows, rank, rows - rank, dof
