"""Benchmark: batches of slider-crank trajectories (vmap), jaxmb against a numpy/scipy loop.

    python benchmarks/bench_batch.py                  # batches 1, 64, 1024, 8192
    python benchmarks/bench_batch.py --quick          # batches 1, 64

Every member starts from its own crank angle theta0 in [0, 2 pi) and rate omega0 in [5, 15]
rad/s (closed-form consistent state) and runs 1 s of free motion under gravity. jaxmb:
`jax.jit(jax.vmap(simulate))` compiled once per batch size (compile reported separately).
Reference: the plain Python loop a user would write, `reference_numpy.simulate_slider_crank`
per member; it is timed on `--loop` members and scaled linearly to the batch (the loop is
sequential, so its time is exactly additive). Right-hand-side evaluations per second count
6 per accepted step of Tsit5 (FSAL) per member. Peak memory is XLA's own account of the
compiled batch (arguments + outputs + temporaries, `Compiled.memory_analysis()`). The batch
is checked against single runs of the reference (max |q| difference at t1).
"""

import argparse
import time

from _common import block, machine, median_time, table

import jax
import jax.numpy as jnp
import numpy as np

import jaxmb as mb
import reference_numpy as ref
from jaxmb.models import slider_crank

T1 = 1.0


def initial_states(size, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.0, 2 * np.pi, size), rng.uniform(5.0, 15.0, size)


def make_run(model, t1=T1, num_saves=11):
    """run(theta0, omega0) -> (q at the saved times, accepted steps) for one member."""
    ts = jnp.linspace(0.0, t1, num_saves)

    def pose(theta):
        parts = slider_crank.configuration(theta, ref.SC_R, ref.SC_L)
        return jnp.concatenate([jnp.stack(p) for p in parts])

    def run(theta0, omega0):
        q0, dq = jax.jvp(pose, (theta0,), (jnp.ones_like(theta0),))
        traj = mb.simulate(model, q0, omega0 * dq, t1, ts=ts, throw=False)
        q = jnp.where(traj.success, traj.q, jnp.nan)
        return q, traj.num_steps

    return run


def run(quick=False, sizes=None, repeats=None, loop=None):
    sizes = sizes or ((1, 64) if quick else (1, 64, 1024, 8192))
    repeats = repeats or (3 if quick else 5)
    loop = loop or (4 if quick else 16)
    model = slider_crank.build()
    one = make_run(model)
    thetas, omegas = initial_states(max(sizes))

    # numpy loop on `loop` members, scaled per trajectory
    start = time.perf_counter()
    ref_final = [ref.simulate_slider_crank(T1, np.linspace(0, T1, 11), theta0=th, omega0=om)[1]
                 for th, om in zip(thetas[:loop], omegas[:loop])]
    per_traj_ref = (time.perf_counter() - start) / loop

    rows, figures = [], {}
    for size in sizes:
        th, om = jnp.asarray(thetas[:size]), jnp.asarray(omegas[:size])
        start = time.perf_counter()
        lowered = jax.jit(jax.vmap(one)).lower(th, om)
        compiled = lowered.compile()
        compile_s = time.perf_counter() - start
        mem = compiled.memory_analysis()
        peak = None if mem is None else (mem.argument_size_in_bytes + mem.output_size_in_bytes
                                         + mem.temp_size_in_bytes)
        q, steps = block(compiled(th, om))
        reps = repeats if size <= 1024 else max(1, repeats - 2)
        t = median_time(lambda: block(compiled(th, om)), reps)
        n_check = min(size, loop)
        err = float(np.max(np.abs(np.asarray(q[:n_check]) - np.stack(ref_final[:n_check]))))
        rate = size / t
        rhs_rate = 6 * float(jnp.sum(steps)) / t
        ratio = per_traj_ref * size / t
        rows.append([size, t, rate, rhs_rate, per_traj_ref * size, ratio, err, compile_s,
                     "-" if peak is None else f"{peak / 2**20:.1f}"])
        figures[size] = dict(seconds=t, traj_per_s=rate, rhs_per_s=rhs_rate,
                             numpy_loop_s=per_traj_ref * size, ratio=ratio, max_dq=err,
                             compile_s=compile_s, peak_mib=None if peak is None else peak / 2**20)
    table(f"Batches of slider-cranks, {T1:g} s each: jaxmb jit(vmap(simulate)) vs numpy loop "
          f"(loop timed on {loop} members, scaled), median of {repeats}",
          ["batch", "jaxmb s", "traj/s", "RHS evals/s", "numpy loop s", "speed-up",
           "max |dq| vs numpy", "compile s", "peak MiB"], rows)
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="*")
    parser.add_argument("--repeats", type=int)
    parser.add_argument("--loop", type=int)
    args = parser.parse_args(argv)
    print(machine())
    return run(args.quick, args.sizes, args.repeats, args.loop)


if __name__ == "__main__":
    main()
