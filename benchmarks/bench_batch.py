"""Benchmark: batches of slider-crank trajectories (vmap), jaxmb against a numpy/scipy loop.

    python benchmarks/bench_batch.py                  # batches 1, 64, 1024, 8192
    python benchmarks/bench_batch.py --quick          # batches 1, 64
    python benchmarks/bench_batch.py --robot 1024     # also issue 16's robot batch (~20 min)

The batched factorizations are jaxmb's compiled kernels (`jaxmb._linalg.native`) where pip built them
(the header line says; JAXMB_NATIVE_KERNELS=0 measures the pure-JAX kernels instead).
The script runs with one CPU device per core (JAXMB_CPU_DEVICES=all unless set), the fast
path: `mb.batch.map` spreads every batch over all cores. The device comparison
(`compare_devices`) runs each count in a fresh process: a loop of single jitted runs, one
`jit(vmap)`, `mb.batch.map` in chunks of 64, and `mb.batch.map(cost=pilot)` ordered by the step
counts of pilot runs at rtol 1e-4 (pilot time included); and, on one device, where a vmapped
batch loses: member steps run (sum, lock-step max x N, chunked, chunked after ordering) and
the cost of a right-hand side per member, single vs vmapped.

Every member starts from its own crank angle theta0 in [0, 2 pi) and rate omega0 in [5, 15]
rad/s (closed-form consistent state) and runs 1 s of free motion under gravity. jaxmb:
`jax.jit(jax.vmap(simulate))` compiled once per batch size (compile reported separately).
Reference: the plain Python loop a user would write,
`oracle.reference_numpy.simulate_slider_crank` (tests/oracle) per member; it is timed on
`--loop` members and scaled linearly to the batch (the loop is sequential, so its time is
exactly additive). Right-hand-side evaluations per second count
6 per accepted step of Tsit5 (FSAL) per member. Peak memory is XLA's own account of the
compiled batch (arguments + outputs + temporaries, `Compiled.memory_analysis()`). The batch
is checked against single runs of the reference (max |q| difference at t1).
"""

import argparse
import os
import time

os.environ.setdefault("JAXMB_CPU_DEVICES", "all")  # the fast path: one CPU device per core
import jax
import jax.numpy as jnp
import numpy as np
from _common import block, machine, median_time, table  # noqa: E402  (imports jaxmb)
from oracle import reference_numpy as ref

import jaxmb as mb
from jaxmb.models import slider_crank

T1 = 1.0
FORMULATION = os.environ.get("JAXMB_BENCH_FORMULATION", "default")
"""`simulate(formulation=...)` of every member (`--formulation`; the worker processes inherit
it through the environment)."""


def initial_states(size, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.0, 2 * np.pi, size), rng.uniform(5.0, 15.0, size)


def make_run(model, t1=T1, num_saves=11, rtol=1e-8):
    """run(theta0, omega0) -> (q at the saved times, accepted steps) for one member."""
    ts = jnp.linspace(0.0, t1, num_saves)

    def pose(theta):
        parts = slider_crank.configuration(theta, ref.SC_R, ref.SC_L)
        return jnp.concatenate([jnp.stack(p) for p in parts])

    def run(theta0, omega0):
        q0, dq = jax.jvp(pose, (theta0,), (jnp.ones_like(theta0),))
        traj = mb.simulate(
            model, q0, omega0 * dq, t1, ts=ts, throw=False, rtol=rtol, formulation=FORMULATION
        )
        q = jnp.where(traj.success, traj.q, jnp.nan)
        return q, traj.num_steps

    return run


