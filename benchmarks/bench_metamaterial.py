"""Benchmark: rotating-squares (auxetic) linkages of n x n plates, analysed at scale.

    python benchmarks/bench_metamaterial.py                 # 10 x 10 and 20 x 20
    python benchmarks/bench_metamaterial.py --sizes 4 10 20 30 --dense-up-to 20

Per size, side by side in one run (OPENBLAS_NUM_THREADS=1), seconds as first call (compile
included) / median of 3 after:

- `mb.solvability` of the grid held at plate (0, 0), by seed 001's pivoted QR (method "qr",
  up to --dense-up-to) and by method "sparse"; both sets of verdicts checked against an
  independent numpy computation (the self-stresses null(C^T) from numpy's SVD of C: pair X
  unique iff no self-stress has a component on X's rows), numpy timed too;
- `mb.statics` of the grid pulled outwards at its left and right edges (1 N per edge plate)
  with its mode held by the "mode" driver: `mb.Compliance` (every hinge its own ligament
  stiffness, log-uniform over a decade) against
  scipy (lstsq for a particular solution, then scipy.sparse LSQR on K^(1/2) C: lambda* =
  K C y, C^T K C y = f), their relative difference, and the min-norm answer beside it (what a
  rigid model alone says): the largest hinge force of each;
- 1 s of motion of the free grid pulled at the same edges (the default formulation, 4 n N per
  edge plate, as examples/metamaterial.py): time, steps and the energy balance (kinetic energy
  against the pull's work, relative);
- the inverse-design loss of examples/metamaterial.py (the 8-norm of the hinge forces of the
  pulled, held grid, through Compliance statics, as a function of every plate size and hinge
  offset): the jitted forward and reverse-mode `value_and_grad`, compile (trace + XLA) and run.
"""

import argparse
import os

HERE = os.path.dirname(os.path.abspath(__file__))

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import scipy.sparse.linalg as spla  # noqa: E402
from _common import block, machine, median_time, table  # noqa: E402

import jaxmb as mb  # noqa: E402
from jaxmb.models import auxetic  # noqa: E402


def first_and_median(fn, repeats=3):
    start = time.perf_counter()
    out = block(fn())
    first = time.perf_counter() - start
    return out, first, median_time(lambda: block(fn()), repeats)


def numpy_verdicts(model, C):
    """Unique per pair from numpy's SVD: the self-stress basis N (rows x p) = the left singular
    vectors of C beyond its rank; pair X unique iff N restricted to X's rows is zero."""
    U, s, _ = np.linalg.svd(C, full_matrices=True)
    rank = int(np.sum(s > 1e-9 * s[0]))
    N = U[:, rank:]
    out = []
    for name in model.pair_names:
        rows = np.arange(model.num_rows)[model.rows(name)]
        out.append(bool(np.linalg.norm(N[rows]) < 1e-8))
    return np.array(out), rank


def scipy_compliance(C, f, k):
    lam_p = np.linalg.lstsq(C.T, f, rcond=None)[0]
    A = sp.diags(np.sqrt(k)) @ sp.csr_matrix(C)
    y = spla.lsqr(A, lam_p / np.sqrt(k), atol=1e-14, btol=1e-14, iter_lim=200_000)[0]
    return k * (C @ y)


def ligament_stiffness(model):
    """Every hinge its own ligament stiffness, log-uniform over a decade (1e6 to 1e7 N/m)."""
    rng = np.random.default_rng(0)
    return {
        name: float(10 ** rng.uniform(6, 7))
        for name in model.pair_names
        if name.startswith(("H", "V"))
    }


def largest_hinge_force(model, lam):
    lam = np.asarray(lam)
    return max(
        float(np.linalg.norm(lam[model.rows(name)]))
        for name in model.pair_names
        if name.startswith(("H", "V"))
    )


def motion(n):
    pull = 4.0 * n
    model = auxetic.build(n, pull=pull)
    ts = jnp.linspace(0.0, 1.0, 11)

    def go():
        return mb.simulate(model, model.q0, jnp.zeros(model.n), 1.0, ts=ts)

    traj, first, seconds = first_and_median(go)
    q, qd = np.asarray(traj.q), np.asarray(traj.qd)
    kinetic = 0.5 * np.sum(np.asarray(model.mass_diagonal()) * qd**2, axis=1)
    left, right = [3 * n * j for j in range(n)], [3 * (n - 1 + n * j) for j in range(n)]
    work = pull * (
        np.sum(q[:, right] - q[0, right], axis=1) - np.sum(q[:, left] - q[0, left], axis=1)
    )
    return (
        first,
        seconds,
        int(traj.num_steps),
        float(np.max(np.abs(kinetic - work)) / np.max(kinetic)),
    )


def design(n):
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
    import metamaterial

    loss = metamaterial.design_loss(n, metamaterial.stiffness(n))
    params = (jnp.ones(n * n), jnp.zeros((len(auxetic.hinges(n, n)), 2)))
    out = []
    for fn in (lambda p: loss(p)[0], jax.value_and_grad(lambda p: loss(p)[0])):
        start = time.perf_counter()
        lowered = jax.jit(fn).lower(params)
        traced = time.perf_counter() - start
        compiled = lowered.compile()
        compile_s = time.perf_counter() - start
        block(compiled(params))
        out += [compile_s, traced, median_time(lambda: block(compiled(params)), 5)]
    return out


