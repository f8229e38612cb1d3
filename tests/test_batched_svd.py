"""Vmapped small factorizations (`jaxmb._linalg.dense`): the thin SVD and singular values (compiled
one-sided Jacobi kernel up to `JACOBI_SVD_LIMIT`, else LAPACK one member at a time), the thin QR
without pivoting and the left null space of a pivoted QR, with each batched kernel
(`conftest.KERNELS`).

Independent references, per batch member:
- numpy.linalg.svd and numpy.linalg.qr (LAPACK gesdd, geqrf): the same singular values, A = U
  diag(s) Vt with orthonormal U and V; the same Q and R entry by entry (same sign convention);
- scipy.linalg.null_space (an SVD) for the left null space: the same projector Q~ Q~^T;
- single (unbatched, LAPACK) calls for the derivative of the singular values.

Tolerances: 1e-12 relative to the largest singular value (round-off of a factorization of a
matrix of at most 22 rows is ~1e-15 of it); 1e-10 for the projector of a null space whose
gap is the rank tolerance's (the redundant directions are exact to round-off here).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg as sl
from conftest import KERNELS, select_kernel

from jaxmb._linalg import dense as _linalg

TOL = 1e-12
SVD_SHAPES = ((1, 1), (3, 22), (22, 3), (3, 3), (2, 21), (6, 7), (10, 10), (12, 11))


def _members(rng, shape):
    """Random matrices with columns over two decades; a zero matrix; a rank-one one; three with
    entries near 1e-200, 1e200 and up to 1.5e308 / sqrt(m n) (1 x 1: past 2^1023; the kernel
    scales by a power of two, and scales back without overflow)."""
    m, n = shape
    A = rng.standard_normal((8, m, n)) * np.logspace(-1, 1, n)
    A[1] = 0.0
    A[2] = np.outer(rng.standard_normal(m), rng.standard_normal(n))
    A[3] *= 1e-200
    A[4] *= 1e200
    A[6] = A[6] / np.abs(A[6]).max() * (1.5e308 / np.sqrt(m * n))  # s_max <= 1.5e308
    if min(m, n) > 2:
        A[5][:, -1] = A[5][:, 0] - 2.0 * A[5][:, 1]  # rank min(m, n) - 1
    return A


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("shape", SVD_SHAPES)
def test_vmapped_svd_matches_lapack(monkeypatch, kernel, shape, rng):
    """jit(vmap(svd)) and jit(vmap(singular_values)) per member against numpy's gesdd: the same
    non-increasing singular values, U diag(s) Vt = A, U^T U = I and Vt Vt^T = I (also for the
    zero and rank-deficient members, whose U is completed to an orthonormal set). The compiled
    kernel serves min(m, n) <= JACOBI_SVD_LIMIT only; larger ones go to LAPACK."""
    select_kernel(monkeypatch, kernel)
    A = jnp.asarray(_members(rng, shape))
    fn = jax.jit(jax.vmap(_linalg.svd))
    text = fn.lower(A).as_text()
    native = kernel == "native" and min(shape) <= _linalg.JACOBI_SVD_LIMIT
    assert ("jaxmb_svd_f64" in text) == native
    U, s, Vt = (np.asarray(x) for x in fn(A))
    values = np.asarray(jax.jit(jax.vmap(_linalg.singular_values))(A))
    k = min(shape)
    for a, u, sv, vt, v2 in zip(np.asarray(A), U, s, Vt, values):
        ref = np.linalg.svd(a, compute_uv=False)
        scale = max(ref[0], 1e-300)
        np.testing.assert_allclose(sv, ref, rtol=0, atol=TOL * scale)
        np.testing.assert_allclose(v2, ref, rtol=0, atol=TOL * scale)
        assert np.all(np.diff(sv) <= 0.0)
        np.testing.assert_allclose((u * (sv / scale)) @ vt, a / scale, rtol=0, atol=TOL)
        np.testing.assert_allclose(u.T @ u, np.eye(k), rtol=0, atol=TOL)
        np.testing.assert_allclose(vt @ vt.T, np.eye(k), rtol=0, atol=TOL)


@pytest.mark.parametrize("kernel", KERNELS)
def test_vmapped_svd_nan_and_derivative(monkeypatch, kernel, rng):
    """A member with a nan entry gets nan singular values, the others are unaffected; the
    derivative of the singular values under vmap equals single LAPACK calls' (1e-10: one
    more product with U and V)."""
    select_kernel(monkeypatch, kernel)
    A = rng.standard_normal((3, 3, 5))
    A[1, 2, 2] = np.nan
    s = np.asarray(jax.jit(jax.vmap(_linalg.svd))(jnp.asarray(A))[1])
    assert np.isnan(s[1]).all() and np.isfinite(s[[0, 2]]).all()
    B = jnp.asarray(rng.standard_normal((4, 3, 5)))
    dB = jnp.asarray(rng.standard_normal((4, 3, 5)))

    def ds(a, da):
        return jax.jvp(lambda x: _linalg.svd(x)[1], (a,), (da,))[1]

    batched = np.asarray(jax.jit(jax.vmap(ds))(B, dB))
    single = np.stack([np.asarray(jax.jit(ds)(b, d)) for b, d in zip(B, dB)])
    np.testing.assert_allclose(batched, single, rtol=0, atol=1e-10)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("shape", ((21, 3), (21, 1), (5, 5)))
def test_vmapped_qr_matches_lapack(monkeypatch, kernel, shape, rng):
    """jit(vmap(qr)) (thin, no pivoting) equals numpy's geqrf + orgqr entry by entry: the same
    reflector convention (R_jj = -sign(x_j) ||x||, no reflection of a column already zero
    below the diagonal), including a member with a zero column."""
    select_kernel(monkeypatch, kernel)
    A = rng.standard_normal((4, *shape))
    A[1, :, -1] = 0.0
    Q, R = (np.asarray(x) for x in jax.jit(jax.vmap(_linalg.qr))(jnp.asarray(A)))
    for a, q, r in zip(A, Q, R):
        Qn, Rn = np.linalg.qr(a)
        np.testing.assert_allclose(q, Qn, rtol=0, atol=TOL)
        np.testing.assert_allclose(r, Rn, rtol=0, atol=TOL * np.linalg.norm(a, 2))


@pytest.mark.parametrize("kernel", KERNELS)
def test_vmapped_left_null_qr(monkeypatch, kernel, rng):
    """left_null_qr under vmap: the columns of Q up to the rank are zero, the others an
    orthonormal basis of null(C^T), the same projector as scipy's null_space (an SVD); the
    pivots |R_jj| equal geqp3's (padded with a zero to the 22 rows). 22 x 21 members of rank
    21, 20 (the robot's C) and 19."""
    C = rng.standard_normal((3, 22, 21))
    C[1][:, -1] = C[1][:, 0] + C[1][:, 1]  # rank 20
    C[2][:, -2:] = C[2][:, :2] @ rng.standard_normal((2, 2))  # rank 19
    select_kernel(monkeypatch, kernel)
    Qt, D = (np.asarray(x) for x in jax.jit(jax.vmap(_linalg.left_null_qr))(jnp.asarray(C)))
    nullities = []
    for c, qt, d in zip(C, Qt, D):
        null = sl.null_space(c.T, rcond=1e-9)
        p = null.shape[1]
        nullities.append(p)
        rank = 22 - p
        np.testing.assert_array_equal(qt[:, :rank], 0.0)
        basis = qt[:, rank:]
        np.testing.assert_allclose(basis.T @ basis, np.eye(p), rtol=0, atol=TOL)
        np.testing.assert_allclose(basis @ basis.T, null @ null.T, rtol=0, atol=1e-10)
        _, Rs, _ = sl.qr(c, pivoting=True)
        np.testing.assert_allclose(
            d, np.append(np.abs(np.diag(Rs)), 0.0), rtol=0, atol=TOL * abs(Rs[0, 0])
        )
    assert nullities == [1, 2, 3]


def test_left_null_qr_with_a_traced_tolerance(rng):
    """A traced `rtol` (the compiled kernel needs a number) takes the full pivoted QR and
    masks it: under vmap the same Q~ and pivots as a concrete `rtol` (1e-12: the same
    reflectors), and the same projector Q~ Q~^T and pivots as a single LAPACK call."""
    C = rng.standard_normal((4, 22, 21))
    C[:, :, -1] = C[:, :, 0] + C[:, :, 1]  # rank 20: two null columns
    C = jnp.asarray(C)
    concrete = jax.jit(jax.vmap(lambda c: _linalg.left_null_qr(c, 1e-9)))(C)
    traced = jax.jit(jax.vmap(_linalg.left_null_qr, in_axes=(0, None)))(C, 1e-9)
    single = jax.jit(_linalg.left_null_qr)(C[0], 1e-9)
    for a, b in zip(concrete, traced):
        np.testing.assert_allclose(a, b, rtol=0, atol=TOL)
    Qb, Qs = np.asarray(traced[0][0]), np.asarray(single[0])  # LAPACK single: same projector
    np.testing.assert_allclose(Qb @ Qb.T, Qs @ Qs.T, rtol=0, atol=1e-10)
    np.testing.assert_allclose(traced[1][0], single[1], rtol=0, atol=TOL * float(single[1][0]))
    live = np.linalg.norm(np.asarray(traced[0]), axis=1) > 0.5  # (members, columns)
    assert np.all(live.sum(axis=1) == 2)
