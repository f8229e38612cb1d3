"""Benchmark: `mb.load` of a JSON model file as the number of bodies grows.

    python benchmarks/bench_load.py                # chains of 1,000 / 2,000 / 4,000 / 20,000 bodies
    python benchmarks/bench_load.py --quick        # 1,000 / 4,000
    python benchmarks/bench_load.py --sizes 1000 2000

Each file is a chain of N bodies, pinned to the ground and to each other by N revolutes (the
file `mb.save` writes for it: 2.4 MB at N = 20,000), written once to a temporary folder and
loaded once after a warm-up load of a small chain (one load: a second one of the same size
finds JAX's programs compiled). Reported: the load time and the fitted exponent a of
time ~ N^a (least squares on log-log). Loading was about N^1.6 before the bodies' arrays were
joined by NumPy (one jnp.concatenate of N operands was compiled: 1,000 / 2,000 / 4,000 bodies
2.5 / 7.1 / 21.2 s, 20,000 more than 280 s); it is linear now.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import tempfile
import time

import numpy as np
from _common import machine, table

import jaxmb as mb


def chain_file(path, n):
    """Write the chain of `n` bodies ("b0" .. ) and revolutes ("O", "R1" .. ) to `path`."""
    bodies = [
        {"name": f"b{k}", "mass": 1.0, "inertia": 0.1, "q": [k + 0.5, 0.0, 0.0]} for k in range(n)
    ]
    elements = [
        {
            "type": "Revolute",
            "name": "O",
            "i": "ground",
            "j": "b0",
            "s_i": [0.0, 0.0],
            "s_j": [-0.5, 0.0],
        }  # fmt: skip
    ] + [
        {
            "type": "Revolute",
            "name": f"R{k}",
            "i": f"b{k - 1}",
            "j": f"b{k}",
            "s_i": [0.5, 0.0],
            "s_j": [-0.5, 0.0],
        }  # fmt: skip
        for k in range(1, n)
    ]
    with open(path, "w") as fh:
        json.dump({"jaxmb_model": 1, "bodies": bodies, "elements": elements}, fh)
    return path


def run(quick=False, sizes=None):
    sizes = sizes or ((1000, 4000) if quick else (1000, 2000, 4000, 20000))
    rows, times = [], []
    with tempfile.TemporaryDirectory() as folder:
        mb.load(chain_file(os.path.join(folder, "warm.json"), 10))
        for n in sizes:
            path = chain_file(os.path.join(folder, f"chain{n}.json"), n)
            start = time.perf_counter()
            model = mb.load(path)
            seconds = time.perf_counter() - start
            assert model.num_bodies == n
            times.append(seconds)
            rows.append([n, f"{os.path.getsize(path) / 1e6:.2f}", seconds, 1e3 * seconds / n])
    exponent = np.polyfit(np.log(sizes), np.log(times), 1)[0] if len(sizes) > 1 else float("nan")
    table(
        f"mb.load of a chain of N bodies and N revolutes (JSON); {machine()}; "
        f"time ~ N^{exponent:.2f}",
        ["N", "MB", "load s", "ms per body"],
        rows,
    )
    return {"sizes": list(sizes), "seconds": times, "exponent": float(exponent)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="+")
    args = parser.parse_args()
    run(args.quick, args.sizes)
