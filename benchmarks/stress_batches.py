"""Stress test of the vmapped uses that hung with jaxlib 0.10's batched CPU LAPACK (issue 18).

Each case runs in a fresh Python process (the hang depended on thread timing at start-up and
appeared in 7 of 18 fresh processes for solvability of 1024 robot configurations before
jaxmb._linalg.dense handed LAPACK one matrix at a time), under a timeout; a process that does not
finish in time counts as a hang. Prints one row per case: runs, hangs, failures, and the
median / max wall time of a run (compile included).

    python benchmarks/stress_batches.py                 # 20 repetitions of each case
    python benchmarks/stress_batches.py --reps 3 --timeout 120
"""

import argparse
import os
import subprocess
import sys
import time

import numpy as np

PRELUDE = """
import jax, jax.numpy as jnp, numpy as np
import jaxmb as mb
from jaxmb.models import mobile_robot
model = mobile_robot.build()
rng = np.random.default_rng(0)
"""

CASES = {
    # the reproduction: vmapped solvability of 1024 robot configurations
    "solvability x1024": PRELUDE
    + """
qs = jnp.asarray(model.q0 + 1e-3 * rng.standard_normal((1024, model.n)))
rep = jax.jit(jax.vmap(lambda q: mb.solvability(model, q, 0.0)))(qs)
assert rep.rank.shape == (1024,)
jax.block_until_ready(rep)
""",
    # 256 robots with different initial speeds, 0.5 s of motion
    "simulate x256": PRELUDE
    + """
qd0 = mb.consistent_velocity(model, model.q0, jnp.zeros(model.n))
ts = jnp.linspace(0.0, 0.5, 6)
def run(scale):
    return mb.simulate(model, model.q0, scale * qd0, 0.5, ts=ts, throw=False)
traj = jax.jit(jax.vmap(run))(jnp.linspace(0.5, 1.5, 256))
assert bool(jnp.all(traj.success))
""",
    # reactions along a trajectory of 201 instants, all four methods of the robot
    "reactions x201": PRELUDE
    + """
qd0 = mb.consistent_velocity(model, model.q0, jnp.zeros(model.n))
traj = mb.simulate(model, model.q0, qd0, 2.0)
for method in ("min_norm", "auto"):
    rx = jax.jit(lambda tr, m=method: mb.reactions(model, tr, method=m))(traj)
    jax.block_until_ready(rx.lam)
lam = jax.jit(jax.vmap(lambda q, qd, t: mb.reactions(model, q, qd, t).lam))(
    traj.q, traj.qd, traj.ts)
assert bool(jnp.all(jnp.isfinite(lam)))
""",
    # mb.batch.map on 2 CPU devices, ordered by a cost function (issue 16): 64 robots, 0.5 s
    "batch.map cost= x64, 2 devices": "import os; os.environ['JAXMB_CPU_DEVICES'] = '2'\n"
    + PRELUDE
    + """
assert jax.device_count() == 2
def run(amplitude, speed, rtol=1e-8):
    m = mobile_robot.build(amplitude=amplitude, t_end=0.5)
    qd0 = mobile_robot.initial_velocity(m, speed)
    return mb.simulate(m, m.q0, qd0, 0.5, ts=jnp.linspace(0.0, 0.5, 6), rtol=rtol, throw=False)
amplitudes = jnp.asarray(rng.uniform(-0.03, 0.03, 64))
speeds = jnp.asarray(rng.uniform(0.05, 0.15, 64))
traj = mb.batch.map(run, amplitudes, speeds, chunk=16,
                    cost=lambda a, s: run(a, s, 1e-4).num_steps)
assert bool(jnp.all(traj.success)) and traj.q.shape == (64, 6, model.n)
""",
}


def run_case(code, timeout):
    """(status, seconds): status 'ok', 'hang' (timed out) or 'fail' (non-zero exit)."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=os.environ.copy(),
        )
    except subprocess.TimeoutExpired:
        return "hang", time.perf_counter() - start
    status = "ok" if proc.returncode == 0 else "fail"
    if status == "fail":
        print(proc.stderr[-2000:], file=sys.stderr)
    return status, time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=240.0)
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    args = parser.parse_args(argv)
    rows = []
    for name in args.cases:
        results = [run_case(CASES[name], args.timeout) for _ in range(args.reps)]
        times = np.array([t for s, t in results if s == "ok"]) if results else np.array([])
        hangs = sum(s == "hang" for s, _ in results)
        fails = sum(s == "fail" for s, _ in results)
        rows.append(
            (
                name,
                len(results),
                hangs,
                fails,
                np.median(times) if times.size else float("nan"),
                times.max() if times.size else float("nan"),
            )
        )
        print(f"{name}: {rows[-1][1]} runs, {hangs} hangs, {fails} failures", flush=True)
    print(f"\n{'case':<20} {'runs':>5} {'hangs':>6} {'fails':>6} {'median s':>9} {'max s':>7}")
    for name, n, h, f, med, mx in rows:
        print(f"{name:<20} {n:>5} {h:>6} {f:>6} {med:>9.1f} {mx:>7.1f}")
    return 1 if any(r[2] or r[3] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
