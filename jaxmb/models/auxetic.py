"""The rotating-squares (auxetic) linkage: an n x m grid of square plates hinged at one shared
corner per neighbouring pair (Grima & Evans 2000), the basis of kirigami metamaterials.

Plate (i, j) (column i, row j) turns by -theta when i + j is even and by +theta when it is
odd; with side a its centre is (i, j) L, L = a (cos theta + sin theta), and each pair of
neighbours shares one corner (local corners (+-a/2, +-a/2)):

    right neighbour (i + 1, j):  i + j even: top-right of (i, j) = top-left of (i + 1, j)
                                 i + j odd:  bottom-right        = bottom-left
    upper neighbour (i, j + 1):  i + j even: top-left            = bottom-left
                                 i + j odd:  top-right           = bottom-right

so every plate carries four hinges at four different corners (hand-checked in
tests/test_auxetic.py by the closure of every hinge). One finite degree of freedom (theta,
the auxetic mode: the grid expands equally in x and y, Poisson's ratio -1); with plate (0, 0)
welded to the ground, 4 n m - 2 (n + m) + 3 rows (2 per hinge, 3 for the weld) of which
(n - 2)(m - 2) are redundant (the square grid n = m: 4 n (n - 1) + 3 rows, p = (n - 2)^2).
"""

from collections.abc import Sequence
from typing import Any, Literal

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Real

from .._custom_types import Coordinates, ScalarLike
from .._model import builder_checks as _checks
from .._model.mechanism import Mechanism
from .._model.model import Model
from ..elements import AbsoluteDriver, Force, Gravity, RelativeAngleDriver, Revolute, Weld

BUILDER = "rotating_squares"
"""The name the argument errors of `build` give."""

CORNERS = {"tr": (1.0, 1.0), "tl": (-1.0, 1.0), "bl": (-1.0, -1.0), "br": (1.0, -1.0)}


def rotation(i: int, j: int, theta: float | Array) -> float | Array:
    """The angle of plate (i, j): -theta for i + j even, +theta for odd."""
    return -theta if (i + j) % 2 == 0 else theta


def hinges(n: int, m: int) -> list[tuple[str, tuple[int, int], tuple[int, int], str, str]]:
    """The hinges as (name, plate a, plate b, corner of a, corner of b): horizontal pairs
    ("H{i}_{j}" between (i, j) and (i + 1, j)) first, then vertical ones ("V{i}_{j}")."""
    out = []
    for j in range(m):
        for i in range(n - 1):
            even = (i + j) % 2 == 0
            out.append(
                (f"H{i}_{j}", (i, j), (i + 1, j), "tr" if even else "br", "tl" if even else "bl")
            )
    for j in range(m - 1):
        for i in range(n):
            even = (i + j) % 2 == 0
            out.append(
                (f"V{i}_{j}", (i, j), (i, j + 1), "tl" if even else "tr", "bl" if even else "br")
            )
    return out


def configuration(
    n: int,
    m: int | None = None,
    theta: ScalarLike = 0.3,
    side: ScalarLike = 1.0,
    aspect: ScalarLike = 1.0,
) -> Coordinates:
    """q of every plate (column-major: plate (i, j) is body i + n j) on the mode at `theta`
    (traceable in theta, side and aspect). Rectangles a x b (a = side, b = aspect a: the
    rotating-rectangles pattern, Grima et al. 2004) have their centres (i Lx, j Ly) with
    Lx = a cos theta + b sin theta and Ly = a sin theta + b cos theta (hinge closure, hand
    derived as for the squares)."""
    m = n if m is None else m
    theta = jnp.asarray(theta, jnp.float64)
    c, s_ = jnp.cos(theta), jnp.sin(theta)
    Lx, Ly = side * (c + aspect * s_), side * (s_ + aspect * c)
    i, j = np.meshgrid(np.arange(n), np.arange(m), indexing="xy")
    i, j = i.reshape(-1).astype(np.float64), j.reshape(-1).astype(np.float64)  # body i + n j
    sign = np.where((i + j) % 2 == 0, -1.0, 1.0)
    return jnp.stack([i * Lx, j * Ly, sign * theta + 0.0 * Lx], axis=1).reshape(-1)


