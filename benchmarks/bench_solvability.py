"""Benchmark: solvability of reactions for many configurations of the seed-001 mobile robot.

    python benchmarks/bench_solvability.py            # 10,000 configurations
    python benchmarks/bench_solvability.py --quick    # 1,000 configurations
    python benchmarks/bench_solvability.py --n 2500 --repeats 7

The configurations are the robot's steering manoeuvre (seed 001, Fig. 2; 100 instants of a
simulated run) each moved by random rigid motions, so every one is a consistent configuration
with the paper's verdicts. Compared on the same C matrices:

- jaxmb: `mb.batch.map(mb.solvability)` on one CPU device per core (JAXMB_CPU_DEVICES=all
  unless set; the fast path of README "Batches"), and `jax.jit(jax.vmap(...))` on one device,
  each timed as the full report (ranks, verdicts, |B_X|_F, margins and the unique directions:
  a thin QR and two small SVDs per pair) and as the verdicts only (rank, solvable, |B_X|_F:
  XLA drops the rest, so this is the per-pair work of the reference loop);
- reference: a plain Python loop over the configurations of `scipy.linalg.qr(C, pivoting=True)`
  and, per pair, B_X = C_X^T Q~_X, |B_X|_F and the verdict |B_X|_F <= btol |C_X|_F.

Compilation is timed separately; run times are the median of `--repeats` runs. The answers
(ranks, verdicts, |B_X|_F to 1e-9) are asserted equal before anything is printed.
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("JAXMB_CPU_DEVICES", "all")  # the fast path: one CPU device per core
try:
    import jaxmb as mb  # first: sets float64 and the XLA CPU flags
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import jaxmb as mb
import jax
import jax.numpy as jnp
import numpy as np

from jaxmb._linalg import native as _native
from jaxmb.models import mobile_robot

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")
)
from oracle import reference_numpy as ref  # noqa: E402

RANK_RTOL = 1e-9
B_RTOL = 1e-8
N_MOTION = 100


def configurations(model, n, seed=0):
    """n consistent configurations: the simulated manoeuvre, moved by random rigid motions."""
    sim = jax.jit(
        lambda m, q, qd: mb.simulate(
            m, q, qd, mobile_robot.T_END, ts=jnp.linspace(0.0, mobile_robot.T_END, N_MOTION)
        )
    )
    traj = sim(model, model.q0, mobile_robot.initial_velocity(model))
    qs, ts = np.asarray(traj.q), np.asarray(traj.ts)
    rng = np.random.default_rng(seed)
    reps = -(-n // N_MOTION)
    q = np.tile(qs, (reps, 1)).reshape(reps * N_MOTION, -1, 3)
    alpha = rng.uniform(-np.pi, np.pi, len(q))
    shift = rng.uniform(-10.0, 10.0, (len(q), 2))
    c, s = np.cos(alpha), np.sin(alpha)
    x, y = q[..., 0], q[..., 1]
    moved = np.stack(
        [
            c[:, None] * x - s[:, None] * y + shift[:, :1],
            s[:, None] * x + c[:, None] * y + shift[:, 1:],
            q[..., 2] + alpha[:, None],
        ],
        axis=-1,
    )
    return moved.reshape(len(q), -1)[:n], np.tile(ts, reps)[:n]


def scipy_loop(Cs, pair_rows):
    """The paper's QR method, one configuration at a time (seed 001, eq. 21-27): the numpy
    oracle's loop (tests/oracle/reference_numpy.py), scipy.linalg.qr with pivoting per C."""
    return ref.solvability_loop(Cs, [(None, rows) for rows in pair_rows], RANK_RTOL, B_RTOL)


