"""Compiled batched kernels for vmapped factorizations (XLA FFI custom calls, CPU, float64).

`batched_linalg.cc` is compiled by `pip install` (setuptools, an optional extension: where no
C++ compiler is found the install still succeeds and jaxmb uses its pure-jnp kernels). Each
kernel loops over every leading (batch) dimension itself on the calling thread (the QR kernels
eight members at a time, interleaved so that every step is one vector instruction for all of
them), so a vmapped factorization is one custom call instead of dozens of XLA kernels per
column, and no LAPACK routine ever receives a batch (the hang `jaxmb._linalg.dense` describes
cannot occur).

Kernels: `pivoted_qr` (with or without pivoting), `left_null` (the columns of Q past the rank
only), `svd` (one-sided Jacobi, for small matrices), `set_norms` (|C_X^T Q~_X|_F per row set,
solvability), `triangular_solve`, `gauss_projection` (the null-space accelerations),
`spd_inverse` (the augmented Lagrangian's dense S^-1).

`available()` says whether the kernels are in use: the library was built, it is the CPU
backend, and JAXMB_NATIVE_KERNELS is not "0" (set it to "0" to compare against the jnp path;
it is read when a program is traced: jit's cached programs keep the kernels they were traced
with).
The kernels run on CPU only; on GPU, jaxmb keeps its vectorized jnp algorithms.
"""

import ctypes
import importlib.machinery
import os
import pathlib
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ..vmap_rules import all_batched, full_batch

_TARGETS = (
    "jaxmb_pivoted_qr_f64",
    "jaxmb_triangular_solve_f64",
    "jaxmb_gauss_projection_f64",
    "jaxmb_svd_f64",
    "jaxmb_set_norms_f64",
    "jaxmb_left_null_f64",
    "jaxmb_spd_inverse_f64",
)


def library_path():
    """The compiled kernel library next to this file, or None where it was not built."""
    here = pathlib.Path(__file__).parent
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = here / f"batched_linalg{suffix}"
        if path.exists():
            return path
    return None


def _register():
    """Load the library and register its targets with XLA (at import: a program stored by
    `jaxmb._runtime.program_store` runs in a later process without being traced). Whether it is
    built."""
    path = library_path()
    if path is None:
        return False
    try:
        lib = ctypes.cdll.LoadLibrary(str(path))
        for name in _TARGETS:
            jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(lib, name)), platform="cpu")
    except (OSError, AttributeError) as error:  # a library that cannot load, an older jax
        warnings.warn(
            f"jaxmb: the compiled batched kernels at {path} cannot be used "
            f"({error}); jaxmb uses its pure-JAX kernels",
            stacklevel=2,
        )
        return False
    return True


BUILT = _register()


def available(*arrays):
    """Whether the compiled kernels serve a batch of these arrays: built, enabled, on the CPU
    backend and float64 (jaxmb's precision; other dtypes take the jnp kernels)."""
    if os.environ.get("JAXMB_NATIVE_KERNELS", "1") == "0":
        return False
    if jax.default_backend() != "cpu":
        return False
    if any(jnp.result_type(a) != jnp.float64 for a in arrays):
        return False
    return BUILT


def _call(name, results, core, *args, **attrs):
    """The FFI call; every leading dimension is a batch dimension of the kernel, so under
    further vmaps the batch axes are simply prepended ("broadcast_all"). With several devices
    the call also carries a partitioning rule (`_partitioned`) along the leading axis of a
    batch (the first argument has more than its `core` per-member dimensions)."""

    def kernel(*local):  # on one device's shard of the batch (a leading axis of its own)
        size = local[0].shape[0]
        shapes = jax.tree.map(
            lambda r: jax.ShapeDtypeStruct((size, *r.shape[1:]), r.dtype), results
        )
        return jax.ffi.ffi_call(name, shapes, vmap_method="broadcast_all")(*local, **attrs)

    if jax.device_count() == 1 or args[0].ndim <= core:
        return jax.ffi.ffi_call(name, results, vmap_method="broadcast_all")(*args, **attrs)
    return _partitioned(kernel, args, results)(*args)


def _partitioned(kernel, args, results):
    """`kernel` with a partitioning rule along the leading (batch) axis: a batch sharded over
    devices (a hand-written `jit(vmap)` on `mb.batch.shard` inputs) is computed shard by shard
    on each device, instead of being gathered onto every device (XLA cannot look inside a custom
    call). `custom_partitioning` has no vmap rule, so further vmaps fold their axis into the
    leading one (`custom_vmap`)."""
    from jax.experimental.custom_partitioning import custom_partitioning
    from jax.sharding import NamedSharding, PartitionSpec

    def shardings(mesh, arg_shapes, result_shape):
        spec = getattr(arg_shapes[0].sharding, "spec", None)
        one = NamedSharding(mesh, PartitionSpec(spec[0] if spec else None))
        return one, jax.tree.map(lambda _: one, result_shape)

    def partition(mesh, arg_shapes, result_shape):
        one, out = shardings(mesh, arg_shapes, result_shape)
        return mesh, kernel, out, tuple(one for _ in arg_shapes)

    names = iter(f"d{k}" for k in range(10_000))
    flat = results if isinstance(results, tuple) else (results,)
    operands = ", ".join(" ".join(["b", *(next(names) for _ in a.shape[1:])]) for a in args)
    outputs = ", ".join(" ".join(["b", *(next(names) for _ in r.shape[1:])]) for r in flat)
    split = custom_partitioning(kernel)
    split.def_partition(
        partition=partition,
        infer_sharding_from_operands=lambda m, a, r: shardings(m, a, r)[1],
        sharding_rule=f"{operands} -> {outputs}",
    )

    @jax.custom_batching.custom_vmap
    def call(*xs):
        return split(*xs)

    @call.def_vmap
    def _fold(axis_size, in_batched, *xs):  # (new, leading, ...) -> (new * leading, ...)
        xs = full_batch(axis_size, in_batched, xs)
        lead = xs[0].shape[:2]
        xs = [x.reshape(-1, *x.shape[2:]) for x in xs]
        folded = jax.tree.map(
            lambda r: jax.ShapeDtypeStruct((xs[0].shape[0], *r.shape[1:]), r.dtype), results
        )
        out = _partitioned(kernel, xs, folded)(*xs)
        return all_batched(jax.tree.map(lambda o: o.reshape(*lead, *o.shape[1:]), out))

    return call