def hinge_points(
    n: int,
    m: int | None = None,
    theta: ScalarLike = 0.3,
    side: ScalarLike = 1.0,
    sizes: Real[ArrayLike, " plates"] | Sequence[float] | None = None,
    offsets: Real[ArrayLike, "hinges 2"] | Sequence[Sequence[float]] | None = None,
    aspect: ScalarLike = 1.0,
) -> tuple[Float[Array, "plates 3"], Float[Array, "hinges 2 2"]]:
    """(q, local points): the configuration `configuration(n, m, theta, side)` and, per hinge
    of `hinges(n, m)`, the hinge's point in plate a's and plate b's frames, (hinges, 2, 2).

    With plate sizes (`sizes`, one side per plate, column-major as the bodies) the two corners
    a hinge joins no longer meet: the hinge (the ligament) sits at their midpoint, plus its
    `offsets` (hinges, 2) in the global frame, and each plate's local point is that global
    point in the plate's frame at this configuration. So every hinge closes at the built
    configuration whatever the sizes and offsets: they are the design of the pattern at this
    opening angle (kirigami design in the reference configuration). Traceable in all but
    n, m."""
    m = n if m is None else m
    side = jnp.asarray(side, jnp.float64)
    q = configuration(n, m, theta, side, aspect).reshape(-1, 3)
    sizes = jnp.full(n * m, side) if sizes is None else jnp.asarray(sizes, jnp.float64)
    pairs = hinges(n, m)
    shape = jnp.stack([jnp.ones_like(side), jnp.asarray(aspect, jnp.float64)])[None, :]
    offsets = jnp.zeros((len(pairs), 2)) if offsets is None else jnp.asarray(offsets, jnp.float64)
    if sizes.shape != (n * m,) or offsets.shape != (len(pairs), 2):
        raise ValueError(
            f"rotating_squares: sizes must have shape ({n * m},) and offsets "
            f"({len(pairs)}, 2), got {sizes.shape} and {offsets.shape}"
        )

    a = np.asarray([pa[0] + n * pa[1] for _, pa, _, _, _ in pairs], np.int64)
    b = np.asarray([pb[0] + n * pb[1] for _, _, pb, _, _ in pairs], np.int64)
    corner_a = np.asarray([CORNERS[c] for _, _, _, c, _ in pairs]).reshape(-1, 2) / 2
    corner_b = np.asarray([CORNERS[c] for _, _, _, _, c in pairs]).reshape(-1, 2) / 2

    def to_global(k, local):  # plate k's local points at q
        c, s_ = jnp.cos(q[k, 2]), jnp.sin(q[k, 2])
        return q[k, :2] + jnp.stack(
            [c * local[:, 0] - s_ * local[:, 1], s_ * local[:, 0] + c * local[:, 1]], axis=1
        )

    def to_local(k, point):
        c, s_ = jnp.cos(q[k, 2]), jnp.sin(q[k, 2])
        d = point - q[k, :2]
        return jnp.stack([c * d[:, 0] + s_ * d[:, 1], -s_ * d[:, 0] + c * d[:, 1]], axis=1)

    point = (
        to_global(a, sizes[a, None] * shape * corner_a)
        + to_global(b, sizes[b, None] * shape * corner_b)
    ) / 2 + offsets
    return q, jnp.stack([to_local(a, point), to_local(b, point)], axis=1)


