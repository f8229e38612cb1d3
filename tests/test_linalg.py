"""vmap-safe linear algebra (`jaxmb._linalg.dense`): no batched LAPACK call, same numbers, same
derivatives.

Why it exists: jaxlib 0.10's CPU LAPACK kernels split a batch of matrices over XLA's thread pool
and wait for it; with every pool thread waiting, the program hangs (issue 18). The guard is
structural and deterministic: the lowered programs of the documented vmapped uses are scanned
for LAPACK/BLAS custom calls, and every one must carry `num_batch_dims = "0"` (one matrix per
call). benchmarks/stress_batches.py repeats the hang-prone runs in fresh processes.

References:
- the programs' own text (custom-call attributes) for the structural check;
- jax.numpy / scipy on single matrices for values, JAX's own derivative rules of
  jnp.linalg.svd / qr / solve / pinv (on single matrices, where they are safe) for the custom
  JVPs, and central differences for the reverse-mode gradients of the solves.
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmb as mb
from jaxmb._linalg import dense as la
from jaxmb.models import mobile_robot, slider_crank

ALGEBRA_TOL = 1e-9  # float64 algebra on well-conditioned 6 x 4 .. 8 x 8 matrices


def lapack_calls(lowered):
    """(target, num_batch_dims) of every LAPACK/BLAS custom call in a lowered program."""
    calls = []
    for line in lowered.as_text().splitlines():
        m = re.search(r"custom_call @(\w+)", line)
        if m and re.search(r"lapack|blas", m.group(1)):
            nb = re.search(r'num_batch_dims = "(\d+)"', line)
            calls.append((m.group(1), nb.group(1) if nb else "0"))
    return calls


def assert_unbatched(lowered, what):
    calls = lapack_calls(lowered)
    batched = [c for c in calls if c[1] != "0"]
    assert not batched, f"{what}: batched LAPACK calls {batched}"
    return calls


@pytest.fixture(scope="module")
def robot():
    return mobile_robot.build()


@pytest.fixture(scope="module")
def crank():
    return slider_crank.build()


def test_vmapped_solvability_has_no_batched_lapack_call(robot):
    """Every method, over configurations and nested (configurations x parameter sets); the
    report does factorize (LAPACK calls present, one matrix each)."""
    qs = jnp.tile(robot.q0, (4, 1))
    for method in ("qr", "svd", "rank"):
        f = jax.jit(jax.vmap(lambda q, m=method: mb.solvability(robot, q, 0.0, method=m)))
        calls = assert_unbatched(f.lower(qs), f"solvability(method={method!r})")
        assert calls, "expected single-matrix LAPACK calls in the report"
    nested = jax.jit(jax.vmap(jax.vmap(lambda q: mb.solvability(robot, q, 0.0))))
    assert_unbatched(nested.lower(qs.reshape(2, 2, -1)), "nested vmap of solvability")


def test_vmapped_dynamics_and_reactions_have_no_batched_lapack_call(crank, robot):
    """simulate (null space; "auto": pivoted QR, solve and condition number), inverse dynamics
    along time, accelerations' gradient (reverse mode through the custom JVP), assemble, and the
    robot's min-norm reactions (pseudo-inverse of a redundant C), all under vmap."""
    q0s = jnp.tile(crank.q0, (3, 1))
    qd0 = mb.consistent_velocity(crank, crank.q0, jnp.zeros(crank.n))
    ts = jnp.linspace(0.0, 0.1, 3)
    cases = {
        "simulate": lambda q: mb.simulate(crank, q, qd0, 0.1, ts=ts, throw=False).q,
        "simulate auto": lambda q: (
            mb.simulate(crank, q, qd0, 0.1, ts=ts, throw=False, formulation="auto").q
        ),
        "accelerations grad": lambda q: jax.grad(
            lambda x: jnp.sum(mb.accelerations(crank, x, qd0, 0.0) ** 2)
        )(q),
        "assemble": lambda q: mb.assemble(crank, q + 1e-3),
        "inverse dynamics": lambda q: mb.inverse_dynamics(eqx_replace_q0(crank, q), ts)[1].lam,
    }
    for name, fn in cases.items():
        assert_unbatched(jax.jit(jax.vmap(fn)).lower(q0s), name)
    rq = jnp.tile(robot.q0, (2, 1))
    rqd = mb.consistent_velocity(robot, robot.q0, jnp.zeros(robot.n))
    assert_unbatched(
        jax.jit(jax.vmap(lambda q: mb.reactions(robot, q, rqd, 0.0).lam)).lower(rq),
        "robot reactions",
    )