def scaling_case(n, gradient=True, repeats=3):
    """One grid size for bench_scaling.py: (compile, run) seconds of the sparse solvability of
    the held grid, the Compliance statics of the pulled one (mode held), 1 s of motion of the
    free pulled grid and the inverse-design `value_and_grad`; compile is the first call minus
    the median run (gradient: trace, lowering and XLA, as `design`)."""
    model = auxetic.build(n)
    loaded = auxetic.build(n, pull=1.0, lock_mode=True)
    method = mb.Compliance(ligament_stiffness(loaded), default=1e7)
    out = {"plates": n * n, "rows": model.num_rows}
    cases = (
        ("solvability", lambda: mb.solvability(model, model.q0, method="sparse")),
        ("statics", lambda: mb.statics(loaded, loaded.q0, method=method)),
    )
    for name, fn in cases:
        _, first, seconds = first_and_median(fn, repeats)
        out[name] = (first - seconds, seconds)
    m_first, m_s, _, balance = motion(n)
    out["motion"] = (m_first - m_s, m_s)
    out["energy balance"] = balance
    if gradient:
        _, _, _, gc, _, gr = design(n)
        out["gradient"] = (gc, gr)
    return out


def run(sizes, dense_up_to, gradient_up_to):
    rows, extra = [], []
    for n in sizes:
        model = auxetic.build(n)
        q = model.q0
        C = np.asarray(model.C(q, 0.0))
        dense = n <= dense_up_to
        if dense:
            report, qr_first, qr_s = first_and_median(lambda: mb.solvability(model, q))
            start = time.perf_counter()
            expected, _ = numpy_verdicts(model, C)
            numpy_s = time.perf_counter() - start
        sparse, sp_first, sp_s = first_and_median(lambda: mb.solvability(model, q, method="sparse"))
        if dense:
            agree = (
                bool(np.array_equal(np.asarray(report.solvable), expected)),
                bool(np.array_equal(np.asarray(sparse.solvable), expected)),
            )

        loaded = auxetic.build(n, pull=1.0, lock_mode=True)
        ql = loaded.q0
        stiffness = ligament_stiffness(loaded)
        method = mb.Compliance(stiffness, default=1e7)
        compliant, st_first, st_s = first_and_median(lambda: mb.statics(loaded, ql, method=method))
        Cl = np.asarray(loaded.C(ql, 0.0))
        f = np.asarray(loaded.forces(ql, jnp.zeros(loaded.n), 0.0))
        k = np.concatenate(
            [np.full(loaded.pair(p).num_rows, stiffness.get(p, 1e7)) for p in loaded.pair_names]
        )
        start = time.perf_counter()
        reference = scipy_compliance(Cl, f, k)
        scipy_s = time.perf_counter() - start
        diff = float(
            np.max(np.abs(np.asarray(compliant.lam) - reference)) / np.max(np.abs(reference))
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mb.NonUniqueReactionWarning)
            rigid, _, mn_s = first_and_median(lambda: mb.statics(loaded, ql))
        rows.append(
            [
                f"{n} x {n}",
                model.num_rows,
                int(sparse.redundancy),
                int(np.sum(sparse.solvable)),
                f"{agree[0]}/{agree[1]}" if dense else "-",
                f"{qr_first:.3g} / {qr_s:.3g}" if dense else "-",
                f"{sp_first:.3g} / {sp_s:.3g}",
                f"{numpy_s:.3g}" if dense else "-",
                f"{st_first:.3g} / {st_s:.4g}",
                f"{scipy_s:.3g}",
                f"{diff:.1e}",
                f"{mn_s:.4g}",
                f"{largest_hinge_force(loaded, compliant.lam):.4g}",
                f"{largest_hinge_force(loaded, rigid.lam):.4g}",
            ]
        )
        m_first, m_s, steps, balance = motion(n)
        row = [f"{n} x {n}", f"{m_first:.3g} / {m_s:.3g}", steps, f"{balance:.1e}"]
        if n <= gradient_up_to:
            fc, ft, fr, gc, gt, gr = design(n)
            row += [
                f"{fc:.3g} ({ft:.3g})",
                f"{fr:.3g}",
                f"{gc:.3g} ({gt:.3g})",
                f"{gr:.3g}",
                f"{gr / fr:.2g}",
            ]
        else:
            row += ["-"] * 5
        extra.append(row)
    table(
        "Rotating squares, n x n plates: seconds as first call / median of 3 (solvability of "
        "the held grid; statics of the grid pulled at two edges, mode held)",
        [
            "grid",
            "rows",
            "p",
            "unique pairs",
            "verdicts = numpy (qr/sparse)",
            "solvability qr",
            "solvability sparse",
            "numpy SVD",
            "statics Compliance",
            "scipy LSQR",
            "rel. diff",
            "statics min-norm",
            "max hinge force Compliance N",
            "max hinge force min-norm N",
        ],
        rows,
    )
    table(
        "1 s of motion (first call / median) and the inverse-design loss: compile (of it "
        "trace) and run, seconds",
        [
            "grid",
            "motion 1 s",
            "steps",
            "energy balance",
            "loss compile (trace)",
            "loss run",
            "gradient compile (trace)",
            "gradient run",
            "gradient / loss",
        ],
        extra,
    )
    return rows, extra


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10, 20])
    parser.add_argument(
        "--dense-up-to",
        type=int,
        default=20,
        help="largest grid for the dense QR test and numpy's SVD",
    )
    parser.add_argument(
        "--gradient-up-to",
        type=int,
        default=20,
        help="largest grid for the inverse-design gradient",
    )
    args = parser.parse_args(argv)
    print(machine())
    return run(args.sizes, args.dense_up_to, args.gradient_up_to)


if __name__ == "__main__":
    main()
