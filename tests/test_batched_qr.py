"""The batched column-pivoted QR (`jaxmb._linalg.dense`) and the vmapped accelerations built on it,
with each of the two batched kernels (`conftest.KERNELS`): jaxmb's compiled ones
(`jaxmb._linalg.native`) and the pure-jnp algorithms.

Independent references:
- scipy.linalg.qr(pivoting=True) (LAPACK geqp3 through numpy) per batch member: A P = Q R,
  Q orthonormal, the same rank decision and the same |R_jj| (the pivots are unique for
  random matrices; past the rank both are round-off);
- a Python loop of single (unbatched, LAPACK) calls for the vmapped `mb.accelerations` and
  its gradient: two different factorization codes must give the same unique qdd;
- central finite differences of the gradient for the second derivatives (which differentiate
  the factorization itself).

Tolerances: 1e-12 relative for the factorization and the accelerations (round-off of a
factorization of a 9 x 8 or 21 x 22 matrix is ~1e-15 times its condition number, here below
1e3); 1e-10 for first derivatives (one more solve); 1e-6 for second derivatives against central
differences with step 1e-5 (truncation error ~h^2 times the third derivative).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg as sl
from conftest import KERNELS, select_kernel

import jaxmb as mb
from jaxmb._linalg import native as _native
from jaxmb._linalg.dense import RANK_RTOL, economic_pivoted_qr, householder_pivoted_qr
from jaxmb.models import mobile_robot, slider_crank

QR_TOL = 1e-12
ACC_RTOL = 1e-12
GRAD_RTOL = 1e-10
SHAPES = ((9, 8), (8, 9), (21, 22), (6, 6))  # tall, wide, the robot's C^T, square


def _batch(rng, shape, size=6):
    """Random matrices with column scales over two decades: full rank, and rank-deficient
    (a product of random factors of rank min(m, n) - 2, and one with a zero column)."""
    m, n = shape
    full = rng.standard_normal((size // 2, m, n)) * np.logspace(-1, 1, n)
    r = min(m, n) - 2
    low = rng.standard_normal((size // 2, m, r)) @ rng.standard_normal((size // 2, r, n))
    low[0, :, n // 2] = 0.0
    return np.concatenate([full, low])


def _rank(d):
    return int(np.sum(d > RANK_RTOL * np.max(d)))


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("shape", SHAPES)
def test_batched_qr_matches_scipy(monkeypatch, kernel, shape, rng):
    """Per member against scipy's geqp3: A[:, perm] = Q R and Q^T Q = I to 1e-12 ||A||, R
    upper triangular, the same rank (|R_jj| > RANK_RTOL max), the same leading pivots and
    |R_jj| (all j: past the rank both are round-off), |R_jj| non-increasing."""
    select_kernel(monkeypatch, kernel)
    A = _batch(rng, shape)
    Q, R, perm = (np.asarray(x) for x in jax.jit(jax.vmap(economic_pivoted_qr))(A))
    k = min(shape)
    assert Q.shape == (len(A), shape[0], k) and R.shape == (len(A), k, shape[1])
    ranks = []
    for a, q, r, p in zip(A, Q, R, perm):
        scale = np.linalg.norm(a, 2)
        Qs, Rs, ps = sl.qr(a, mode="economic", pivoting=True)
        d, ds = np.abs(np.diag(r)), np.abs(np.diag(Rs))
        assert sorted(p) == list(range(shape[1]))
        np.testing.assert_allclose(q @ r, a[:, p], rtol=0, atol=QR_TOL * scale)
        np.testing.assert_allclose(q.T @ q, np.eye(k), rtol=0, atol=QR_TOL)
        np.testing.assert_array_equal(np.tril(r, -1), 0.0)
        assert _rank(d) == _rank(ds)
        ranks.append(_rank(d))
        np.testing.assert_array_equal(p[: _rank(d)], ps[: _rank(d)])
        np.testing.assert_allclose(d, ds, rtol=0, atol=QR_TOL * scale)
        assert np.all(np.diff(d) <= QR_TOL * scale)
    assert min(ranks) < k == max(ranks)  # full-rank and rank-deficient members


@pytest.mark.parametrize("kernel", KERNELS)
def test_batched_qr_rule_is_used_and_nests(monkeypatch, kernel, rng):
    """Under vmap the factorization is one call of the compiled kernel for the whole (nested)
    batch, or the vectorized Householder loop (no LAPACK geqp3 in the program either way);
    unbatched it is geqp3; a nested vmap gives the single-matrix results (scipy)."""
    select_kernel(monkeypatch, kernel)
    A = jnp.asarray(_batch(rng, (9, 8)).reshape(2, 3, 9, 8))
    batched = jax.jit(jax.vmap(jax.vmap(economic_pivoted_qr))).lower(A).as_text()
    single = jax.jit(economic_pivoted_qr).lower(A[0, 0]).as_text()
    assert "geqp3" not in batched
    if kernel == "native":
        assert batched.count("custom_call @jaxmb_pivoted_qr_f64") == 1
        assert "tensor<2x3x9x8xf64>" in batched  # the nested batch in one call
    else:
        assert "while" in batched and "jaxmb_" not in batched
    assert "geqp3" in single
    Q, R, perm = jax.jit(jax.vmap(jax.vmap(economic_pivoted_qr)))(A)
    for i, j in np.ndindex(2, 3):
        _, Rs, ps = sl.qr(np.asarray(A[i, j]), mode="economic", pivoting=True)
        np.testing.assert_allclose(
            np.abs(np.diag(R[i, j])), np.abs(np.diag(Rs)), rtol=0, atol=QR_TOL * np.abs(Rs[0, 0])
        )
        np.testing.assert_allclose(
            Q[i, j] @ R[i, j], A[i, j][:, perm[i, j]], rtol=0, atol=QR_TOL * np.abs(Rs[0, 0])
        )


def test_large_matrices_go_to_lapack_one_member_at_a_time(monkeypatch, rng):
    """Without the compiled kernels, above `VECTOR_QR_LIMIT` (the robot's 21 x 22 C^T: 9,702 >
    2,000) the vmapped factorization is LAPACK geqp3 on one matrix per loop iteration (faster there: see the
    limit's docstring), with results identical to unbatched calls; at the limit and below
    (12 x 13 x 12 = 1,872) it stays vectorized. The compiled programs are read, the
    values compared with single calls bit for bit."""
    from jaxmb._linalg.dense import VECTOR_QR_LIMIT

    select_kernel(monkeypatch, "jnp")
    assert 12 * 13 * 12 <= VECTOR_QR_LIMIT < 21 * 22 * 21
    big = jnp.asarray(_batch(rng, (21, 22)))
    small = jnp.asarray(_batch(rng, (12, 13)))
    from test_linalg import assert_unbatched

    lowered_big = jax.jit(jax.vmap(economic_pivoted_qr)).lower(big)
    calls = assert_unbatched(lowered_big, "vmapped 21 x 22 QR")  # one matrix per call
    assert any("geqp3" in target for target, _ in calls) and "while" in lowered_big.as_text()
    assert "geqp3" not in jax.jit(jax.vmap(economic_pivoted_qr)).lower(small).as_text()
    batched = jax.jit(jax.vmap(economic_pivoted_qr))(big)
    for i in range(len(big)):
        for x, y in zip(batched, economic_pivoted_qr(big[i])):
            np.testing.assert_array_equal(np.asarray(x[i]), np.asarray(y))


def _native_qr(monkeypatch, full=False):
    """The compiled kernel on one matrix (a batch of one)."""
    select_kernel(monkeypatch, "native")
    return jax.jit(lambda A: tuple(x[0] for x in _native.pivoted_qr(A[None], full=full)))


@pytest.mark.parametrize("kernel", KERNELS)
def test_householder_conventions_match_lapack(monkeypatch, kernel, rng):
    """Both batched kernels follow LAPACK's sign convention (R_jj = -sign(x_j) ||x||), so for
    a full-rank matrix Q and R equal scipy's entry by entry; a zero matrix gives Q = I, R = 0
    and the identity permutation (no reflection, as dlarfg)."""
    a = rng.standard_normal((7, 5))
    qr = _native_qr(monkeypatch) if kernel == "native" else jax.jit(householder_pivoted_qr)
    Q, R, perm = qr(jnp.asarray(a))
    Qs, Rs, ps = sl.qr(a, mode="economic", pivoting=True)
    np.testing.assert_array_equal(perm, ps)
    np.testing.assert_allclose(R, Rs, rtol=0, atol=QR_TOL * np.abs(Rs[0, 0]))
    np.testing.assert_allclose(Q, Qs, rtol=0, atol=QR_TOL)
    Q0, R0, p0 = qr(jnp.zeros((4, 3)))
    np.testing.assert_array_equal(Q0, np.eye(4, 3))
    np.testing.assert_array_equal(R0, 0.0)
    np.testing.assert_array_equal(p0, np.arange(3))


def _robot_states(model, rng):
    """Six robot states, each a random rigid motion of the whole robot (every pair joins two
    bodies or is a knife edge, so C only rotates and its rank is kept): of q0 itself (rank 20
    of 22 rows, seed 001) and of q0 with the platform or one wheel holder turned by about
    0.5 rad (a knife edge no longer parallel: rank 21, smallest kept singular value of the
    mass-scaled C ~3e-3 of the largest, so derivatives stay well conditioned)."""
    q_base = []
    for body in (None, None, None, 0, 1, 2):
        q = np.asarray(model.q0).copy()
        if body is not None:
            q[3 * body + 2] += rng.uniform(0.4, 0.6)
        q_base.append(q.reshape(-1, 3))
    qs = []
    for q in q_base:
        th, d = rng.uniform(-np.pi, np.pi), rng.uniform(-1.0, 1.0, 2)
        rot = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
        qs.append(np.column_stack([q[:, :2] @ rot.T + d, q[:, 2] + th]).ravel())
    return np.array(qs), 0.1 * rng.standard_normal((len(qs), model.n))


@pytest.fixture(scope="module")
def cases():
    rng = np.random.default_rng(7)
    robot = mobile_robot.build()
    q_r, qd_r = _robot_states(robot, rng)
    crank = slider_crank.build()
    q_c = np.asarray(crank.q0) + rng.standard_normal((6, crank.n))
    qd_c = rng.standard_normal((6, crank.n))
    C = jax.jit(jax.vmap(lambda q: robot.C(q, 0.0)))(q_r)
    ranks = [np.linalg.matrix_rank(np.asarray(c), tol=1e-9) for c in C]
    assert ranks == [20, 20, 20, 21, 21, 21]  # both rank decisions occur in one batch
    return {"robot": (robot, q_r, qd_r), "slider_crank": (crank, q_c, qd_c)}


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("name", ["robot", "slider_crank"])
def test_vmapped_accelerations_equal_single_calls(monkeypatch, cases, name, kernel):
    """jit(vmap(accelerations)) (the compiled projection kernel, or the vectorized Householder
    steps) equals a loop of single calls (LAPACK geqp3) to 1e-12, for the redundant robot (rank
    20 and rank 21 states in the same batch) and the slider-crank."""
    select_kernel(monkeypatch, kernel)
    model, q, qd = cases[name]
    t = jnp.linspace(0.0, 1.0, len(q))
    single = jax.jit(lambda q, qd, t: mb.accelerations(model, q, qd, t))
    out = jax.jit(jax.vmap(single))(q, qd, t)
    expected = np.stack([single(*args) for args in zip(q, qd, t)])
    np.testing.assert_allclose(out, expected, rtol=0, atol=ACC_RTOL * np.max(np.abs(expected)))


@pytest.fixture(scope="module")
def crank_grad(cases):
    """Gradient of a scalar of the slider-crank's accelerations, L(q) = sum sin(qdd)."""
    model = cases["slider_crank"][0]
    grad = jax.grad(lambda q, qd: jnp.sum(jnp.sin(mb.accelerations(model, q, qd, 0.3))))
    return grad, jax.jit(grad)


def test_vmapped_gradient_equals_single_calls(cases, crank_grad):
    """vmap(grad) equals a loop of single gradients to 1e-10: reverse mode through the
    custom_jvp rule of the null-space solve (the same factorization with new right-hand sides,
    linearized and transposed) with the factorization from the batched rule."""
    _, q, qd = cases["slider_crank"]
    grad, single = crank_grad
    out = jax.jit(jax.vmap(grad))(q, qd)
    expected = np.stack([single(*args) for args in zip(q, qd)])
    np.testing.assert_allclose(out, expected, rtol=0, atol=GRAD_RTOL * np.max(np.abs(expected)))


def test_second_derivatives_through_factorization(cases, crank_grad):
    """vmap(jacrev(grad)) against central differences of the single gradient (step 1e-5):
    second derivatives differentiate the factorization itself, through the custom_jvp of
    `economic_pivoted_qr` (custom_vmap alone has no reverse-mode rule)."""
    model, q, qd = cases["slider_crank"]
    q, qd = q[:2], qd[:2]
    grad, single = crank_grad
    hess = jax.jit(jax.vmap(jax.jacrev(grad)))(q, qd)
    h = 1e-5
    for b in range(2):
        fd = np.stack(
            [
                (single(q[b] + h * e, qd[b]) - single(q[b] - h * e, qd[b])) / (2 * h)
                for e in np.eye(model.n)
            ]
        )
        np.testing.assert_allclose(hess[b], fd, rtol=0, atol=1e-6 * np.max(np.abs(fd)))


def test_native_full_qr_and_triangular_solve(monkeypatch, rng):
    """The compiled kernels' other forms against scipy: the full QR of a tall matrix (Q square
    orthonormal, R (m, n) with zero rows below n, A[:, perm] = Q R) and batched forward and
    back substitution against scipy.linalg.solve_triangular (vector and matrix right-hand
    sides), to 1e-12 relative (condition numbers below 1e3)."""
    a = rng.standard_normal((7, 4))
    Q, R, perm = _native_qr(monkeypatch, full=True)(jnp.asarray(a))
    assert Q.shape == (7, 7) and R.shape == (7, 4)
    np.testing.assert_allclose(Q @ R, a[:, perm], rtol=0, atol=QR_TOL * np.linalg.norm(a, 2))
    np.testing.assert_allclose(Q.T @ Q, np.eye(7), rtol=0, atol=QR_TOL)
    np.testing.assert_array_equal(np.tril(R, -1), 0.0)
    T = np.triu(rng.standard_normal((3, 5, 5))) + 4.0 * np.eye(5)
    for lower, Tl in ((False, T), (True, np.swapaxes(T, 1, 2))):
        for b in (rng.standard_normal((3, 5)), rng.standard_normal((3, 5, 2))):
            x = jax.jit(lambda T, b, lower=lower: _native.triangular_solve(T, b, lower))(Tl, b)
            for i in range(3):
                expected = sl.solve_triangular(Tl[i], b[i], lower=lower)
                np.testing.assert_allclose(
                    x[i], expected, rtol=1e-12, atol=1e-12 * np.max(np.abs(expected))
                )


@pytest.mark.parametrize("kernel", KERNELS)
def test_vmapped_accelerations_propagate_nan(monkeypatch, cases, kernel, rng):
    """A member whose C holds a nan gets nan accelerations (so a diffrax step fails and is
    reported), and the other members are untouched: both batched kernels, as the LAPACK path."""
    select_kernel(monkeypatch, kernel)
    from jaxmb._formulations.null_space import null_space_solve

    model, q, qd = cases["slider_crank"]
    C = np.stack([np.asarray(model.C(qi, 0.0)) for qi in q[:3]])
    C[1, 2, 3] = np.nan
    M, F, gamma = np.eye(model.n) * 2.0, rng.standard_normal(model.n), np.ones(C.shape[1])
    out = jax.jit(jax.vmap(null_space_solve, in_axes=(None, None, 0, None)))(M, F, C, gamma)
    assert np.all(np.isnan(out[1]))
    single = jax.jit(null_space_solve)
    for i in (0, 2):
        np.testing.assert_allclose(
            out[i], single(M, F, C[i], gamma), rtol=0, atol=ACC_RTOL * np.max(np.abs(out[i]))
        )


@pytest.mark.parametrize("kernel", KERNELS)
def test_vmapped_accelerations_without_constraints(monkeypatch, kernel):
    """A model with no pair (C has zero rows): the batched projection returns M^-1 F, the free
    fall of each member (closed form: qdd = (0, -9.81, 0) per body)."""
    select_kernel(monkeypatch, kernel)
    m = mb.Mechanism()
    m.body("a", mass=2.0, inertia=0.1, q=(0.0, 0.0, 0.0))
    m.body("b", mass=1.0, inertia=0.3, q=(1.0, 0.0, 0.5))
    m.add(mb.Gravity((0.0, -9.81)))
    model = m.build()
    assert model.num_rows == 0
    q = jnp.tile(model.q0, (3, 1)) + 0.1
    qdd = jax.jit(jax.vmap(lambda q: mb.accelerations(model, q, jnp.zeros(model.n), 0.0)))(q)
    np.testing.assert_allclose(qdd, np.tile([0.0, -9.81, 0.0] * 2, (3, 1)), rtol=0, atol=1e-15)


@pytest.mark.parametrize("kernel", KERNELS)
def test_vmapped_spd_inverse(monkeypatch, rng, kernel):
    """The augmented Lagrangian's dense S^-1 (`dense.spd_inverse`) under vmap, with each
    batched kernel, against numpy's LU inverse per member (1e-12 relative: condition numbers
    below 1e3); the single-matrix (LAPACK) path too; a member that is not positive definite,
    or holds a nan, gets nan and leaves the others untouched. 13 members: the compiled kernel
    takes 8 at a time, so the second group is partial, and a failed member sits in each."""
    select_kernel(monkeypatch, kernel)
    from jaxmb._linalg.dense import spd_inverse

    bad = (3, 4, 11)
    for n in (1, 3, 9, 22):
        a = rng.standard_normal((13, n, n))
        spd = a @ np.swapaxes(a, 1, 2) + n * np.eye(n)
        spd[3] = -spd[3]  # negative definite
        spd[4, 0, n - 1] = spd[4, n - 1, 0] = np.nan
        spd[11, n - 1, n - 1] = -1.0  # positive definite but for the last pivot
        inv = np.asarray(jax.jit(jax.vmap(spd_inverse))(jnp.asarray(spd)))
        for i in sorted(set(range(13)) - set(bad)):
            expected = np.linalg.inv(spd[i])
            tol = 1e-12 * np.max(np.abs(expected))
            np.testing.assert_allclose(inv[i], expected, rtol=0, atol=tol)
            if i < 3:
                np.testing.assert_allclose(spd_inverse(jnp.asarray(spd[i])), expected, atol=tol)
        assert all(np.all(np.isnan(inv[i])) for i in bad)