def pivoted_qr(A, full=False, pivoting=True):
    """A[..., :, perm] = Q R for a batch A (..., m, n): Q (..., m, k), R (..., k, n), k =
    min(m, n) (with `full`: Q (..., m, m), R (..., m, n)), perm (..., n) int32. The algorithm
    and conventions of `_linalg.householder_pivoted_qr` (LAPACK geqp3's); without `pivoting`,
    geqrf's A = Q R (perm is the identity)."""
    *lead, m, n = A.shape
    k = m if full else min(m, n)
    shape = jax.ShapeDtypeStruct
    return _call(
        "jaxmb_pivoted_qr_f64",
        (
            shape((*lead, m, k), A.dtype),
            shape((*lead, k, n), A.dtype),
            shape((*lead, n), jnp.int32),
        ),
        2,
        A,
        pivoting=bool(pivoting),
    )


def left_null(A, rtol):
    """(Q~, d) for a batch A (..., m, n): the full pivoted QR's Q (..., m, m) with its columns
    up to the rank (pivots |R_jj| > rtol max |R_jj|) zero and not formed, and the pivots d
    (..., m), zero-padded. The rest of R is not written."""
    *lead, m, _ = A.shape
    shape = jax.ShapeDtypeStruct
    return _call(
        "jaxmb_left_null_f64",
        (shape((*lead, m, m), A.dtype), shape((*lead, m), A.dtype)),
        2,
        A,
        rtol=float(rtol),
    )


def svd(A):
    """Thin SVD A = U diag(s) Vt of a batch A (..., m, n): U (..., m, k), s (..., k)
    non-increasing, Vt (..., k, n), k = min(m, n); one-sided Jacobi (accurate to round-off
    relative to each singular value's column; best for small k: its cost grows as k^3 sweeps)."""
    *lead, m, n = A.shape
    k = min(m, n)
    shape = jax.ShapeDtypeStruct
    return _call(
        "jaxmb_svd_f64",
        (shape((*lead, m, k), A.dtype), shape((*lead, k), A.dtype), shape((*lead, k, n), A.dtype)),
        2,
        A,
    )


def triangular_solve(T, b, lower):
    """x with T x = b for a batch of triangular T (..., k, k), b (..., k) or (..., k, c)."""
    vector = b.ndim == T.ndim - 1
    b2 = b[..., None] if vector else b
    x = _call(
        "jaxmb_triangular_solve_f64",
        jax.ShapeDtypeStruct(b2.shape, b2.dtype),
        2,
        T,
        b2,
        lower=bool(lower),
    )
    return x[..., 0] if vector else x


def gauss_projection(w, F, C, gamma, rtol):
    """(qdd, |R_jj|) of `_dynamics.null_space_solve` for a batch: w = M^(-1/2) (..., n),
    F (..., n), C (..., rows, n), gamma (..., rows); pivots below rtol * max dropped."""
    *lead, rows, n = C.shape
    shape = jax.ShapeDtypeStruct
    return _call(
        "jaxmb_gauss_projection_f64",
        (shape((*lead, n), C.dtype), shape((*lead, min(rows, n)), C.dtype)),
        1,
        w,
        F,
        C,
        gamma,
        rtol=float(rtol),
    )


def set_norms(C, Qt, row_sets):
    """|B_X|_F = |C_X^T Q~_X|_F (seed 001, eq. 27) for a batch C (..., rows, n), Q~ (..., rows,
    p) and the static row sets `row_sets` (sequences of row indices): (..., sets)."""
    *lead, _, _ = C.shape
    flat = np.concatenate([np.asarray(r, np.int64) for r in row_sets] + [np.zeros(0, np.int64)])
    starts = np.cumsum([0] + [len(r) for r in row_sets]).astype(np.int64)
    return _call(
        "jaxmb_set_norms_f64",
        jax.ShapeDtypeStruct((*lead, len(row_sets)), C.dtype),
        2,
        C,
        Qt,
        rows=flat,
        starts=starts,
    )


def spd_inverse(A):
    """A^-1 for a batch of symmetric positive-definite A (..., n, n), by Cholesky; nan where
    a member is not positive definite."""
    return _call("jaxmb_spd_inverse_f64", jax.ShapeDtypeStruct(A.shape, A.dtype), 2, A)
