"""Benchmark: the augmented Lagrangian integrated two ways on IFToMM A02 (the N-four-bar over
20 s, through its singular positions): simulate's default (the index-1 accelerations of the
augmented-Lagrangian iteration, diffrax's adaptive Tsit5, mass-orthogonal projections after
every step) against the fixed-step index-3 scheme of the IFToMM reference solvers (ALI3-P:
trapezoidal rule, Newton iterations on the positions, projections of velocities and
accelerations; Bayo & Ledesma 1996; Cuadrado et al. 2000; ../shared/notes/augmented_lagrangian.md).

    python benchmarks/bench_index3.py                  # N = 2 and 40, h = 5e-3 ... 2.5e-4
    python benchmarks/bench_index3.py --n 2 --steps 1e-3

The index-3 scheme here (`ali3p`, jitted, `lax.scan` over the steps) uses jaxmb's model (Phi,
the per-pair blocks of C, gamma) and its factorization of S = M + a C'^T C' (dense up to 24
bodies, the sparse static-pattern block Cholesky above; rows scaled by D as in
`mb.AugmentedLagrangian`). With the trapezoidal rule qd_{n+1} = (2/h) q_{n+1} - qd^_n and
qdd_{n+1} = (4/h^2) q_{n+1} - qdd^_n, the dynamic equations times h^2/4,

    f(q) = (h^2/4) (M qdd(q) + C'^T (lambda + alpha Phi'(q)) - F) = 0,

are solved by Newton iterations with the tangent S = M + (h^2/4) alpha C'^T C' (A02 has no
stiffness or damping terms: K = D = 0), lambda <- lambda + alpha Phi' after each iteration,
until max |dq| <= `NEWTON_TOL` (at most `MAX_NEWTON` iterations; a step that does not get
there is counted). Then qd and qdd are projected with the same factor:
S qd* = M qd, S qdd* = M qdd - (h^2/4) alpha C'^T D (Cdot qd) (scleronomic rows: Phi_t = 0).
Error: the largest distance of B0 from the reduced one-degree-of-freedom solution over 401
instants (`bench_a02.reference`). Both run in this process, one after the other, each timed as
the second of two calls (compile apart).
"""

import argparse
import time
import warnings

import _common  # noqa: F401  (first: float64, the XLA flags, jaxmb from the checkout)
import bench_a02
import jax
import jax.numpy as jnp
import numpy as np
from _common import machine, table

import jaxmb as mb
from jaxmb._formulations import augmented_lagrangian as al
from jaxmb._model.blocks import constraint_blocks
from jaxmb.models import n_four_bar

PENALTY = 1e8
"""(h^2/4) alpha, the penalty of the tangent S = M + (h^2/4) alpha C'^T C', dimensionless (rows
scaled to unit norm in the metric of M^-1): `mb.AugmentedLagrangian`'s default penalty, so
that both integrations factorize the same matrix. Smaller values (alpha = 1e8, (h^2/4) alpha
= 25 at h = 1e-3) left Newton unconverged near the singular positions and the motion jumped
to the other branch (B0 2 m off)."""
NEWTON_TOL = 1e-11
"""Newton's stopping test, max |dq| in metres or radians."""
MAX_NEWTON = 12


