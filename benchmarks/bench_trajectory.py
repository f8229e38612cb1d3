"""Benchmark: single trajectories, jaxmb against the plain numpy/scipy reference, side by side.

    python benchmarks/bench_trajectory.py            # robot 20 s, slider-crank 1 s and 10 s
    python benchmarks/bench_trajectory.py --quick    # robot 20 s, slider-crank 1 s, fewer repeats

Both integrate the same model (rtol 1e-8, atol 1e-10; the reference: the null-space formulation
with Baumgarte alpha = beta = 10; jaxmb: simulate's default formulation, or each of
`--formulations` side by side): jaxmb with `jax.jit(mb.simulate)` (diffrax Tsit5, autodiff rows), the reference with
`scipy.integrate.solve_ivp(RK45)` on hand-coded rows (tests/oracle/reference_numpy.py). The
trajectories are compared at the 201 saved instants (max |q_jaxmb - q_ref|: integration error of
two different Runge-Kutta pairs, expected below 1e-6); compile time is reported separately.
"""

import argparse

import jax.numpy as jnp
import numpy as np
from _common import block, compile_timed, machine, median_time, table
from oracle import reference_numpy as ref

import jaxmb as mb
from jaxmb.models import mobile_robot, slider_crank


def cases(quick):
    """(name, jaxmb model, q0, qd0, t1, reference simulate(t1, ts))."""
    robot = mobile_robot.build()
    sc = slider_crank.build()
    q_sc, qd_sc = ref.slider_crank_state()
    out = [
        (
            "mobile robot 20 s",
            robot,
            robot.q0,
            mobile_robot.initial_velocity(robot),
            20.0,
            ref.simulate_robot,
        ),
        (
            "slider-crank 1 s",
            sc,
            jnp.asarray(q_sc),
            jnp.asarray(qd_sc),
            1.0,
            ref.simulate_slider_crank,
        ),
    ]
    if not quick:
        out.append(
            (
                "slider-crank 10 s",
                sc,
                jnp.asarray(q_sc),
                jnp.asarray(qd_sc),
                10.0,
                ref.simulate_slider_crank,
            )
        )
    return out


def run(quick=False, repeats=None, formulations=("default",)):
    """Rows of the table and a dict of figures per case (and formulation, side by side)."""
    repeats = repeats or (3 if quick else 5)
    rows, figures = [], {}
    for (name, model, q0, qd0, t1, ref_sim), formulation in [
        (c, f) for c in cases(quick) for f in formulations
    ]:
        ts = jnp.linspace(0.0, t1, 201)
        fn = lambda m, q, qd, ts, t1=t1, f=formulation: mb.simulate(  # noqa: E731
            m, q, qd, t1, ts=ts, formulation=f
        )
        if len(formulations) > 1:
            name = f"{name.split(' [')[0]} [{formulation}]"
        compiled, trace_s, xla_s = compile_timed(fn, model, q0, qd0, ts)
        traj = block(compiled(model, q0, qd0, ts))
        t_jax = median_time(lambda: block(compiled(model, q0, qd0, ts)), repeats)
        ts_np = np.asarray(ts)
        result = {}

        def reference():
            result["out"] = ref_sim(t1, ts_np)

        t_ref = median_time(reference, max(1, repeats - 2) if quick else repeats)
        _, q_ref, _, nfev = result["out"]
        err = float(np.max(np.abs(np.asarray(traj.q) - q_ref)))
        steps = int(traj.num_steps)
        rows.append([name, t_jax, t_ref, t_ref / t_jax, err, steps, nfev, trace_s + xla_s])
        figures[name] = dict(
            jaxmb_s=t_jax,
            numpy_s=t_ref,
            ratio=t_ref / t_jax,
            max_dq=err,
            steps=steps,
            numpy_nfev=int(nfev),
            compile_s=trace_s + xla_s,
        )
    table(
        "Single trajectory: jaxmb (jit, Tsit5) vs numpy/scipy reference (RK45), median of "
        f"{repeats}",
        [
            "case",
            "jaxmb s",
            "numpy s",
            "speed-up",
            "max |dq|",
            "jaxmb steps",
            "numpy nfev",
            "compile s",
        ],
        rows,
    )
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument(
        "--formulations",
        nargs="*",
        default=["default"],
        help="simulate formulations, side by side (e.g. null_space default)",
    )
    args = parser.parse_args(argv)
    print(machine())
    return run(args.quick, args.repeats, tuple(args.formulations))


if __name__ == "__main__":
    main()
