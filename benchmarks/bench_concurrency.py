"""Benchmark: two jaxmb processes side by side, with BLAS pinned to one thread (jaxmb's
default, `jaxmb._runtime.config.pin_blas_threads`) and with OpenBLAS's own threads
(JAXMB_KEEP_BLAS_THREADS=1).

    python benchmarks/bench_concurrency.py            # 6 x 6 rotating squares, 1 s of motion

Each worker process builds the model, compiles and runs the work once, then times REPEATS runs
(median); the table gives the median run time of one process alone and of two processes
started together, per BLAS setting, and the slowdown of the pair over the single run. Two
processes on a machine with at least two cores should not slow each other down by more than
the cores they share explain: the verdict line checks that the pinned pair's slowdown stays
below SLOWDOWN_LIMIT (2.0: two processes on one core would be 2x; on 2 cores, about 1x plus
memory-bandwidth contention). Nothing else may run meanwhile: the figures measure contention.

Reference (this machine, 2 cores, before pinning): 1 s of the 6 x 6 linkage took 0.135 s alone
and 7.0 s beside a second jaxmb process with threaded OpenBLAS (50x).
"""

import argparse
import json
import os
import subprocess
import sys
import time

REPEATS = 5
SLOWDOWN_LIMIT = 2.0

WORKER = r"""
import json, sys, time
import jax.numpy as jnp
import numpy as np
import jaxmb as mb
from jaxmb.models import auxetic

n = int(sys.argv[1])
model = auxetic.build(n, pull=4.0 * n)
ts = jnp.linspace(0.0, 1.0, 11)
run = lambda: mb.simulate(model, model.q0, jnp.zeros(model.n), 1.0, ts=ts,
                          formulation=sys.argv[3]).q.block_until_ready()
run()
print("READY", flush=True)
sys.stdin.readline()  # start together
times = []
for _ in range(int(sys.argv[2])):
    start = time.perf_counter()
    run()
    times.append(time.perf_counter() - start)
print(json.dumps(float(np.median(times))), flush=True)
"""


def measure(n, processes, keep_threads, formulation):
    """Median run time of each of `processes` workers started together."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENBLAS_NUM_THREADS", "JAXMB_KEEP_BLAS_THREADS")
    }
    if keep_threads:
        env["JAXMB_KEEP_BLAS_THREADS"] = "1"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(n), str(REPEATS), formulation],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    for w in workers:  # compiled, waiting
        while w.stdout.readline().strip() != "READY":
            pass
    for w in workers:
        w.stdin.write("go\n")
        w.stdin.flush()
    out = [json.loads(w.stdout.readline()) for w in workers]
    for w in workers:
        w.wait(timeout=600)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=6, help="plates per side (default 6)")
    parser.add_argument(
        "--formulation",
        default="null_space",
        help="null_space (default: one dense pivoted QR, LAPACK, per step, "
        "as in the issue's measurement) or default (the sparse AL above "
        "24 bodies, which calls no LAPACK)",
    )
    args = parser.parse_args()
    print(
        f"1 s of motion of a {args.size} x {args.size} rotating-squares linkage "
        f"({args.formulation}); "
        f"{os.cpu_count()} cores; median of {REPEATS} runs per process"
    )
    print(f"{'BLAS threads':<22}{'alone (s)':>12}{'two together (s)':>20}{'slowdown':>10}")
    slowdowns = {}
    for label, keep in (("1 (jaxmb's default)", False), ("OpenBLAS default", True)):
        start = time.perf_counter()
        alone = measure(args.size, 1, keep, args.formulation)[0]
        pair = measure(args.size, 2, keep, args.formulation)
        slowdowns[label] = max(pair) / alone
        print(
            f"{label:<22}{alone:>12.4f}{max(pair):>20.4f}{slowdowns[label]:>9.2f}x"
            f"   ({time.perf_counter() - start:.0f} s to measure)"
        )
    pinned = slowdowns["1 (jaxmb's default)"]
    verdict = "met" if pinned <= SLOWDOWN_LIMIT else "MISSED"
    print(
        f"target: two pinned processes at most {SLOWDOWN_LIMIT:g}x one alone: {pinned:.2f}x "
        f"({verdict})"
    )


if __name__ == "__main__":
    main()
