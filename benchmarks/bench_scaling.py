"""Benchmark: cost of simulating the IFToMM N-four-bar (A02) as N grows.

    python benchmarks/bench_scaling.py             # N = 1, 10, 50, 100, 200
    python benchmarks/bench_scaling.py --quick     # N = 1, 10, 20
    python benchmarks/bench_scaling.py --formulations null_space augmented_lagrangian
    python benchmarks/bench_scaling.py --grid 4 10 20 30   # the rotating-squares linkage

N parallelograms of unit bars (2 N + 1 bodies, 3 N + 1 revolutes, n = 6 N + 3 coordinates)
start from the benchmark's initial state (cranks vertical, 1 m/s) and fall under gravity for
`t1` seconds (0.5 s: the cranks stay away from the horizontal singular position). Reported:
run time per simulated second (median of repeats after compilation), accepted steps, and
the fitted exponent a of time ~ N^a (least squares on log-log over N >= 10). The numpy/scipy
reference (hand-coded rows, same formulation) runs the same problem for N <= 50 (`--ref-max`).
Each formulation of `--formulations` (spellings of `simulate(formulation=...)`) runs the same
problem side by side: the dense null-space one (a pivoted QR of C per right-hand side) and the
sparse augmented-Lagrangian one (one static-pattern block Cholesky of M + alpha C'^T C').

`--grid` runs the rotating-squares (auxetic) linkage of n x n plates instead (bench_metamaterial's
`scaling_case`): the sparse solvability, the Compliance statics, 1 s of motion and the
inverse-design gradient, compile apart, with the growth from size to size against issue
targets: run time at most plates^1.3 and compile at most 2x from 10 x 10 to 20 x 20.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # threaded BLAS under load: 4x+ slower

import argparse

import jax.numpy as jnp
import numpy as np
from _common import block, compile_timed, machine, median_time, table
from oracle import reference_numpy as ref

import jaxmb as mb
from jaxmb.models import n_four_bar

T1 = 0.5


def run(quick=False, sizes=None, repeats=None, ref_max=None, formulations=("null_space",)):
    sizes = sizes or ((1, 10, 20) if quick else (1, 10, 50, 100, 200))
    repeats = repeats or 3
    ref_max = 10 if quick and ref_max is None else (50 if ref_max is None else ref_max)
    rows, figures = [], {}
    for N, formulation in [(N, f) for N in sizes for f in formulations]:
        model = n_four_bar.build(N)
        qd0 = n_four_bar.velocity(np.pi / 2, -1.0, N)
        ts = jnp.linspace(0.0, T1, 11)

        def fn(m, q, qd, ts, formulation=formulation):
            return mb.simulate(m, q, qd, T1, ts=ts, formulation=formulation)

        compiled, trace_s, xla_s = compile_timed(fn, model, model.q0, qd0, ts)
        traj = block(compiled(model, model.q0, qd0, ts))
        t = median_time(lambda: block(compiled(model, model.q0, qd0, ts)), repeats)
        t_ref = err = None
        if N <= ref_max:
            out = {}
            t_ref = median_time(
                lambda: out.update(r=ref.simulate_n_four_bar(N, T1, np.asarray(ts))), 1
            )
            err = float(np.max(np.abs(out["r"][1] - np.asarray(traj.q))))
        rows.append(
            [
                N,
                formulation,
                model.n,
                len(model.pairs),
                t / T1,
                int(traj.num_steps),
                "-" if t_ref is None else t_ref / T1,
                "-" if t_ref is None else t_ref / t,
                "-" if err is None else err,
                trace_s + xla_s,
            ]
        )
        figures[(N, formulation)] = dict(
            n=model.n,
            s_per_sim_s=t / T1,
            steps=int(traj.num_steps),
            numpy_s_per_sim_s=None if t_ref is None else t_ref / T1,
            max_dq=err,
            compile_s=trace_s + xla_s,
        )
    big = [N for N in sizes if N >= 10]
    exponents = {
        f: (
            float(
                np.polyfit(np.log(big), np.log([figures[(N, f)]["s_per_sim_s"] for N in big]), 1)[0]
            )
            if len(big) >= 2
            else float("nan")
        )
        for f in formulations
    }
    fitted = ", ".join(f"{f} N^{a:.2f}" for f, a in exponents.items())
    table(
        f"N-four-bar, {T1:g} s of motion: run time per simulated second (fitted over "
        f"N >= 10: {fitted})",
        [
            "N",
            "formulation",
            "n",
            "pairs",
            "jaxmb s/s",
            "steps",
            "numpy s/s",
            "speed-up",
            "max |dq|",
            "compile s",
        ],
        rows,
    )
    return dict(cases={f"{N} {f}": v for (N, f), v in figures.items()}, exponents=exponents)


GRID_TARGETS = {"run exponent": 1.3, "compile ratio": 2.0}
"""The targets of the growth from 10 x 10 to 20 x 20 plates: run time ~ plates^a with
a <= 1.3, compile at most 2x."""


def run_grid(sizes, gradient_up_to=30, repeats=3):
    """The rotating-squares linkage at each n of `sizes` (bench_metamaterial.scaling_case):
    one table of compile / run seconds, one of the growth between consecutive sizes (run
    exponent against plates, compile ratio), each against GRID_TARGETS."""
    import bench_metamaterial as bm

    kinds = ("solvability", "statics", "motion", "gradient")
    cases = {n: bm.scaling_case(n, n <= gradient_up_to, repeats) for n in sizes}
    rows = [
        [f"{n} x {n}", c["plates"], c["rows"]]
        + [f"{c[k][0]:.3g} / {c[k][1]:.3g}" if k in c else "-" for k in kinds]
        + [f"{c['energy balance']:.1e}"]
        for n, c in cases.items()
    ]
    table(
        "Rotating squares, n x n plates: compile / run seconds (run: median of "
        f"{repeats}; compile: first call minus run, the gradient's trace + XLA)",
        ["grid", "plates", "rows", *(f"{k} compile / run" for k in kinds), "energy balance"],
        rows,
    )
    growth, lines = {}, []
    for a, b in zip(sizes, sizes[1:]):
        for k in kinds:
            if k not in cases[a] or k not in cases[b]:
                continue
            ratio = cases[b]["plates"] / cases[a]["plates"]
            run_exp = float(np.log(cases[b][k][1] / cases[a][k][1]) / np.log(ratio))
            compile_ratio = cases[b][k][0] / cases[a][k][0]
            growth[(a, b, k)] = dict(run_exponent=run_exp, compile_ratio=compile_ratio)
            lines.append(
                [
                    f"{a} -> {b}",
                    k,
                    f"{run_exp:.2f}",
                    "yes" if run_exp <= GRID_TARGETS["run exponent"] else "no",
                    f"{compile_ratio:.2f}x",
                    "yes" if compile_ratio <= GRID_TARGETS["compile ratio"] else "no",
                ]
            )
    table(
        "Growth between sizes: run time ~ plates^a (target a <= 1.3) and compile ratio "
        "(target <= 2x; both targets are set from 10 x 10 to 20 x 20)",
        ["sizes", "analysis", "run exponent a", "<= 1.3", "compile ratio", "<= 2x"],
        lines,
    )
    return dict(cases=cases, growth=growth)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="*")
    parser.add_argument("--repeats", type=int)
    parser.add_argument("--ref-max", type=int)
    parser.add_argument("--formulations", nargs="*", default=["null_space"])
    parser.add_argument(
        "--grid",
        type=int,
        nargs="*",
        help="rotating-squares sizes n (n x n plates) instead of the N-four-bar",
    )
    parser.add_argument("--gradient-up-to", type=int, default=30)
    args = parser.parse_args(argv)
    print(machine())
    if args.grid:
        return run_grid(args.grid, args.gradient_up_to, args.repeats or 3)
    return run(args.quick, args.sizes, args.repeats, args.ref_max, tuple(args.formulations))


if __name__ == "__main__":
    main()
