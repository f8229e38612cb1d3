"""Benchmark: `mb.solvability(method="sparse")` against seed 001's pivoted-QR test ("qr") across
the singular positions of every model of `jaxmb.models` (tests/sparse_sweep.py), and the time
of the 20 x 20 rotating-squares report.

    python benchmarks/bench_sparse_solvability.py            # the full sweep, N up to 100
    python benchmarks/bench_sparse_solvability.py --quick    # the sweep of the test suite
    python benchmarks/bench_sparse_solvability.py --verbose  # one line per configuration

Per family and size: random configurations and 1e-2 ... 1e-9 rad on either side of each
singular angle. Counted over the pairs: decided by the sparse path, of them equal to "qr",
undecided; over the configurations: the same rank as "qr", the rank within rows and columns,
and undecided pairs where "qr" itself is firm (margin >= 1e2, `warning` False), which the
test suite refuses. Times: the sparse report alone, its first call of the family and size
(compilation included) and the median of the later calls (eager calls: block growth and its
compilations included, so a configuration near a singular position costs more).
Exits with status 1 when a decided verdict differs from "qr" or a rank exceeds the rows.
"""

import argparse
import statistics
import sys
import time
import warnings

import _common  # noqa: F401  (first: float64, the XLA flags, jaxmb and tests/ on the path)
import jax
import sparse_sweep

import jaxmb as mb
from jaxmb.models import auxetic

FULL_SIZES = {
    "n_four_bar": (3, 30, 100),
    "n_four_bar_rigid": (3, 30, 100),
    "auxetic": ((5, 4), (10, 10)),
}


def sweep(family, size, verbose):
    """Agreement counts and times of one family and size."""
    counts = dict(configs=0, decided=0, equal=0, undecided=0, rank=0, bounded=0, firm_undecided=0)
    times = []
    for label, angle in sparse_sweep.angles(family, random=5):
        model, q = sparse_sweep.FAMILIES[family][0](size, angle)
        dense = mb.solvability(model, q)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*cannot decide")
            sparse = mb.solvability(model, q, method="sparse")
        jax.block_until_ready(sparse.solvable)
        times.append(time.perf_counter() - start)
        decided, equal, undecided, same_rank, bounded = sparse_sweep.agreement(dense, sparse)
        firm = not bool(dense.warning)
        counts["configs"] += 1
        counts["decided"] += decided
        counts["equal"] += equal
        counts["undecided"] += undecided
        counts["rank"] += same_rank
        counts["bounded"] += bounded
        counts["firm_undecided"] += bool(undecided and firm)
        if verbose or undecided or equal != decided or not same_rank:
            print(
                f"    {label:<22} rank qr {int(dense.rank):>4} sparse {int(sparse.rank):>4}  "
                f"margin qr {float(dense.margin):9.3g} sparse {float(sparse.margin):9.3g}  "
                f"decided {decided:>4} equal {equal:>4} undecided {undecided:>4}"
            )
    return counts, times


def rotating_squares_time(repeats):
    """(first call, median, min) seconds of the 20 x 20 grid's sparse report at its q0."""
    model = auxetic.build(20)
    start = time.perf_counter()
    jax.block_until_ready(mb.solvability(model, model.q0, method="sparse").solvable)
    first = time.perf_counter() - start
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(mb.solvability(model, model.q0, method="sparse").solvable)
        runs.append(time.perf_counter() - start)
    return first, statistics.median(runs), min(runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the test suite's sweep only")
    parser.add_argument("--verbose", action="store_true", help="one line per configuration")
    parser.add_argument("--repeats", type=int, default=15, help="runs of the 20 x 20 report")
    args = parser.parse_args()
    families = sparse_sweep.QUICK if args.quick else tuple(sparse_sweep.FAMILIES)
    failed = False
    total = dict(configs=0, decided=0, equal=0, undecided=0)
    print(
        "family            size      configs  pairs decided  = qr  undecided  rank = qr  "
        "rank <= rows  undecided where qr firm  first call  median call"
    )
    for family in families:
        if args.quick:
            sizes = (sparse_sweep.SIZES.get(family, 1),)
        else:
            sizes = FULL_SIZES.get(family, (sparse_sweep.SIZES.get(family, 1),))
        for size in sizes:
            c, times = sweep(family, size, args.verbose)
            print(
                f"{family:<17} {str(size):<9} {c['configs']:>7} {c['decided']:>14} "
                f"{c['equal']:>5} {c['undecided']:>10} {c['rank']:>6}/{c['configs']:<3} "
                f"{c['bounded']:>9}/{c['configs']:<3} {c['firm_undecided']:>24} "
                f"{times[0]:>9.2f} s {statistics.median(times[1:]) * 1e3:>9.1f} ms"
            )
            failed |= c["equal"] != c["decided"] or c["bounded"] != c["configs"]
            for key in total:
                total[key] += c[key]
    print(
        f"total: {total['configs']} configurations, {total['decided']} verdicts decided, "
        f"{total['equal']} equal to qr, {total['undecided']} undecided"
    )
    first, median, fastest = rotating_squares_time(args.repeats)
    print(
        f"20 x 20 rotating squares (1523 rows, 1200 coordinates), sparse report: first call "
        f"{first:.2f} s, median {median * 1e3:.1f} ms, min {fastest * 1e3:.1f} ms "
        f"({args.repeats} calls)"
    )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
