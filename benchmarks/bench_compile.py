"""Benchmark: compile time (trace + lower, and XLA compile) and its growth with the number of pairs;
first- and second-process times with the compilation cache and program store.

    python benchmarks/bench_compile.py             # robot + N-four-bar N = 1, 10, 50, 100
    python benchmarks/bench_compile.py --quick     # robot + N = 1, 10, 50 (no CLI/demo runs)

Mobile robot (14 pairs): `mb.simulate` (20 s run), `mb.reactions` at one state and
`mb.solvability` at one configuration, each jitted and compiled from scratch. N-four-bar
(3 N + 1 revolutes): `mb.simulate` compiled for growing N; the fitted exponent a of
compile ~ N^a (least squares on log-log) says whether the growth is at most linear (a <= 1).
Pairs of one type are evaluated by one vmapped kernel (jaxmb/_groups.py), so the traced
program does not grow with N; what grows is only the size of the dense linear algebra.

Second process (issue 17): two fresh processes with one empty cache folder
(`mb.enable_compilation_cache(path)`) time the first eager call of simulate, reactions,
solvability and jax.grad of a reaction loss, for the robot (2 s run) and the N-four-bar
(N = 10, 1 s): the first process traces and compiles, the second loads (the eager calls'
programs traced from the program store, the gradient's compiled from the compilation cache;
the gradient is traced again). The same for the command line: `jaxmb simulate mobile_robot
--t1 2` and `jaxmb demo`, each run twice on an empty cache, three such pairs (targets:
second / first <= 0.35 and <= 0.3, the median pair).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

import jax.numpy as jnp
import numpy as np
from _common import compile_timed, machine, table

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
            lambda m, q, qd, ts: mb.simulate(m, q, qd, 1.0, ts=ts), model, model.q0, qd0, ts
        )
        out[N] = (len(model.pairs), trace_s, xla_s)
    return out


# first eager calls in a fresh process: (model, seconds) per analysis, as JSON on stdout
_FIRST_CALLS = textwrap.dedent("""
    import json, sys, time
    import jax, jax.numpy as jnp
    import jaxmb as mb
    from jaxmb.models import mobile_robot, n_four_bar
    mb.enable_compilation_cache(sys.argv[1])

    def timed(fn):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        return time.perf_counter() - start

    def robot(a):
        return mobile_robot.build(a)

    def four_bar(length):
        return n_four_bar.build(10, length=length)

    cases = {
        "robot": (robot, 0.05, mobile_robot.initial_velocity, 2.0),
        "n_four_bar N=10": (four_bar, 1.0, lambda m: n_four_bar.velocity(1.5707963267948966,
                                                                         -1.0, 10), 1.0),
    }
    out = {}
    for name, (build, p, velocity, t1) in cases.items():
        model = build(p)
        qd0 = velocity(model)
        ts = jnp.linspace(0.0, t1, 41)
        row = {}
        row["simulate"] = timed(lambda: mb.simulate(model, model.q0, qd0, t1, ts=ts).q)
        traj = mb.simulate(model, model.q0, qd0, t1, ts=ts)
        row["reactions"] = timed(lambda: mb.reactions(model, traj).lam)
        row["solvability"] = timed(lambda: mb.solvability(model, model.q0, 0.0).solvable)

        def loss(p):
            m = build(p)
            run = mb.simulate(m, m.q0, velocity(m), t1, ts=ts)
            return jnp.mean(mb.reactions(m, run).lam ** 2)

        row["gradient"] = timed(lambda: jax.grad(loss)(p))
        out[name] = row
    print(json.dumps(out))
