"""Benchmark: compile time (trace + lower, and XLA compile) and its growth with the number of pairs.

    python benchmarks/bench_compile.py             # robot + N-four-bar N = 1, 10, 50, 100
    python benchmarks/bench_compile.py --quick     # robot + N = 1, 10, 50

Mobile robot (14 pairs): `mb.simulate` (20 s run), `mb.reactions` at one state and
`mb.solvability` at one configuration, each jitted and compiled from scratch. N-four-bar
(3 N + 1 revolutes): `mb.simulate` compiled for growing N; the fitted exponent a of
compile ~ N^a (least squares on log-log) says whether the growth is at most linear (a <= 1).
Pairs of one type are evaluated by one vmapped kernel (jaxmb/_groups.py), so the traced
program does not grow with N; what grows is only the size of the dense linear algebra.
"""

import argparse

from _common import compile_timed, machine, table

import jax.numpy as jnp
import numpy as np

import jaxmb as mb
from jaxmb.models import mobile_robot, n_four_bar


def robot_compile_times():
    model = mobile_robot.build()
    q0, qd0 = model.q0, mobile_robot.initial_velocity(model)
    ts = jnp.linspace(0.0, 20.0, 201)
    out = {}
    for name, fn, args in [
        ("simulate", lambda m, q, qd, ts: mb.simulate(m, q, qd, 20.0, ts=ts), (model, q0, qd0, ts)),
        ("reactions", lambda m, q, qd: mb.reactions(m, q, qd, 0.0), (model, q0, qd0)),
        ("solvability", lambda m, q: mb.solvability(m, q, 0.0), (model, q0)),
    ]:
        _, trace_s, xla_s = compile_timed(fn, *args)
        out[name] = (trace_s, xla_s)
    return out


def n_four_bar_compile_times(sizes):
    out = {}
    for N in sizes:
        model = n_four_bar.build(N)
        qd0 = n_four_bar.velocity(np.pi / 2, -1.0, N)
        ts = jnp.linspace(0.0, 1.0, 11)
        _, trace_s, xla_s = compile_timed(
            lambda m, q, qd, ts: mb.simulate(m, q, qd, 1.0, ts=ts), model, model.q0, qd0, ts)
        out[N] = (len(model.pairs), trace_s, xla_s)
    return out


def exponent(sizes, values):
    """a in values ~ sizes^a, least squares on logs."""
    return float(np.polyfit(np.log(sizes), np.log(values), 1)[0])


def run(quick=False):
    robot = robot_compile_times()
    table("Compile time, mobile robot (14 pairs)", ["function", "trace+lower s", "XLA s",
                                                     "total s"],
          [[k, a, b, a + b] for k, (a, b) in robot.items()])
    sizes = (1, 10, 50) if quick else (1, 10, 50, 100)
    nfb = n_four_bar_compile_times(sizes)
    totals = [a + b for _, a, b in nfb.values()]
    a = exponent([nfb[N][0] for N in sizes], totals)
    table(f"Compile time of simulate, N-four-bar (fitted growth: pairs^{a:.2f})",
          ["N", "pairs", "trace+lower s", "XLA s", "total s"],
          [[N, p, t, x, t + x] for N, (p, t, x) in nfb.items()])
    return dict(robot={k: dict(trace_s=a_, xla_s=b_, total_s=a_ + b_)
                       for k, (a_, b_) in robot.items()},
                n_four_bar={N: dict(pairs=p, total_s=t + x) for N, (p, t, x) in nfb.items()},
                growth_exponent=a)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    print(machine())
    return run(args.quick)


if __name__ == "__main__":
    main()