def run(quick=False, sizes=None, repeats=None, loop=None):
    sizes = sizes or ((1, 64) if quick else (1, 64, 1024, 8192))
    repeats = repeats or (3 if quick else 5)
    loop = loop or (4 if quick else 16)
    model = slider_crank.build()
    one = make_run(model)
    thetas, omegas = initial_states(max(sizes))

    # numpy loop on `loop` members, scaled per trajectory
    start = time.perf_counter()
    ref_final = [
        ref.simulate_slider_crank(T1, np.linspace(0, T1, 11), theta0=th, omega0=om)[1]
        for th, om in zip(thetas[:loop], omegas[:loop])
    ]
    per_traj_ref = (time.perf_counter() - start) / loop

    rows, figures = [], {}
    for size in sizes:
        th, om = jnp.asarray(thetas[:size]), jnp.asarray(omegas[:size])
        start = time.perf_counter()
        lowered = jax.jit(jax.vmap(one)).lower(th, om)
        compiled = lowered.compile()
        compile_s = time.perf_counter() - start
        mem = compiled.memory_analysis()
        peak = (
            None
            if mem is None
            else (mem.argument_size_in_bytes + mem.output_size_in_bytes + mem.temp_size_in_bytes)
        )
        q, steps = block(compiled(th, om))
        reps = repeats if size <= 1024 else max(1, repeats - 2)
        t = median_time(lambda: block(compiled(th, om)), reps)
        n_check = min(size, loop)
        err = float(np.max(np.abs(np.asarray(q[:n_check]) - np.stack(ref_final[:n_check]))))
        q_map, _ = block(mb.batch.map(one, th, om))  # every CPU device, chunks of 64
        t_map = median_time(lambda: block(mb.batch.map(one, th, om)), reps)
        err_map = float(np.max(np.abs(np.asarray(q_map[:n_check]) - np.stack(ref_final[:n_check]))))
        rate = size / t
        rhs_rate = 6 * float(jnp.sum(steps)) / t
        ratio = per_traj_ref * size / t
        map_ratio = per_traj_ref * size / t_map
        rows.append(
            [
                size,
                t,
                rhs_rate,
                t_map,
                per_traj_ref * size,
                ratio,
                map_ratio,
                max(err, err_map),
                compile_s,
                "-" if peak is None else f"{peak / 2**20:.1f}",
            ]
        )
        figures[size] = dict(
            seconds=t,
            traj_per_s=rate,
            rhs_per_s=rhs_rate,
            numpy_loop_s=per_traj_ref * size,
            ratio=ratio,
            max_dq=err,
            map_seconds=t_map,
            map_ratio=map_ratio,
            max_dq_map=err_map,
            devices=jax.device_count(),
            compile_s=compile_s,
            peak_mib=None if peak is None else peak / 2**20,
        )
    table(
        f"Batches of slider-cranks, {T1:g} s each: jaxmb jit(vmap(simulate)) on one device "
        f"and mb.batch.map on {jax.device_count()} CPU device(s) vs the numpy loop (loop "
        f"timed on {loop} members, scaled), median of {repeats}",
        [
            "batch",
            "jit(vmap) s",
            "RHS evals/s",
            "batch.map s",
            "numpy loop s",
            "vmap speed-up",
            "batch.map speed-up",
            "max |dq| vs numpy",
            "compile s",
            "peak MiB",
        ],
        rows,
    )
    return figures


def _rhs_costs(model, size, repeats, inner=100):
    """Seconds per member of one right-hand side, each timed inside one compiled loop of
    `inner` evaluations (t varies, so nothing is hoisted): single state vs vmapped over size."""
    from jaxmb._analyses.simulate import as_formulation
    from jaxmb._formulations.state_ode import VectorField, stabilization_of

    formulation = as_formulation(FORMULATION, model)
    rhs = VectorField(model, stabilization_of(formulation, "default"), formulation)
    q0 = model.q0
    qd0 = mb.consistent_velocity(model, q0, jnp.zeros(model.n))

    def loop(q, qd):
        def body(i, acc):
            return acc + rhs(1e-3 * i, (q, qd), None)[1]

        return jax.lax.fori_loop(0, inner, body, jnp.zeros_like(qd))

    single = jax.jit(loop)
    batched = jax.jit(jax.vmap(loop))
    qs, qds = jnp.tile(q0, (size, 1)), jnp.tile(qd0, (size, 1))
    block(single(q0, qd0))
    block(batched(qs, qds))
    t_single = median_time(lambda: block(single(q0, qd0)), repeats)
    t_batch = median_time(lambda: block(batched(qs, qds)), repeats)
    return t_single / inner, t_batch / (inner * size)


ROBOT_T1 = 20.0


PILOT_RTOL = 1e-4
"""Tolerance of the pilot runs whose step counts order a batch (`mb.batch.map(cost=...)`)."""