""")


def _fresh_process(argv, env=None):
    """Wall time of one fresh process and its stdout."""
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed: {done.stderr[-2000:]}")
    return wall, done.stdout


def second_process_times(with_commands=True, repeats=3):
    """First vs second fresh process on one empty cache: per-call times of the first eager
    calls, and (with_commands) the wall times of the CLI simulate and the demo (`repeats`
    pairs of runs, each on a new empty cache: the pair with the median ratio)."""
    calls, commands = {}, {}
    with tempfile.TemporaryDirectory() as cache:
        runs = [
            json.loads(
                _fresh_process([sys.executable, "-c", _FIRST_CALLS, cache])[1]
                .strip()
                .splitlines()[-1]
            )
            for _ in range(2)
        ]
        for model in runs[0]:
            calls[model] = {k: (runs[0][model][k], runs[1][model][k]) for k in runs[0][model]}
    if with_commands:
        jaxmb = os.path.join(os.path.dirname(sys.executable), "jaxmb")
        for name, args in (
            (
                "jaxmb simulate mobile_robot --t1 2",
                ["simulate", "mobile_robot", "--t1", "2", "--out"],
            ),
            ("jaxmb demo", ["demo", "--out"]),
        ):
            pairs = []
            for _ in range(repeats):
                with tempfile.TemporaryDirectory() as folder:
                    env = dict(
                        os.environ,
                        JAXMB_NO_CACHE="",
                        JAX_COMPILATION_CACHE_DIR=os.path.join(folder, "cache"),
                    )
                    out = os.path.join(folder, "r.npz" if "simulate" in name else "demo")
                    pairs.append(
                        tuple(_fresh_process([jaxmb, *args, out], env)[0] for _ in range(2))
                    )
            commands[name] = sorted(pairs, key=lambda p: p[1] / p[0])[len(pairs) // 2]
    return calls, commands


def exponent(sizes, values):
    """a in values ~ sizes^a, least squares on logs."""
    return float(np.polyfit(np.log(sizes), np.log(values), 1)[0])


def run(quick=False):
    robot = robot_compile_times()
    table(
        "Compile time, mobile robot (14 pairs)",
        ["function", "trace+lower s", "XLA s", "total s"],
        [[k, a, b, a + b] for k, (a, b) in robot.items()],
    )
    sizes = (1, 10, 50) if quick else (1, 10, 50, 100)
    nfb = n_four_bar_compile_times(sizes)
    totals = [a + b for _, a, b in nfb.values()]
    a = exponent([nfb[N][0] for N in sizes], totals)
    table(
        f"Compile time of simulate, N-four-bar (fitted growth: pairs^{a:.2f})",
        ["N", "pairs", "trace+lower s", "XLA s", "total s"],
        [[N, p, t, x, t + x] for N, (p, t, x) in nfb.items()],
    )
    calls, commands = second_process_times(with_commands=not quick)
    table(
        "First eager call in a fresh process, with mb.enable_compilation_cache: first "
        "process (traces and compiles) vs second (loads)",
        ["model", "analysis", "first s", "second s", "second / first"],
        [[m, k, a_, b_, b_ / a_] for m, row in calls.items() for k, (a_, b_) in row.items()],
    )
    if commands:
        table(
            "Command line, two runs on an empty cache, the median of 3 such pairs "
            "(targets: simulate <= 0.35, demo <= 0.3)",
            ["command", "first s", "second s", "second / first"],
            [[c, a_, b_, b_ / a_] for c, (a_, b_) in commands.items()],
        )
    return dict(
        robot={k: dict(trace_s=a_, xla_s=b_, total_s=a_ + b_) for k, (a_, b_) in robot.items()},
        n_four_bar={N: dict(pairs=p, total_s=t + x) for N, (p, t, x) in nfb.items()},
        growth_exponent=a,
        second_process={
            m: {k: dict(first_s=a_, second_s=b_) for k, (a_, b_) in row.items()}
            for m, row in calls.items()
        },
        commands={c: dict(first_s=a_, second_s=b_) for c, (a_, b_) in commands.items()},
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    print(machine())
    return run(args.quick)


if __name__ == "__main__":
    main()
