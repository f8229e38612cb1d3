"""Benchmark: a batch of slider-crank trajectories by simulate's default formulation against the
null-space formulation, side by side in one process.

    python benchmarks/bench_batch_formulations.py            # 1024 members, 5 repeats
    python benchmarks/bench_batch_formulations.py --size 256
    python benchmarks/bench_batch_formulations.py --case mobile_robot --size 256 --repeats 3

The work of `bench_batch.py` (every member from its own crank angle and rate, 1 s of free
motion under gravity, rtol 1e-8, 11 saved instants): one `jax.jit(jax.vmap(run))` per
formulation and `mb.batch.map` on every CPU device, each timed as the median of `--repeats`
runs, the formulations alternating so that a change of the machine's load affects both.
The target: the default within 1.1x of the null space (a small model must not get slower when
the default changed). Accuracy: the largest |q(t1)| difference of the first 16 members from the
numpy/scipy reference (`oracle.reference_numpy`).
`--case mobile_robot`: the issue-16 robot batch of `bench_batch.robot_case` (20 s, steering
amplitude and speed per member); its accuracy column is the largest platform-path difference
of the first 16 members from the null space's (no numpy reference of that batch).
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("JAXMB_CPU_DEVICES", "all")  # batch.map on one CPU device per core
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import bench_batch  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _common import block, machine, table  # noqa: E402
from oracle import reference_numpy as ref  # noqa: E402

import jaxmb as mb  # noqa: E402

FORMULATIONS = ("null_space", "default")
TARGET = 1.1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--case", choices=sorted(bench_batch.CASES), default="slider_crank")
    args = parser.parse_args(argv)
    print(machine())
    build_case, title = bench_batch.CASES[args.case]
    check = 16
    reference = None
    if args.case == "slider_crank":
        thetas, omegas = bench_batch.initial_states(args.size)
        reference = np.stack(
            [
                ref.simulate_slider_crank(1.0, np.linspace(0, 1.0, 11), theta0=a, omega0=b)[1]
                for a, b in zip(thetas[:check], omegas[:check])
            ]
        )
    runs, results = {}, {}
    for name in FORMULATIONS:
        bench_batch.FORMULATION = name
        _, one, th, om = build_case(args.size)
        start = time.perf_counter()
        compiled = jax.jit(jax.vmap(one)).lower(th, om).compile()
        compile_s = time.perf_counter() - start
        q, steps = block(compiled(th, om))
        block(mb.batch.map(one, th, om))  # compiles batch.map's program
        if reference is None:  # the first formulation's paths are the reference
            reference = np.asarray(q[:check])
        error = float(np.nanmax(np.abs(np.asarray(q[:check]) - reference)))
        runs[name] = (compiled, one, th, om)
        results[name] = dict(
            compile=compile_s, steps=int(jnp.sum(steps)), error=error, vmap=[], map=[]
        )
    for _ in range(args.repeats):
        for name in FORMULATIONS:
            compiled, one, th, om = runs[name]
            start = time.perf_counter()
            block(compiled(th, om))
            results[name]["vmap"].append(time.perf_counter() - start)
            start = time.perf_counter()
            block(mb.batch.map(one, th, om))
            results[name]["map"].append(time.perf_counter() - start)
    base = {k: statistics.median(results["null_space"][k]) for k in ("vmap", "map")}
    rows = []
    for name in FORMULATIONS:
        r = results[name]
        vmap_s, map_s = statistics.median(r["vmap"]), statistics.median(r["map"])
        rows.append(
            [
                name,
                r["compile"],
                r["steps"],
                vmap_s,
                vmap_s / base["vmap"],
                map_s,
                map_s / base["map"],
                r["error"],
            ]
        )
    table(
        f"{args.size} {title}, rtol 1e-8 ({jax.device_count()} CPU devices for "
        f"batch.map); ratios against the null space, target <= {TARGET}",
        [
            "formulation",
            "compile s",
            "steps",
            "jit(vmap) s",
            "ratio",
            "batch.map s",
            "ratio",
            "max |q - numpy| m" if args.case == "slider_crank" else "max |path - null space| m",
        ],
        rows,
    )
    worst = max(rows[1][4], rows[1][6])
    print(f"default / null space: {worst:.2f}x at most: {'met' if worst <= TARGET else 'missed'}")
    return results


if __name__ == "__main__":
    main()
