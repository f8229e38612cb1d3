"""Compiled batched kernels for vmapped factorizations (XLA FFI custom calls, CPU, float64).

`batched_linalg.cc` is compiled by `pip install` (setuptools, an optional extension: where no
C++ compiler is found the install still succeeds and jaxmb uses its pure-jnp kernels). Each
kernel loops over every leading (batch) dimension itself, one small matrix at a time on the
calling thread, so a vmapped factorization is one custom call instead of dozens of XLA kernels
per column, and no LAPACK routine ever receives a batch (the hang of issue 18 cannot occur).

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

_TARGETS = ("jaxmb_pivoted_qr_f64", "jaxmb_triangular_solve_f64", "jaxmb_gauss_projection_f64")


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
    `jaxmb._program_store` runs in a later process without being traced). Whether it is built."""
    path = library_path()
    if path is None:
        return False
    try:
        lib = ctypes.cdll.LoadLibrary(str(path))
        for name in _TARGETS:
            jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(lib, name)),
                                        platform="cpu")
    except (OSError, AttributeError) as error:  # a library that cannot load, an older jax
        warnings.warn(f"jaxmb: the compiled batched kernels at {path} cannot be used "
                      f"({error}); jaxmb uses its pure-JAX kernels", stacklevel=2)
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


def _call(name, results, *args, **attrs):
    """The FFI call; every leading dimension is a batch dimension of the kernel, so under
    further vmaps the batch axes are simply prepended ("broadcast_all")."""
    return jax.ffi.ffi_call(name, results, vmap_method="broadcast_all")(*args, **attrs)


def pivoted_qr(A, full=False):
    """A[..., :, perm] = Q R for a batch A (..., m, n): Q (..., m, k), R (..., k, n), k =
    min(m, n) (with `full`: Q (..., m, m), R (..., m, n)), perm (..., n) int32. The algorithm
    and conventions of `_linalg.householder_pivoted_qr` (LAPACK geqp3's)."""
    *lead, m, n = A.shape
    k = m if full else min(m, n)
    shape = jax.ShapeDtypeStruct
    return _call("jaxmb_pivoted_qr_f64",
                 (shape((*lead, m, k), A.dtype), shape((*lead, k, n), A.dtype),
                  shape((*lead, n), jnp.int32)), A)


def triangular_solve(T, b, lower):
    """x with T x = b for a batch of triangular T (..., k, k), b (..., k) or (..., k, c)."""
    vector = b.ndim == T.ndim - 1
    b2 = b[..., None] if vector else b
    x = _call("jaxmb_triangular_solve_f64", jax.ShapeDtypeStruct(b2.shape, b2.dtype), T, b2,
              lower=bool(lower))
    return x[..., 0] if vector else x


def gauss_projection(w, F, C, gamma, rtol):
    """(qdd, |R_jj|) of `_dynamics.null_space_solve` for a batch: w = M^(-1/2) (..., n),
    F (..., n), C (..., rows, n), gamma (..., rows); pivots below rtol * max dropped."""
    *lead, rows, n = C.shape
    shape = jax.ShapeDtypeStruct
    return _call("jaxmb_gauss_projection_f64",
                 (shape((*lead, n), C.dtype), shape((*lead, min(rows, n)), C.dtype)),
                 w, F, C, gamma, rtol=float(rtol))
