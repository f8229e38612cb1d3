"""Seeded random planar mechanisms for the property tests (not collected by pytest).

A mechanism is first drawn as a `Spec` in global terms: a true configuration of its bodies
(poses) and the global geometry of its pairs (joint points, sliding axes, knife-edge normals),
all consistent with the poses by construction. `build` then expresses the geometry in the body
frames (s_local = A(phi)^T (P - r); ground vectors stay global), so

- `transformed(spec, theta, shift)` is the same mechanism after a rigid motion of everything
  (bodies, ground-fixed geometry, gravity): local vectors are unchanged, ground vectors move;
- `build(spec, body_order=..., pair_order=...)` adds the same bodies and pairs in another order.

Topologies: an open chain ground - b0 - b1 - ... or a closed loop ground - b0 - ... - b(k-1) -
ground, joints revolute or translational (at most one translational in a loop), optionally
knife edges, a rotational driver, and one exactly redundant companion pair (a Parallel pair
repeating a translational joint's no-rotation row, or a second revolute between the bodies of a
revolute, which makes the two a weld with p = 1). `build` returns the model and a start near the
true configuration (noise that moves with a rigid motion, so the start of a moved mechanism is
the moved start); the consistent q0 is `mb.assemble(model, start)`.
"""

import dataclasses

import numpy as np
from oracle.planar import rigid_motion, rot as rotation

import jaxmb as mb

GROUND = "ground"


@dataclasses.dataclass(frozen=True)
class Spec:
    """A random mechanism in global terms.

    **Fields:** `poses` {body: (x, y, phi)} true configuration; `masses`, `inertias`
    {body: value}; `noise` {body: (dx, dy, dphi)} offset of the assembly start (body-frame xy);
    `pairs`: tuples (type, name, bodies, geometry) with global points and unit directions;
    `gravity` (global 2-vector)."""

    poses: dict
    masses: dict
    inertias: dict
    noise: dict
    pairs: tuple
    gravity: np.ndarray


def _unit(rng):
    angle = rng.uniform(0.0, 2.0 * np.pi)
    return np.array([np.cos(angle), np.sin(angle)])


def random_spec(seed, *, bodies=3, loop=False, knife_edges=0, driver=False, redundant=False):
    """A random mechanism: `bodies` links in an open chain (or a closed loop back to ground),
    `knife_edges` knife edges on random bodies, a RelativeAngleDriver on the first revolute
    joint, and an exactly redundant companion pair (never on the driven joint). Raises
    ValueError for a seed whose draw cannot be driven consistently."""
    rng = np.random.default_rng(seed)
    names = [f"b{k}" for k in range(bodies)]
    # joint points: a random walk; body k sits between joint k and joint k + 1
    steps = [rng.uniform(0.3, 0.6) * _unit(rng) for _ in range(bodies + 1)]
    points = np.cumsum([np.zeros(2)] + steps, axis=0)
    if loop:  # close the loop: the last joint is back near the start, on the ground
        points[-1] = points[0] + np.array([rng.uniform(0.6, 0.9), rng.uniform(-0.2, 0.2)])
    poses = {
        nm: np.array(
            [
                *(0.5 * (points[k] + points[k + 1]) + 0.05 * rng.standard_normal(2)),
                rng.uniform(-np.pi, np.pi),
            ]
        )
        for k, nm in enumerate(names)
    }
    chain = [GROUND] + names + ([GROUND] if loop else [])
    n_joints = len(chain) - 1
    translational = rng.uniform(size=n_joints) < 0.3
    if loop and translational.sum() > 1:
        translational[np.flatnonzero(translational)[1:]] = False
    pairs = []
    for k in range(n_joints):
        i, j = chain[k], chain[k + 1]
        if translational[k]:
            axis = _unit(rng)
            pairs.append(
                (
                    "translational",
                    f"J{k}",
                    (i, j),
                    (points[k], points[k] + rng.uniform(-0.2, 0.2) * axis, axis),
                )
            )
        else:
            pairs.append(("revolute", f"J{k}", (i, j), (points[k],)))
    revolutes = [k for k in range(n_joints) if not translational[k]]
    driven = revolutes[0] if driver and revolutes else None
    if driver and driven is None:
        raise ValueError(f"seed {seed}: no revolute joint to drive; choose another seed")
    if redundant:  # not on the driven joint: a locked joint cannot be driven
        companion = _companion(rng, [p for k, p in enumerate(pairs) if k != driven], poses)
        if loop and driver and companion[0] == "revolute":
            raise ValueError(
                f"seed {seed}: a second revolute locks the driven loop (the "
                "velocity constraints contradict); choose another seed"
            )
        pairs.append(companion)
    for e in range(knife_edges):
        body = names[rng.integers(bodies)]
        point = poses[body][:2] + 0.1 * rng.standard_normal(2)
        pairs.append(("knife", f"K{e}", (body,), (point, _unit(rng))))
    if driver:
        pairs.append(
            ("driver", "motor", tuple(chain[driven : driven + 2]), (rng.uniform(0.5, 2.0),))
        )
    return Spec(
        poses=poses,
        masses={nm: rng.uniform(0.5, 2.0) for nm in names},
        inertias={nm: rng.uniform(0.01, 0.1) for nm in names},
        noise={nm: 0.01 * rng.standard_normal(3) for nm in names},
        pairs=tuple(pairs),
        gravity=9.81 * _unit(rng),
    )