def robot_case(size, t1=ROBOT_T1, num_saves=101, rtol=1e-8):
    """The issue-16 robot batch: seed 001's mobile robot with steering amplitude in
    [-0.03, 0.03] and initial speed in [0.05, 0.15] m/s per member (examples/batch_robot.py),
    t1 seconds each: (model at the default parameters, run(amplitude, speed) -> (platform
    path, accepted steps), amplitudes, speeds)."""
    from jaxmb.models import mobile_robot

    ts = jnp.linspace(0.0, t1, num_saves)

    def one(amplitude, speed):
        model = mobile_robot.build(amplitude=amplitude, t_end=t1)
        qd0 = mobile_robot.initial_velocity(model, speed)
        traj = mb.simulate(
            model, model.q0, qd0, t1, ts=ts, throw=False, rtol=rtol, formulation=FORMULATION
        )
        return jnp.where(traj.success, traj.q[:, 0:2], jnp.nan), traj.num_steps

    rng = np.random.default_rng(0)
    amplitudes = jnp.asarray(rng.uniform(-0.03, 0.03, size))
    speeds = jnp.asarray(rng.uniform(0.05, 0.15, size))
    return mobile_robot.build(t_end=t1), one, amplitudes, speeds


def slider_crank_case(size, rtol=1e-8):
    """The slider-crank batch of `run`: (model, run(theta0, omega0), thetas, omegas)."""
    model = slider_crank.build()
    thetas, omegas = (jnp.asarray(x) for x in initial_states(size))
    return model, make_run(model, rtol=rtol), thetas, omegas


CASES = {
    "slider_crank": (slider_crank_case, f"slider-cranks of {T1:g} s"),
    "mobile_robot": (robot_case, f"mobile robots of {ROBOT_T1:g} s (issue 16)"),
}