def timed(fn, repeats):
    """Median wall time of `repeats` calls and the last result."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def run(quick=False, n=None, repeats=None):
    """Time the three implementations on n configurations; returns the figures."""
    n = n or (1_000 if quick else 10_000)
    repeats = max(repeats or (3 if quick else 5), 1)
    model = mobile_robot.build()
    q, t = configurations(model, n)
    pair_rows = [model.rows(nm) for nm in model.pair_names]
    Cs = np.asarray(jax.jit(jax.vmap(lambda q, t: model.C(q, t)))(q, t))

    def full(q, t):  # the whole report's arrays
        r = mb.solvability(model, q, t, method="qr")
        return r.rank, r.solvable, r.b_norm, r.unique_directions, r.unique_count, r.margin

    def verdicts(q, t):
        r = mb.solvability(model, q, t, method="qr")
        return r.rank, r.solvable, r.b_norm

    rows = []
    results = {}
    devices = jax.device_count()
    for what, fn in (("full report", full), ("verdicts only", verdicts)):
        label = f"jaxmb batch.map ({devices} dev), {what}"
        t0 = time.perf_counter()
        jax.block_until_ready(mb.batch.map(fn, q, t))
        first_s = time.perf_counter() - t0
        run_s, out = timed(lambda fn=fn: jax.block_until_ready(mb.batch.map(fn, q, t)), repeats)
        rows.append((label, first_s - run_s, run_s))  # compile: first call less a run
        results[label] = out[:3]  # rank, solvable, b_norm
    for what, fn in (("full report", full), ("verdicts only", verdicts)):
        label = f"jaxmb jit(vmap) (1 dev), {what}"
        t0 = time.perf_counter()
        compiled = jax.jit(jax.vmap(fn)).lower(q, t).compile()
        compile_s = time.perf_counter() - t0
        run_s, out = timed(lambda c=compiled: jax.block_until_ready(c(q, t)), repeats)
        rows.append((label, compile_s, run_s))
        results[label] = out[:3]

    loop_s, (ranks, ok, b_norm) = timed(lambda: scipy_loop(Cs, pair_rows), repeats)
    rows.append(("scipy.linalg.qr loop", None, loop_s))

    for label, (r, s, b) in results.items():
        assert np.array_equal(np.asarray(r), ranks), label
        assert np.array_equal(np.asarray(s), ok), label
        np.testing.assert_allclose(np.asarray(b), b_norm, rtol=0, atol=1e-9, err_msg=label)
    assert np.all(ranks == 20)
    expected = np.array(
        [nm in ("A", "D", "E", "F", "G", "H", "driver", "W5") for nm in model.pair_names]
    )
    assert np.array_equal(ok, np.tile(expected, (n, 1)))

    print(
        f"Solvability of the seed-001 robot: {n} configurations, C {Cs.shape[1]} x "
        f"{Cs.shape[2]}, {len(pair_rows)} pairs; median of {repeats} runs; "
        f"jax {jax.__version__} on {jax.devices()[0].platform}; batched QR: "
        + ("jaxmb's compiled kernel" if _native.available(jnp.zeros(())) else "pure JAX")
    )
    print("answers equal (ranks, verdicts, |B_X|_F to 1e-9): yes")
    print()
    print(
        f"{'implementation':<42}{'compile (s)':>12}{'run (s)':>10}{'per config (us)':>17}"
        f"{'scipy / this':>14}"
    )
    for label, compile_s, run_s in rows:
        comp = "-" if compile_s is None else f"{compile_s:.2f}"
        print(f"{label:<42}{comp:>12}{run_s:>10.3f}{1e6 * run_s / n:>17.1f}{loop_s / run_s:>14.2f}")
    print()
    full_s, verdict_s = rows[0][2], rows[1][2]
    return dict(
        n=n,
        devices=devices,
        scipy_s=loop_s,
        full_s=full_s,
        verdicts_s=verdict_s,
        ratio=loop_s / verdict_s,
        ratio_full=loop_s / full_s,
        ratio_one_device=loop_s / rows[3][2],
        ratio_full_one_device=loop_s / rows[2][2],
        compile_full_s=rows[0][1],
        compile_verdicts_s=rows[1][1],
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 configurations")
    parser.add_argument("--n", type=int, default=None, help="number of configurations")
    parser.add_argument("--repeats", type=int, default=None, help="runs per timing (median)")
    args = parser.parse_args(argv)
    return run(args.quick, args.n, args.repeats)


if __name__ == "__main__":
    main()
