"""IFToMM benchmark A02, the N-four-bar: N = 2 and N = 40 over 20 s.

    python benchmarks/bench_a02.py            # N = 2 and N = 40
    python benchmarks/bench_a02.py --n 2      # one size

For each N, formulation ("augmented_lagrangian", "projection" = mb.Projection(), and the
default null-space formulation for comparison) and tolerance (the default rtol 1e-8, atol 1e-10,
and with --tight also rtol 1e-10, atol 1e-12; Tsit5) it prints
the largest distance of B0 from the reference over 401 instants, max |Phi| at the saved states,
the spread of the crank angles (0 in parallelogram mode), the result, the first singular passage
the null-space formulation reports, steps, compile and run time. The reference is the reduced
one-degree-of-freedom equation of the parallelogram mode (derived in tests/test_a02.py),
theta'' = -(g / L) cos(theta) 3 (3N + 1) / (2 (4N + 1)), integrated by scipy's DOP853 at
rtol = atol = 1e-13 in the same run (its time is printed as the numpy/scipy column). Target:
B0 within 1e-5 m, no error. Results go to benchmarks/results/a02.txt.
"""

import argparse
import os
import time
import warnings

import _common  # noqa: F401  (first: float64, the XLA flags, jaxmb from the checkout)
import jax
import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp

import jaxmb as mb
from jaxmb.models import n_four_bar

G, T_END = 9.81, 20.0
TS = np.linspace(0.0, T_END, 401)


def reference(N):
    c = 3 * (3 * N + 1) / (2 * (4 * N + 1))
    start = time.perf_counter()
    sol = solve_ivp(
        lambda t, y: [y[1], -G * c * np.cos(y[0])],
        (0.0, T_END),
        [np.pi / 2, -1.0],
        method="DOP853",
        rtol=1e-13,
        atol=1e-13,
        t_eval=TS,
    )
    return np.stack([np.cos(sol.y[0]), np.sin(sol.y[0])], axis=1), time.perf_counter() - start


def run(N, formulation, rtol=1e-8):
    model = n_four_bar.build(N)
    q0, qd0 = model.q0, n_four_bar.velocity(np.pi / 2, -1.0, N)

    def once():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mb.SingularPassageWarning)
            traj = mb.simulate(
                model,
                q0,
                qd0,
                T_END,
                ts=jnp.asarray(TS),
                throw=False,
                formulation=formulation,
                rtol=rtol,
                atol=rtol / 100,
            )
        jax.block_until_ready(traj.q)
        return traj

    start = time.perf_counter()
    once()
    first = time.perf_counter() - start
    start = time.perf_counter()
    traj = once()
    second = time.perf_counter() - start
    q = np.asarray(traj.q)
    reached = np.all(np.isfinite(q), axis=1)
    q = np.where(reached[:, None], q, np.nan)  # the saved states after a stop are inf
    with np.errstate(invalid="ignore"):
        b0 = q[:, :2] + 0.5 * np.stack([np.cos(q[:, 2]), np.sin(q[:, 2])], axis=1)
    residuals = jax.jit(jax.vmap(lambda x: model.phi(x, 0.0)))(jnp.asarray(q[reached]))
    phi = float(np.max(np.abs(np.asarray(residuals))))
    cranks = np.unwrap(q[reached][:, 2 : 3 * (N + 1) : 3], axis=0)
    return dict(
        b0=b0,
        reached=reached,
        phi=phi,
        spread=float(np.max(np.ptp(cranks, axis=1))),
        result=str(traj.result).split("<")[-1].rstrip(">") or "success",
        t_stop=float(traj.t_stop),
        steps=int(traj.num_steps),
        passage=(None if traj.t_passage is None else float(traj.t_passage)),
        compile=first - second,
        run=second,
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, nargs="*", default=[2, 40])
    parser.add_argument(
        "--formulations", nargs="*", default=["augmented_lagrangian", "projection", "null_space"]
    )
    parser.add_argument("--tight", action="store_true", help="also rtol 1e-10, atol 1e-12")
    args = parser.parse_args()
    lines = [
        f"{'N':>3} {'formulation':<20} {'rtol':>5} {'max |B0 - ref| m':>16} {'max |Phi|':>9} "
        f"{'crank spread':>12} {'t_stop':>6} {'passage t':>9} {'steps':>6} "
        f"{'compile s':>9} {'run s':>7} {'scipy ref s':>11}  result"
    ]
    print(lines[0], flush=True)
    for N in args.n:
        ref, ref_time = reference(N)
        for formulation, rtol in [
            (f, tol)
            for f in args.formulations
            for tol in ((1e-8, 1e-10) if args.tight else (1e-8,))
        ]:
            r = run(N, formulation, rtol)
            err = float(np.max(np.linalg.norm(r["b0"][r["reached"]] - ref[r["reached"]], axis=1)))
            passage = "-" if r["passage"] is None else f"{r['passage']:.3f}"
            line = (
                f"{N:>3} {formulation:<20} {rtol:>5.0e} {err:>16.3g} {r['phi']:>9.2g} "
                f"{r['spread']:>12.2g} {r['t_stop']:>6.2f} {passage:>9} {r['steps']:>6} "
                f"{r['compile']:>9.1f} {r['run']:>7.2f} {ref_time:>11.3f}  {r['result']}"
            )
            print(line, flush=True)
            lines.append(line)
    out = os.path.join(os.path.dirname(__file__), "results", "a02.txt")
    header = (
        f"# python benchmarks/bench_a02.py --n {' '.join(map(str, args.n))} "
        f"--formulations {' '.join(args.formulations)}{' --tight' if args.tight else ''}; "
        f"jax {jax.__version__} on {jax.devices()[0].platform}, {os.cpu_count()} cores; "
        f"{time.strftime('%Y-%m-%d')}"
    )
    with open(out, "w") as f:
        f.write("\n".join([header, *lines]) + "\n")


if __name__ == "__main__":
    main()