def eqx_replace_q0(model, q):
    import equinox as eqx

    return eqx.tree_at(lambda m: m.q0, model, q)


def _matrices(rng, shape, count=3):
    return jnp.asarray(rng.standard_normal((count, *shape)))


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5)])
def test_svd_values_and_jvp_match_jax(rng, shape):
    """Safe thin SVD: U s Vt reproduces A; the custom JVP equals jax.numpy's rule on single
    matrices (distinct singular values); vmap equals the loop."""
    A, dA = _matrices(rng, shape), _matrices(rng, shape)
    U, s, Vt = jax.vmap(la.svd)(A)
    np.testing.assert_allclose(jnp.einsum("bij,bj,bjk->bik", U, s, Vt), A, atol=ALGEBRA_TOL)
    for k in range(A.shape[0]):
        (U1, s1, V1), (dU, ds, dV) = jax.jvp(la.svd, (A[k],), (dA[k],))
        (U2, s2, V2), (eU, es, eV) = jax.jvp(
            lambda x: jnp.linalg.svd(x, full_matrices=False), (A[k],), (dA[k],)
        )
        sign = jnp.sign(jnp.sum(U1 * U2, axis=0))  # singular vectors up to sign
        np.testing.assert_allclose(ds, es, atol=ALGEBRA_TOL)
        np.testing.assert_allclose(dU * sign[None, :], eU, atol=1e-8)
        np.testing.assert_allclose(dV * sign[:, None], eV, atol=1e-8)
    batched = jax.vmap(lambda a, d: jax.jvp(la.svd, (a,), (d,))[1][1])(A, dA)
    single = jnp.stack([jax.jvp(la.svd, (A[k],), (dA[k],))[1][1] for k in range(3)])
    np.testing.assert_allclose(batched, single, atol=ALGEBRA_TOL)


@pytest.mark.parametrize("shape", [(7, 4), (5, 5)])
def test_qr_and_pivoted_qr_jvp_match_jax(rng, shape):
    """Thin QR and economic pivoted QR: tangents equal jax.numpy's QR rule (the pivoted one on
    the permuted matrix, pivots held constant)."""
    A, dA = _matrices(rng, shape), _matrices(rng, shape)
    for k in range(A.shape[0]):
        _, (dQ, dR) = jax.jvp(la.qr, (A[k],), (dA[k],))
        _, (eQ, eR) = jax.jvp(jnp.linalg.qr, (A[k],), (dA[k],))
        np.testing.assert_allclose(dQ, eQ, atol=1e-8)
        np.testing.assert_allclose(dR, eR, atol=1e-8)
        (_, _, perm), (dQp, dRp, _) = jax.jvp(la.economic_pivoted_qr, (A[k],), (dA[k],))
        _, (eQp, eRp) = jax.jvp(lambda x: jnp.linalg.qr(x[:, perm]), (A[k],), (dA[k],))
        np.testing.assert_allclose(dQp, eQp, atol=1e-8)
        np.testing.assert_allclose(dRp, eRp, atol=1e-8)


