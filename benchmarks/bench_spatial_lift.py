"""Every planar reference model lifted to 3D (`mb.spatial.lift`) against the planar model itself:
the largest difference of the trajectories (x, y, phi) and of the in-plane reactions (fx, fy,
moment about z on every body), z and the out-of-plane quaternion parts (must stay 0), and the
redundancy (p_spatial = p_planar + 3 x independent loops). Both at rtol 1e-10.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_spatial_lift.py
"""

import time

import jax.numpy as jnp
import numpy as np

import jaxmb as mb
from jaxmb.models import composed_pendulum, n_four_bar, parallelogram, slider_crank

CASES = {
    # name: (planar model, its initial velocity or None (rest), t1, independent loops)
    "slider_crank": (slider_crank.build(), None, 1.0, 1),
    "composed_pendulum (seed 004)": (composed_pendulum.build(), None, 1.0, 0),
    "A02 N = 2 (singular passages)": (
        n_four_bar.build(2),
        n_four_bar.velocity(np.pi / 2, -1.0, 2),
        4.0,
        2,
    ),
    "parallelogram": (parallelogram.build(), None, 1.0, 2),
}


def lifted_velocity(qd):
    v = qd.reshape(-1, 3)
    zero = jnp.zeros_like(v[:, :1])
    return jnp.concatenate([v[:, :2], zero, zero, zero, v[:, 2:]], 1).reshape(-1)


def compare(planar, qd0, t1, loops):
    spatial = mb.spatial.lift(planar)
    p0 = int(mb.solvability(planar, planar.q0).redundancy)
    p1 = int(mb.solvability(spatial, spatial.q0).redundancy)
    qd0 = mb.consistent_velocity(planar, planar.q0, jnp.zeros(planar.n) if qd0 is None else qd0)
    ts = jnp.linspace(0.0, t1, 9)
    a = mb.simulate(planar, planar.q0, qd0, t1, ts=ts, rtol=1e-10, atol=1e-12)
    b = mb.simulate(spatial, spatial.q0, lifted_velocity(qd0), t1, ts=ts, rtol=1e-10, atol=1e-12)
    qa, qb = a.q.reshape(9, -1, 3), b.q.reshape(9, -1, 7)
    phi = 2.0 * jnp.arctan2(qb[..., 6], qb[..., 3])
    dq = max(
        float(jnp.max(jnp.abs(qb[..., :2] - qa[..., :2]))),
        float(jnp.max(jnp.abs(2 * jnp.sin((phi - qa[..., 2]) / 2)))),
    )
    off = float(jnp.max(jnp.abs(jnp.concatenate([qb[..., 2:3], qb[..., 4:6]], -1))))
    ra = mb.reactions(planar, a.q[-1], a.qd[-1], t1)
    rb = mb.reactions(spatial, b.q[-1], b.qd[-1], t1)
    scale = max(float(jnp.max(jnp.abs(x))) for x in ra.generalized.values())
    dr = 0.0
    for k, pair in enumerate(planar.pair_names):
        if not bool(ra.solvable[pair]):
            continue  # non-unique: min-norm picks differ between the two row sets
        for body in ra.pair_bodies[k]:
            fx, fy, torque = ra.on_body(pair, body)
            force, moment = rb.on_body(pair, body)
            dr = max(dr, float(jnp.max(jnp.abs(force[:2] - jnp.stack([fx, fy])))))
            dr = max(dr, float(jnp.abs(moment[2] - torque)))
    return p0, p1, loops, dq, off, dr / scale


def main():
    print(
        f"{'model':32s} {'p planar':>8s} {'p 3D':>5s} {'loops':>5s} {'max |dq|':>10s}"
        f" {'z, qx, qy':>10s} {'reactions':>10s} {'time s':>7s}"
    )
    for name, (planar, qd0, t1, loops) in CASES.items():
        start = time.perf_counter()
        p0, p1, loops, dq, off, dr = compare(planar, qd0, t1, loops)
        assert p1 == p0 + 3 * loops, (name, p0, p1)
        print(
            f"{name:32s} {p0:8d} {p1:5d} {loops:5d} {dq:10.2e} {off:10.2e} {dr:10.2e}"
            f" {time.perf_counter() - start:7.1f}"
        )


if __name__ == "__main__":
    main()