def _companion(rng, pairs, poses):
    """An exactly redundant pair for one of `pairs`: Parallel along a translational joint's
    axis (its rotation row again), or a second revolute between the bodies of a revolute
    joint."""
    kinds = [p for p in pairs if p[0] == "translational"] or pairs
    kind, name, (i, j), geometry = kinds[rng.integers(len(kinds))]
    if kind == "translational":
        return ("parallel", f"{name}p", (i, j), (geometry[2],))
    body = j if j != GROUND else i
    return ("revolute", f"{name}r", (i, j), (poses[body][:2] + 0.2 * _unit(rng),))


def transformed(spec, theta, shift):
    """The same mechanism after the rigid motion P -> A(theta) P + shift, phi -> phi + theta
    of everything (bodies, ground geometry, gravity); the start noise moves with the bodies."""
    R, shift = rotation(theta), np.asarray(shift, dtype=float)

    def pose(p):
        return np.array([*(R @ p[:2] + shift), p[2] + theta])

    def geometry(kind, values):
        if kind == "driver":
            return values
        if kind in ("revolute",):
            return (R @ values[0] + shift,)
        if kind == "translational":
            return (R @ values[0] + shift, R @ values[1] + shift, R @ values[2])
        if kind == "knife":
            return (R @ values[0] + shift, R @ values[1])
        return (R @ values[0],)  # parallel: a direction

    return dataclasses.replace(
        spec,
        poses={nm: pose(p) for nm, p in spec.poses.items()},
        noise={nm: np.array([*(R @ n[:2]), n[2]]) for nm, n in spec.noise.items()},
        pairs=tuple((k, nm, b, geometry(k, g)) for k, nm, b, g in spec.pairs),
        gravity=R @ spec.gravity,
    )


def _frame(spec, body):
    if body == GROUND:
        return np.zeros(2), 0.0
    return spec.poses[body][:2], spec.poses[body][2]


def _local_point(spec, body, point):
    r, phi = _frame(spec, body)
    return rotation(phi).T @ (point - r)


def _local_direction(spec, body, direction):
    return rotation(_frame(spec, body)[1]).T @ direction


def _element(spec, kind, name, bodies, geometry, handles):
    h = [handles[b] for b in bodies]
    if kind == "revolute":
        (point,) = geometry
        return mb.Revolute(
            name,
            *h,
            s_i=_local_point(spec, bodies[0], point),
            s_j=_local_point(spec, bodies[1], point),
        )
    if kind == "translational":
        p_i, p_j, axis = geometry
        normal = np.array([-axis[1], axis[0]])
        angle = _frame(spec, bodies[0])[1] - _frame(spec, bodies[1])[1]
        return mb.Translational(
            name,
            *h,
            s_i=_local_point(spec, bodies[0], p_i),
            s_j=_local_point(spec, bodies[1], p_j),
            v=_local_direction(spec, bodies[1], normal),
            angle=angle,
        )
    if kind == "parallel":
        (axis,) = geometry
        return mb.Parallel(
            name,
            *h,
            a_i=_local_direction(spec, bodies[0], axis),
            a_j=_local_direction(spec, bodies[1], axis),
        )
    if kind == "knife":
        point, normal = geometry
        return mb.KnifeEdge(
            name,
            h[0],
            s=_local_point(spec, bodies[0], point),
            n=_local_direction(spec, bodies[0], normal),
        )
    (omega,) = geometry  # driver: phi_j - phi_i = its value at the true configuration + omega t
    start = _frame(spec, bodies[1])[1] - _frame(spec, bodies[0])[1]
    return mb.RelativeAngleDriver(name, *h, f=mb.drive.Linear(omega, offset=start))


def build(spec, *, body_order=None, pair_order=None, gravity=True):
    """(model, start): the model with bodies and pairs added in the given orders (indices into
    the spec's order; default as drawn) and the assembly start (true poses plus noise)."""
    names = list(spec.poses)
    body_order = range(len(names)) if body_order is None else body_order
    pair_order = range(len(spec.pairs)) if pair_order is None else pair_order
    m = mb.Mechanism()
    handles = {GROUND: m.ground}
    starts = []
    for k in body_order:
        nm = names[k]
        start = spec.poses[nm] + spec.noise[nm]
        handles[nm] = m.body(nm, mass=spec.masses[nm], inertia=spec.inertias[nm], q=start)
        starts.append(start)
    for k in pair_order:
        m.add(_element(spec, *spec.pairs[k], handles))
    if gravity:
        m.add(mb.Gravity(spec.gravity))
    return m.build(), np.concatenate(starts)


def permute_bodies(q, order):
    """Coordinates of a model built with `body_order=order` from those of the drawn order."""
    q = np.asarray(q).reshape(-1, 3)
    return q[list(order)].reshape(-1)


def transform_coordinates(q, theta, shift):
    """q after the rigid motion of `transformed` (every body's pose moved)."""
    return rigid_motion(q, theta, shift)