def build(
    n: int,
    m: int | None = None,
    *,
    theta: Real[ArrayLike, ""] = 0.3,
    side: Real[ArrayLike, ""] = 1.0,
    mass: Real[ArrayLike, ""] = 1.0,
    gravity: Real[ArrayLike, "2"] | Sequence[float] | None = None,
    pull: Real[ArrayLike, ""] | None = None,
    lock_mode: bool = False,
    sizes: Real[ArrayLike, " plates"] | Sequence[float] | None = None,
    offsets: Real[ArrayLike, "hinges 2"] | Sequence[Sequence[float]] | None = None,
    aspect: Real[ArrayLike, ""] = 1.0,
    hold: Literal["plate", "edge"] = "plate",
) -> Model:
    """The n x m linkage on its mode at `theta`, plate (0, 0) welded to the ground ("hold").

    **Arguments:**
    - `n`, `m` (static): plates per row and column (m = n by default, both >= 2).
    - `theta`: the mode angle (rad; 0 < theta < pi / 4 keeps neighbours apart).
    - `side`: the plates' side a (m).
    - `mass`: each plate's mass (kg; a uniform square: J = m a^2 / 6).
    - `gravity`: (gx, gy) in m/s^2, or None for none.
    - `pull`: a force in N on every plate of the left and right edges, at its centre,
      outwards (-x on column 0, +x on column n - 1: the grid pulled at two opposite edges,
      which drives the auxetic mode), or None for none.
    - `lock_mode` (static, True or False): adds "mode", a relative angle driver that holds the
      angle between plates (0, 0) and (1, 0) at 2 theta, so the linkage is a structure (dof 0)
      and any load is an equilibrium (its reaction is the torque that holds the mode).
    - `sizes`: one side per plate, n m of them in the order of the bodies (m), designing the
      pattern with `offsets` (`hinge_points`; a plate of side s has mass `mass` (s / side)^2),
      or None for `side` everywhere.
    - `offsets`: per hinge of `hinges(n, m)`, a 2-vector (m, global frame), or None for none.
    - `aspect`: makes the plates rectangles side x aspect side (dimensionless; rotating
      rectangles: the mode's Poisson ratio is -1 only for squares).
    - `hold` (static): "plate" welds plate (0, 0) to the ground; "edge" holds the left edge
      instead, a pin "hold" at the centre of plate (0, 0) and a roller "roller{j}" (x held, y
      and the angle free) at the centre of every other plate of column 0: the mode keeps every
      centre of column 0 on x = 0, so it stays free (dof 1, and m - 2 more redundant rows than
      "plate").

    All but n, m, lock_mode and hold are traceable. Each argument is checked (side, mass,
    aspect and sizes positive, the others finite; inside jit when the model is used), and an
    error names it. Bodies
    "P{i}_{j}"; pairs: "hold" (and the rollers), then "mode" if locked, then the hinges of
    `hinges(n, m)`; forces "pull_L{j}" and "pull_R{j}".
    """
    m = n if m is None else m
    if not (isinstance(n, int) and isinstance(m, int) and n >= 2 and m >= 2):
        raise ValueError(f"rotating_squares: n and m must be integers >= 2, got {n!r}, {m!r}")
    if hold not in ("plate", "edge"):
        raise ValueError(f"rotating_squares: hold must be 'plate' or 'edge', got {hold!r}")
    lock_mode = _checks.flag(BUILDER, "lock_mode", lock_mode)
    theta = _checks.real(BUILDER, "theta", theta)
    side = _checks.real(BUILDER, "side", side, "positive")
    mass = _checks.real(BUILDER, "mass", mass, "positive")
    aspect = _checks.real(BUILDER, "aspect", aspect, "positive")
    if sizes is not None:
        sizes = _checks.real(BUILDER, "sizes", sizes, "positive", (n * m,))
    if offsets is not None:
        shape = (len(hinges(n, m)), 2)  # traced: the hinges' own checks name the hinge
        offsets = _checks.real(BUILDER, "offsets", offsets, "finite", shape, traced=False)
    gravity = _checks.vector(BUILDER, "gravity", gravity)
    pull = None if pull is None else _checks.real(BUILDER, "pull", pull)
    q, local = hinge_points(n, m, theta, side, sizes, offsets, aspect)
    sizes = jnp.full(n * m, side) if sizes is None else sizes
    masses = mass * (sizes / side) ** 2
    inertias = masses * sizes**2 * (1.0 + aspect**2) / 12
    mech = Mechanism()
    # bodies and hinges added as whole arrays: a traced build (the inverse design's gradient)
    # stays a few operations however many plates the grid has
    names = [f"P{k % n}_{k // n}" for k in range(n * m)]
    handles = mech.add_bodies(names, masses, inertias, q)
    plates = {(k % n, k // n): h for k, h in enumerate(handles)}
    if hold == "plate":
        mech.add(
            Weld("hold", mech.ground, plates[(0, 0)], s_i=q[0, :2], s_j=(0.0, 0.0), angle=q[0, 2])
        )
    else:
        mech.add(Revolute("hold", mech.ground, plates[(0, 0)], s_i=q[0, :2], s_j=(0.0, 0.0)))
        for j in range(1, m):
            mech.add(AbsoluteDriver(f"roller{j}", plates[(0, j)], 0, f=q[n * j, 0]))
    if lock_mode:
        mech.add(
            RelativeAngleDriver(
                "mode", plates[(0, 0)], plates[(1, 0)], f=0.0, offset=q[1, 2] - q[0, 2]
            )
        )
    pairs = hinges(n, m)
    mech.add_stacked(
        Revolute,
        [name for name, *_ in pairs],
        i=[plates[a] for _, a, _, _, _ in pairs],
        j=[plates[b] for _, _, b, _, _ in pairs],
        s_i=local[:, 0],
        s_j=local[:, 1],
    )
    if gravity is not None:
        mech.add(Gravity(g=gravity))
    if pull is not None:
        for j in range(m):
            for name, i, sign in ((f"pull_L{j}", 0, -1.0), (f"pull_R{j}", n - 1, 1.0)):
                mech.add(
                    Force(
                        name, plates[(i, j)], s=(0.0, 0.0), f=jnp.stack([sign * pull, 0.0 * pull])
                    )
                )
    return mech.build()


def hinge_forces(
    model: Model, lam: Real[ArrayLike, "*batch rows"]
) -> Float[Array, "*batch hinges"]:
    """|lambda| of every hinge (the magnitude of the force its ligament carries), in the order
    of `hinges`, from the multipliers `lam` (rows of C; a leading batch axis allowed)."""
    names = [name for name in model.pair_names if name[0] in "HV" and name[1:2].isdigit()]
    rows = np.stack([np.arange(model.num_rows)[model.rows(name)] for name in names])
    return jnp.sqrt(jnp.sum(jnp.asarray(lam)[..., rows] ** 2, axis=-1))


def counts(
    n: int, m: int | None = None, lock_mode: bool = False, hold: Literal["plate", "edge"] = "plate"
) -> tuple[int, int, int, int, int]:
    """The hand-derived (n_coordinates, rows, rank, p, dof) of the module docstring (the mode
    driver adds a row and removes the degree of freedom; the held edge has a pin and m - 1
    rollers, m + 1 rows, where the weld has 3)."""
    m = n if m is None else m
    coords = 3 * n * m
    rows = 2 * len(hinges(n, m)) + (3 if hold == "plate" else m + 1) + int(lock_mode)
    dof = 0 if lock_mode else 1
    rank = coords - dof
    return coords, rows, rank, rows - rank, dof


def rotating_squares(n: int, m: int | None = None, **options: Any) -> Model:
    """`build(n, m, **options)`: the rotating-squares linkage (module docstring).

    **Arguments:**
    - `n`, `m`: plates per row and column (m = n by default, both >= 2).
    - `**options`: the keyword arguments of `build` (`theta`, `side`, `mass`, ...).
    """
    return build(n, m, **options)


__all__ = [
    "build",
    "configuration",
    "counts",
    "hinge_forces",
    "hinge_points",
    "hinges",
    "rotating_squares",
    "CORNERS",
]