def batch_paths(size, loop, repeats, case="slider_crank", chunk=mb.batch.DEFAULT_CHUNK, vmap=True):
    """One batch of `size` members of `case` (CASES) three ways on this process's devices;
    returns figures (seconds, loop of single jitted runs scaled from `loop` members, step
    statistics)."""
    model, one, thetas, omegas = CASES[case][0](size)
    single = jax.jit(one)
    block(single(thetas[0], omegas[0]))
    t_loop = (
        median_time(
            lambda: [block(single(a, b)) for a, b in zip(thetas[:loop], omegas[:loop])], repeats
        )
        * size
        / loop
    )
    q_m, steps = block(mb.batch.map(one, thetas, omegas, chunk=chunk))
    t_map = median_time(lambda: block(mb.batch.map(one, thetas, omegas, chunk=chunk)), repeats)
    if vmap:  # one jit(vmap) over the whole batch, on one device
        vmapped = jax.jit(jax.vmap(one))
        q_v, _ = block(vmapped(thetas, omegas))
        t_vmap = median_time(lambda: block(vmapped(thetas, omegas)), repeats)
    else:  # its lock-step cost is the table's "lock-step (max x N)" column
        q_v, t_vmap = q_m, float("nan")
    # the fast path: members ordered by the step counts of loose-tolerance pilot runs
    loose = CASES[case][0](size, rtol=PILOT_RTOL)[1]
    pilot = lambda a, b: loose(a, b)[1]  # noqa: E731
    sorted_map = lambda: mb.batch.map(one, thetas, omegas, chunk=chunk, cost=pilot)  # noqa: E731
    q_s, _ = block(sorted_map())
    t_sorted = median_time(lambda: block(sorted_map()), repeats)
    pilot_steps = np.asarray(block(mb.batch.map(pilot, thetas, omegas, chunk=chunk)))
    t_pilot = median_time(lambda: block(mb.batch.map(pilot, thetas, omegas, chunk=chunk)), repeats)
    rhs_single, rhs_member = _rhs_costs(model, size, repeats)
    steps = np.asarray(steps)

    def chunked(s):
        return int(s[: size // chunk * chunk].reshape(-1, chunk).max(axis=1).sum() * chunk)

    def max_dq(q):
        return float(np.nanmax(np.abs(np.asarray(q) - np.asarray(q_v))))

    return dict(
        size=size,
        devices=jax.device_count(),
        loop_s=t_loop,
        vmap_s=t_vmap,
        map_s=t_map,
        sorted_s=t_sorted,
        pilot_s=t_pilot,
        chunk=chunk,
        steps_sum=int(steps.sum()),
        steps_lockstep=int(steps.max()) * size,
        steps_chunked=chunked(steps),
        steps_sorted=chunked(steps[np.argsort(pilot_steps, kind="stable")]),
        pilot_steps_sum=int(pilot_steps.sum()),
        rhs_single_us=1e6 * rhs_single,
        rhs_batched_us=1e6 * rhs_member,
        max_dq_map_vs_vmap=max_dq(q_m),
        max_dq_sorted_vs_vmap=max_dq(q_s),
    )


def qr_crossover(sizes=(6, 9, 12, 15, 18, 21, 27), batch=64, inner=30, repeats=5):
    """Seconds per member of a vmapped m x (m + 1) pivoted QR: jaxmb's compiled kernel (the
    default where it was built, `jaxmb._linalg.native`) against the two pure-JAX paths that
    `jaxmb._linalg.dense.VECTOR_QR_LIMIT` chooses between without it, the vectorized Householder loop
    and LAPACK one member at a time; each inside one compiled loop of `inner` factorizations."""
    from jaxmb._linalg import native as _native
    from jaxmb._linalg.dense import VECTOR_QR_LIMIT, _lapack_pivoted_qr, householder_pivoted_qr

    rng = np.random.default_rng(0)
    paths = {
        "compiled kernel": _native.pivoted_qr,
        "vectorized": jax.vmap(householder_pivoted_qr),
        "LAPACK per member": lambda A: jax.lax.map(lambda a: _lapack_pivoted_qr(a, "economic"), A),
    }
    if not _native.available(jnp.zeros(())):
        del paths["compiled kernel"]
    rows = []
    for m in sizes:
        A = jnp.asarray(rng.normal(size=(batch, m, m + 1)))
        row = [f"{m} x {m + 1}", m * (m + 1) * m]
        for fn in paths.values():

            def loop(A, fn=fn):
                def body(i, acc):
                    return acc + sum(jnp.sum(x.astype(A.dtype)) for x in fn(A + 1e-9 * i))

                return jax.lax.fori_loop(0, inner, body, 0.0)

            compiled = jax.jit(loop)
            block(compiled(A))
            row.append(1e6 * median_time(lambda: block(compiled(A)), repeats) / inner / batch)
        row.append("vectorized" if row[1] <= VECTOR_QR_LIMIT else "LAPACK")
        rows.append(row)
    table(
        f"Pivoted QR under vmap, batch of {batch}: us per member (one device)",
        [
            "matrix",
            "m n min(m,n)",
            *paths,
            f"without the kernels, jaxmb's choice (limit {VECTOR_QR_LIMIT})",
        ],
        rows,
    )
    return rows


def svd_crossover(sizes=(2, 3, 4, 6, 8, 10, 14, 21), batch=64, inner=30, repeats=5):
    """Microseconds per member of a vmapped thin SVD of k x (k + 1) matrices: jaxmb's compiled
    one-sided Jacobi kernel (`jaxmb._linalg.native.svd`) against LAPACK one member at a time (gesdd
    in a loop: what `jaxmb._linalg.dense.svd` does under vmap above `JACOBI_SVD_LIMIT`), each inside
    one compiled loop of `inner` factorizations; and the 3 x 22 shape of the robot's per-pair
    solvability products."""
    from jaxmb._linalg import native as _native
    from jaxmb._linalg.dense import JACOBI_SVD_LIMIT

    if not _native.available(jnp.zeros(())):
        print("svd crossover: jaxmb's compiled kernels were not built")
        return []
    rng = np.random.default_rng(0)
    paths = {
        "Jacobi kernel": _native.svd,
        "LAPACK per member": lambda A: jax.lax.map(
            lambda a: tuple(jnp.linalg.svd(a, full_matrices=False)), A
        ),
    }
    rows = []
    for k, n in [(k, k + 1) for k in sizes] + [(3, 22)]:
        A = jnp.asarray(rng.normal(size=(batch, k, n)))
        row = [f"{k} x {n}"]
        for fn in paths.values():

            def loop(A, fn=fn):
                def body(i, acc):
                    return acc + sum(jnp.sum(x) for x in fn(A + 1e-9 * i))

                return jax.lax.fori_loop(0, inner, body, 0.0)

            compiled = jax.jit(loop)
            block(compiled(A))
            row.append(1e6 * median_time(lambda: block(compiled(A)), repeats) / inner / batch)
        row.append("Jacobi" if min(k, n) <= JACOBI_SVD_LIMIT else "LAPACK")
        rows.append(row)
    table(
        f"Thin SVD under vmap, batch of {batch}: us per member (one device)",
        ["matrix", *paths, f"jaxmb's choice (limit {JACOBI_SVD_LIMIT})"],
        rows,
    )
    return rows


def compare_devices(size, loop, repeats, counts, case="slider_crank"):
    """batch_paths in fresh processes with 1 .. N CPU devices (JAXMB_CPU_DEVICES), one table."""
    import json
    import os
    import subprocess
    import sys

    figures = []
    for count in counts:
        env = dict(os.environ, JAXMB_CPU_DEVICES=str(count))
        proc = subprocess.run(
            [
                sys.executable,
                __file__,
                "--worker",
                str(size),
                str(loop),
                str(repeats),
                "--case",
                case,
            ],
            env=env,
            capture_output=True,
            text=True,
        )
        if proc.returncode:
            raise RuntimeError(proc.stderr[-3000:])
        figures.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    rows = [
        [
            f["devices"],
            f["loop_s"],
            f["vmap_s"],
            f["map_s"],
            f["sorted_s"],
            f["loop_s"] / f["map_s"],
            f["loop_s"] / f["sorted_s"],
            figures[0]["sorted_s"] / f["sorted_s"],
        ]
        for f in figures
    ]
    table(
        f"Batch of {size} {CASES[case][1]}: loop of single jitted runs (timed on "
        f"{loop}, scaled) vs jit(vmap) vs mb.batch.map (chunks of {figures[0]['chunk']}) "
        f"vs mb.batch.map ordered by pilot step counts (rtol {PILOT_RTOL:g}, pilot time "
        f"included), by number of CPU devices, median of {repeats}",
        [
            "devices",
            "loop s",
            "jit(vmap) s",
            "batch.map s",
            "map+cost s",
            "map vs loop",
            "map+cost vs loop",
            "map+cost vs 1 device",
        ],
        rows,
    )
    f = figures[0]
    table(
        "Where a vmapped batch loses (1 device): member steps run",
        [
            "steps: sum",
            "lock-step (max x N)",
            f"chunks of {f['chunk']}",
            "chunks, ordered by pilot",
            "pilot s",
            "RHS us: single",
            "RHS us/member: vmapped",
            "max |dq| map vs vmap",
            "ordered vs vmap",
        ],
        [
            [
                f["steps_sum"],
                f["steps_lockstep"],
                f["steps_chunked"],
                f["steps_sorted"],
                f["pilot_s"],
                f["rhs_single_us"],
                f["rhs_batched_us"],
                f["max_dq_map_vs_vmap"],
                f["max_dq_sorted_vs_vmap"],
            ]
        ],
    )
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="*")
    parser.add_argument("--repeats", type=int)
    parser.add_argument("--loop", type=int)
    parser.add_argument(
        "--paths",
        type=int,
        default=None,
        help="batch size for the loop / vmap / batch.map comparison on 1 and "
        "all CPU devices (default 1024, --quick 256)",
    )
    parser.add_argument(
        "--robot",
        type=int,
        default=None,
        help="also the issue-16 robot batch of this size (20 s each) on 1 and "
        "all CPU devices, loop timed on 32 members, 1 repeat",
    )
    parser.add_argument(
        "--qr",
        action="store_true",
        help="only the vmapped pivoted-QR table (vectorized vs LAPACK per member)",
    )
    parser.add_argument(
        "--svd",
        action="store_true",
        help="only the vmapped SVD table (Jacobi kernel vs LAPACK per member)",
    )
    parser.add_argument(
        "--formulation",
        default=None,
        help="simulate's formulation for every member (default: simulate's)",
    )
    parser.add_argument("--worker", nargs=3, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--case", default="slider_crank", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.formulation:
        global FORMULATION
        FORMULATION = os.environ["JAXMB_BENCH_FORMULATION"] = args.formulation
    if args.worker:
        import json

        print(
            json.dumps(batch_paths(*args.worker, case=args.case, vmap=args.case == "slider_crank"))
        )
        return None
    print(machine())
    print(f"formulation: {FORMULATION}")
    from jaxmb._linalg import native as _native

    print(
        "batched factorizations: "
        + (
            "jaxmb's compiled kernels (jaxmb._linalg.native)"
            if _native.available(jnp.zeros(()))
            else "pure JAX (compiled kernels not built or switched off)"
        )
    )
    if args.qr:
        return dict(qr=qr_crossover())
    if args.svd:
        return dict(svd=svd_crossover())
    cores = len(os.sched_getaffinity(0))
    paths = compare_devices(
        args.paths or (256 if args.quick else 1024),
        16 if args.quick else 64,
        args.repeats or 3,
        sorted({1, cores}),
    )
    robot = (
        compare_devices(args.robot, 32, 1, sorted({1, cores}), case="mobile_robot")
        if args.robot
        else None
    )
    return dict(
        sizes=run(args.quick, args.sizes, args.repeats, args.loop), paths=paths, robot=robot
    )


if __name__ == "__main__":
    main()