def test_solves_and_pinv_values_and_gradients(rng):
    """solve, solve_triangular (both orientations, vector and matrix right-hand sides) and
    pinv equal jax.numpy under vmap; reverse-mode gradients of the solves equal jax.numpy's
    (which differentiate LAPACK on single matrices)."""
    A = _matrices(rng, (5, 5)) + 5.0 * jnp.eye(5)[None]
    b = _matrices(rng, (5,))
    B = _matrices(rng, (5, 2))
    R = jnp.triu(A)
    L = jnp.tril(A)
    np.testing.assert_allclose(
        jax.vmap(la.solve)(A, b), jnp.linalg.solve(A, b[..., None])[..., 0], atol=ALGEBRA_TOL
    )
    for lower, T in ((False, R), (True, L)):
        for trans in (False, True):
            M = jnp.swapaxes(T, 1, 2) if trans else T
            for rhs in (b, B):
                got = jax.vmap(lambda t, r: la.solve_triangular(t, r, lower=lower, trans=trans))(
                    T, rhs
                )
                want = jnp.linalg.solve(M, rhs if rhs.ndim == 3 else rhs[..., None])
                np.testing.assert_allclose(got, want.reshape(got.shape), atol=ALGEBRA_TOL)
    C = _matrices(rng, (4, 6))
    C = C.at[:, 3].set(C[:, 0] + C[:, 1])  # dependent rows: rank 3, as a redundant C^T
    np.testing.assert_allclose(jax.vmap(la.pinv)(C), jnp.linalg.pinv(C), atol=ALGEBRA_TOL)

    def loss_safe(a, r, x):
        return jnp.sum(la.solve(a, x) ** 2) + jnp.sum(la.solve_triangular(r, x, trans=True) ** 3)

    def loss_jnp(a, r, x):
        return jnp.sum(jnp.linalg.solve(a, x) ** 2) + jnp.sum(jnp.linalg.solve(r.T, x) ** 3)

    g_safe = jax.vmap(jax.grad(loss_safe, argnums=(0, 1, 2)))(A, R, b)
    g_jnp = jax.vmap(jax.grad(loss_jnp, argnums=(0, 1, 2)))(A, R, b)
    for x, y in zip(g_safe, g_jnp):
        np.testing.assert_allclose(x, y, atol=1e-9)
    gp = jax.vmap(jax.grad(lambda c: jnp.sum(jnp.sin(la.pinv(c)))))(C)
    ep = jax.vmap(jax.grad(lambda c: jnp.sum(jnp.sin(jnp.linalg.pinv(c)))))(C)
    np.testing.assert_allclose(gp, ep, atol=1e-9)


def test_stress_vmapped_solvability_in_a_fresh_process():
    """Reduced benchmarks/stress_batches.py: the issue's reproduction (vmapped solvability of
    1024 robot configurations in a fresh process, which hung in 7 of 18 runs with batched
    LAPACK) finishes within its timeout. The full benchmark runs 20 repetitions of each case."""
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
    import stress_batches

    status, seconds = stress_batches.run_case(stress_batches.CASES["solvability x1024"], 300)
    assert status == "ok", f"{status} after {seconds:.0f} s"


def test_factorizations_only_in_linalg_module():
    """Every factorization and solve goes through jaxmb/_linalg/ (the vmap-safe layer): no
    other module of the library calls jnp.linalg / jax.scipy.linalg / lax.linalg decompositions
    or solves directly (norms are fine). Reference: the source text."""
    import pathlib

    root = pathlib.Path(mb.__file__).parent
    pattern = re.compile(
        r"(jnp\.linalg|jax\.numpy\.linalg|jsl|jax\.scipy\.linalg|lax\.linalg)"
        r"\.(?!norm\b)\w+"
    )
    offenders = []
    for path in sorted(root.rglob("*.py")):
        if path.parent.name == "_linalg":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line.split("#")[0]):
                offenders.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    assert not offenders, "use jaxmb._linalg.dense instead:\n" + "\n".join(offenders)
