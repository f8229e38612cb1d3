"""The rigid limit of compliant joints (issue 20, item 3): full stiffness sweeps.

    python benchmarks/bench_rigid_limit.py            # the sweeps below
    python benchmarks/bench_rigid_limit.py --quick    # three scales each
    python benchmarks/bench_rigid_limit.py --only cycle   # rerun one study, keep the others

For each study of `jaxmb.rigid_limit` (a: the triple-crank parallelogram's statics, its six
revolutes bushings of stiffness s K; b: the parallelogram driven out and back, bushings s K,
implicit Kvaerno5; c: the seed-001 robot over its compressed manoeuvre with tyres (lateral
dampers s D) for the knife edges W1-W4) it prints the relative difference between the compliant
model's forces and the `mb.Compliance` reactions of the rigid model, per scale s, and the
observed rate d log(error) / d log(s) (expected -1), and writes them to
benchmarks/results/rigid_limit.json (read by examples/compliance.py and notebook 06). Not a
speed benchmark: the run time is printed for information only.
"""

import argparse
import json
import os
import time

import _common  # noqa: F401  (first: float64, the XLA flags, jaxmb from the checkout)
import numpy as np

from jaxmb import rigid_limit

SWEEPS = {
    "statics": [1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0],
    "cycle": [3.0, 10.0, 30.0, 100.0, 300.0, 1000.0],
    "robot": [10.0, 30.0, 100.0, 300.0, 1000.0],
}
QUICK = {
    "statics": [10.0, 100.0, 1000.0],
    "cycle": [10.0, 100.0, 1000.0],
    "robot": [10.0, 100.0, 1000.0],
}
STUDIES = {
    "statics": ("(a) parallelogram statics, bushings s K", rigid_limit.parallelogram_statics),
    "cycle": (
        "(b) parallelogram cycle, bushings s K, Kvaerno5",
        lambda s: rigid_limit.parallelogram_cycle(s, rtol=1e-8),
    ),
    "robot": (
        "(c) robot manoeuvre, tyres s D, Kvaerno5",
        lambda s: rigid_limit.robot_slip(s, t_end=5.0, t1=5.0, num_saves=51),
    ),
}


def run(quick=False, only=None, out=os.path.join(_common.RESULTS, "rigid_limit.json")):
    """Run the studies (`only`: a list of keys of STUDIES) and update `out` with them."""
    sweeps = QUICK if quick else SWEEPS
    results = {}
    if only and os.path.exists(out):
        with open(out) as fh:
            results = json.load(fh)
    for key, (title, study) in STUDIES.items():
        if only and key not in only:
            continue
        start = time.perf_counter()
        r = study(sweeps[key])
        seconds = time.perf_counter() - start
        rows = [
            (f"{s:g}", f"{e:.3e}", "" if k == 0 else f"{r['rates'][k - 1]:+.3f}")
            for k, (s, e) in enumerate(zip(r["scales"], r["errors"]))
        ]
        _common.table(f"{title} ({seconds:.0f} s)", ("s", "relative error", "rate"), rows)
        results[key] = dict(
            title=title,
            scales=r["scales"].tolist(),
            errors=r["errors"].tolist(),
            rates=r["rates"].tolist(),
            seconds=seconds,
        )
    results["machine"] = _common.machine()
    with open(out, "w") as fh:
        json.dump(results, fh, indent=1)
    print(f"wrote {out}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="+", choices=list(STUDIES), help="rerun these studies")
    args = parser.parse_args()
    run(args.quick, args.only)
