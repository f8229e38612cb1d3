"""The compiled kernels (`jaxmb._linalg.native`) refuse buffers whose shapes disagree.

Each kernel takes its batch size and matrix sizes from one argument and indexes every other
buffer with them. jaxmb's own calls always agree (the vmap rules broadcast every argument to
the batch), but a direct `jax.ffi.ffi_call`, or a native wrapper given arguments with different
leading dimensions, used to make the C++ read or write past the end of an XLA buffer
(AddressSanitizer: heap-buffer-overflow in TriangularSolve, GaussProjection, SetNorms,
SpdInverse, PivotedQr), or leave part of an output uninitialized. Now each call is checked
and fails with INVALID_ARGUMENT before the kernel touches a buffer.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import select_kernel

from jaxmb._linalg import native as _native

S = jax.ShapeDtypeStruct
F64 = jnp.float64


def _a(*shape):
    return jnp.asarray(np.random.default_rng(0).standard_normal(shape))


def _ffi(name, results, *args, **attrs):
    return jax.ffi.ffi_call(name, results)(*args, **attrs)


def _tri(T, b):  # the result has b's shape, as `native.triangular_solve` makes it
    return _ffi("jaxmb_triangular_solve_f64", S(b.shape, F64), T, b, lower=True)


def _gauss(w, F, C, g):  # the results' shapes from C, as `native.gauss_projection`
    *lead, rows, n = C.shape
    results = (S((*lead, n), F64), S((*lead, min(rows, n)), F64))
    return _ffi("jaxmb_gauss_projection_f64", results, w, F, C, g, rtol=1e-9)


def _norms(C, Qt, rows, starts):
    out = S((*C.shape[:-2], len(starts) - 1), F64)
    rows, starts = np.asarray(rows, np.int64), np.asarray(starts, np.int64)
    return _ffi("jaxmb_set_norms_f64", out, C, Qt, rows=rows, starts=starts)


_T = jnp.eye(4) + jnp.tril(_a(4, 4), -1)
_QR = "jaxmb_pivoted_qr_f64"
MISMATCHED = {
    "triangular_solve: T's batch > b's": lambda: _tri(jnp.stack([_T] * 3), _a(2, 4, 1)),
    "triangular_solve: T's batch < b's": lambda: _tri(jnp.stack([_T] * 2), _a(3, 4, 1)),
    "triangular_solve: b has fewer rows": lambda: _tri(_T[None], _a(1, 3, 1)),
    "triangular_solve: T not square": lambda: _tri(_a(1, 3, 4), _a(1, 4, 1)),
    "triangular_solve: wrapper, unbatched b": lambda: _native.triangular_solve(
        jnp.stack([_T] * 3), _a(4), True
    ),
    "gauss_projection: w unbatched": lambda: _gauss(_a(4), _a(3, 4), _a(3, 2, 4), _a(3, 2)),
    "gauss_projection: gamma too short": lambda: _gauss(_a(3, 4), _a(3, 4), _a(3, 2, 4), _a(3, 1)),
    "set_norms: Q~'s batch < C's": lambda: _norms(_a(3, 4, 5), _a(2, 4, 6), [0, 1], [0, 2]),
    "set_norms: row index past C": lambda: _norms(_a(1, 4, 5), _a(1, 4, 6), [0, 9], [0, 2]),
    "set_norms: negative row index": lambda: _norms(_a(1, 4, 5), _a(1, 4, 6), [-1], [0, 1]),
    "set_norms: wrapper, row index past C": lambda: _native.set_norms(
        _a(1, 4, 5), _a(1, 4, 6), [[0, 9]]
    ),
    "spd_inverse: not square": lambda: _native.spd_inverse(_a(1, 3, 4)),
    "spd_inverse: a scalar": lambda: _ffi("jaxmb_spd_inverse_f64", S((), F64), jnp.asarray(2.0)),
    "pivoted_qr: R taller than A": lambda: _ffi(
        _QR,
        (S((1, 3, 3), F64), S((1, 5, 4), F64), S((1, 4), jnp.int32)),
        _a(1, 3, 4),
        pivoting=True,
    ),
    "svd: U too wide": lambda: _ffi(
        "jaxmb_svd_f64", (S((2, 3, 4), F64), S((2, 3), F64), S((2, 3, 4), F64)), _a(2, 3, 4)
    ),
    "left_null: Q~ batch too small": lambda: _ffi(
        "jaxmb_left_null_f64", (S((1, 3, 3), F64), S((2, 3), F64)), _a(2, 3, 4), rtol=1e-9
    ),
}


@pytest.mark.parametrize("case", MISMATCHED)
def test_mismatched_buffers_are_refused(monkeypatch, case):
    """Every kernel, given buffers whose shapes disagree, raises INVALID_ARGUMENT instead of
    reading or writing past a buffer (each of these was an ASan heap-buffer-overflow, or an
    uninitialized output, before the checks)."""
    select_kernel(monkeypatch, "native")
    with pytest.raises(jax.errors.JaxRuntimeError, match="INVALID_ARGUMENT"):
        jax.block_until_ready(MISMATCHED[case]())


@pytest.mark.parametrize("batch", (1, 9, 17))
def test_agreeing_buffers_still_pass(monkeypatch, batch):
    """The checks let through every shape jaxmb's wrappers make: batches that are not a
    multiple of the QR kernels' 8 lanes, nested vmaps, wide, tall and empty matrices."""
    select_kernel(monkeypatch, "native")
    for m, n in ((3, 5), (5, 3), (0, 3), (3, 0)):
        A = _a(2, batch, m, n)
        for full in (False, True):
            Q, R, perm = jax.vmap(jax.vmap(lambda a: _native.pivoted_qr(a, full=full)))(A)
            permuted = jnp.take_along_axis(A, perm[..., None, :], axis=-1)
            np.testing.assert_allclose(Q @ R, permuted, atol=1e-12)
        jax.block_until_ready(jax.vmap(jax.vmap(lambda a: _native.left_null(a, 1e-9)))(A))
        jax.block_until_ready(jax.vmap(jax.vmap(_native.svd))(A))
        w, F, g = jnp.abs(_a(batch, n)) + 1.0, _a(batch, n), _a(batch, m)
        qdd, _ = jax.vmap(lambda *x: _native.gauss_projection(*x, 1e-9))(w, F, A[0], g)
        assert qdd.shape == (batch, n)
    T = jnp.broadcast_to(_T, (batch, 4, 4))
    for b in (_a(batch, 4), _a(batch, 4, 2)):
        x = jax.vmap(lambda T, b: _native.triangular_solve(T, b, True))(T, b)
        np.testing.assert_allclose(jnp.einsum("bij,bj...->bi...", T, x), b, atol=1e-12)
    x = jax.vmap(lambda b: _native.triangular_solve(_T, b, True))(_a(batch, 4))  # T unbatched
    assert x.shape == (batch, 4)
    spd = jnp.broadcast_to(jnp.eye(3) * 2.0, (batch, 3, 3))
    np.testing.assert_allclose(jax.vmap(_native.spd_inverse)(spd), spd / 4.0)
    C, Qt = _a(batch, 4, 5), _a(batch, 4, 2)
    out = jax.vmap(lambda C, Qt: _native.set_norms(C, Qt, [[0, 3], [], [1]]))(C, Qt)
    assert out.shape == (batch, 3)