def ali3p(model, h, num_steps, save_every, penalty=None):
    """A jitted run(q0, qd0) -> (q at every `save_every`-th step, Newton iterations, steps whose
    Newton iteration did not converge)."""
    pairs, groups, _, _ = al.pattern(model)
    mass = model.mass_diagonal()
    dense = al.is_dense(model)

    penalty = PENALTY if penalty is None else penalty
    alpha = 4.0 * penalty / (h * h)

    def factor(q):
        """S = M + (h^2/4) alpha C'^T C' at q, factorized (`mb.AugmentedLagrangian`'s system)."""
        if dense:
            return al.dense_system(mass, model.C(q, 0.0), penalty)
        kin = constraint_blocks(
            pairs, groups, model.num_rows, model.kind, q, jnp.zeros(model.n), 0.0
        )
        return al.system(model, mass, kin.blocks, penalty)

    def phi_scaled(s, q):
        return s.scale * model.phi(q, 0.0)  # every A02 row is holonomic

    def step(carry, _):
        q, qd, qdd, lam = carry
        qd_hat = 2.0 / h * q + qd
        qdd_hat = 4.0 / (h * h) * q + 4.0 / h * qd + qdd
        q1 = q + h * qd + 0.5 * h * h * qdd  # predictor

        def residual(q1, lam):
            s = factor(q1)
            qd1, qdd1 = 2.0 / h * q1 - qd_hat, 4.0 / (h * h) * q1 - qdd_hat
            f = mass * qdd1 + s.CT(lam + alpha * phi_scaled(s, q1)) - model.forces(q1, qd1, 0.0)
            return s, 0.25 * h * h * f

        def newton(state):
            q1, lam, _, k = state
            s, f = residual(q1, lam)
            dq = -s.S.solve(f)
            q1 = q1 + dq
            lam = lam + alpha * phi_scaled(s, q1)
            return q1, lam, jnp.max(jnp.abs(dq)), k + 1

        q1, lam, last, iterations = jax.lax.while_loop(
            lambda st: (st[2] > NEWTON_TOL) & (st[3] < MAX_NEWTON),
            newton,
            (q1, lam, jnp.asarray(jnp.inf), 0),
        )
        qd1, qdd1 = 2.0 / h * q1 - qd_hat, 4.0 / (h * h) * q1 - qdd_hat
        s = factor(q1)
        qd1 = s.S.solve(mass * qd1)  # S qd* = M qd
        # S qdd* = M qdd - (h^2/4) alpha C'^T D (Cdot qd): Cdot qd = -gamma for scleronomic rows
        gamma = model.gamma(q1, qd1, 0.0)
        qdd1 = s.S.solve(mass * qdd1 + 0.25 * h * h * alpha * s.CT(s.scale * gamma))
        return (q1, qd1, qdd1, lam), (q1, iterations, last > NEWTON_TOL)

    @jax.jit
    def run(q0, qd0):
        qdd0 = mb.accelerations(model, q0, qd0, 0.0)
        lam0 = jnp.zeros(model.num_rows, q0.dtype)
        _, (qs, iterations, failed) = jax.lax.scan(
            step, (q0, qd0, qdd0, lam0), None, length=num_steps
        )
        qs = jnp.concatenate([q0[None], qs])[::save_every]
        return qs, jnp.sum(iterations), jnp.sum(failed)

    return run


def b0_of(q):
    return q[:, :2] + 0.5 * np.stack([np.cos(q[:, 2]), np.sin(q[:, 2])], axis=1)


def timed(fn, *args):
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first = time.perf_counter() - start
    start = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    second = time.perf_counter() - start
    return out, first - second, second


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[2, 40])
    parser.add_argument("--penalty", type=float, nargs="+", default=[PENALTY])
    parser.add_argument(
        "--steps", type=float, nargs="+", default=[5e-3, 2.5e-3, 1e-3, 5e-4, 2.5e-4]
    )
    args = parser.parse_args(argv)
    print(machine())
    rows = []
    for N in args.n:
        reference, _ = bench_a02.reference(N)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mb.SingularPassageWarning)
            adaptive = bench_a02.run(N, mb.AugmentedLagrangian())
        error = float(np.nanmax(np.linalg.norm(adaptive["b0"] - reference, axis=1)))
        rows.append(
            [N, "adaptive Tsit5 (default)", "rtol 1e-8", adaptive["steps"], "-", error,
             adaptive["compile"], adaptive["run"]]
        )  # fmt: skip
        model = n_four_bar.build(N)
        q0, qd0 = model.q0, jnp.asarray(n_four_bar.velocity(np.pi / 2, -1.0, N))
        for h, penalty in ((h, p) for p in args.penalty for h in args.steps):
            num_steps = int(round(bench_a02.T_END / h))
            save_every, rest = divmod(num_steps, len(bench_a02.TS) - 1)
            if rest:
                raise SystemExit(f"h = {h:g} must divide the output interval 0.05 s")
            run = ali3p(model, h, num_steps, save_every, penalty)
            (qs, iterations, failed), compile_s, run_s = timed(run, q0, qd0)
            qs = np.asarray(qs)
            error = float(np.nanmax(np.linalg.norm(b0_of(qs) - reference, axis=1)))
            note = f"{int(iterations) / num_steps:.2f} Newton/step"
            if int(failed):
                note += f", {int(failed)} steps unconverged"
            setting = f"h = {h:g}, (h^2/4) alpha = {penalty:g}"
            rows.append([N, "index-3 ALI3-P", setting, num_steps, note, error, compile_s, run_s])
            print(rows[-1], flush=True)
    table(
        "IFToMM A02, 20 s: the augmented Lagrangian adaptive (index 1 + projections) vs fixed-step "
        "index 3 (ALI3-P, trapezoidal); error: max |B0 - reduced solution| over 401 instants",
        ["N", "integration", "setting", "steps", "Newton", "error m", "compile s", "run s"],
        rows,
    )


if __name__ == "__main__":
    main()
