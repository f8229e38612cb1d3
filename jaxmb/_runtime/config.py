"""The process-wide settings jaxmb makes when it is imported: each in one function here, each
with an opt-out. Nothing else in jaxmb changes a setting of the process.

- `enable_float64()`: `jax_enable_x64` on (jaxmb's public promise: every number is float64).
  Opt out: none; jaxmb's numerics assume float64.
- `set_safe_xla_flags()`: adds to XLA_FLAGS, unless it already mentions them,
  `--xla_cpu_multi_thread_eigen=false --xla_cpu_enable_concurrency_optimized_scheduler=false`
  (a measured hazard: with the defaults, XLA's CPU runtime deadlocks on vmapped graphs that run
  several LAPACK calls and equinox error checks concurrently; reproduced with vmapped reactions
  along a trajectory, the same wedge is reported upstream) and
  `--xla_cpu_experimental_ynn_fusion_type=` (speed: XLA's CPU compiler otherwise hands small
  fusions to YNNPACK, whose per-call cost dominates jaxmb's small vmapped kernels; see
  benchmarks/results/ for the batch figures). The flags take effect only before JAX starts its
  CPU backend, so jaxmb sets them at import; our matrices are small, so the lost intra-op
  parallelism costs little; GPU backends are unaffected. Opt out: JAXMB_KEEP_XLA_FLAGS=1 in the
  environment before importing jaxmb.

- `pin_blas_threads()`: one OpenBLAS thread for the LAPACK calls jaxmb makes (XLA's CPU
  backend calls scipy's LAPACK for each QR, SVD and Cholesky; jaxmb hands it one small matrix at
  a time, where threads cannot help). A measured hazard: threaded OpenBLAS oversubscribes the
  cores as soon as anything else computes: 1 s of a 6 x 6 rotating-squares linkage took 7.0 s
  beside a second jaxmb process against 0.135 s alone with one thread, and an A02 N = 40 run
  went from 45 s to over 200 s (`benchmarks/bench_concurrency.py` measures it). It sets
  OPENBLAS_NUM_THREADS=1 for the libraries loaded later (scipy's, which jaxlib loads at its
  first LAPACK call) and, with threadpoolctl, limits the ones loaded already. Opt out:
  JAXMB_KEEP_BLAS_THREADS=1, or set OPENBLAS_NUM_THREADS yourself (it is respected).

The other hazard of jaxlib 0.10's CPU runtime, batched LAPACK kernels splitting a batch over the
thread pool and waiting for it, is removed at the source: jaxmb never hands LAPACK more than one
matrix (`jaxmb._linalg.dense`), under any vmap.

This module imports no JAX at import time: `set_safe_xla_flags` runs before JAX is imported.
"""

import os
from typing import Any

SAFE_CPU_FLAGS = (
    "--xla_cpu_multi_thread_eigen=false",
    "--xla_cpu_enable_concurrency_optimized_scheduler=false",
    "--xla_cpu_experimental_ynn_fusion_type=",  # speed, not safety (module docstring)
)
KEEP_XLA_FLAGS = "JAXMB_KEEP_XLA_FLAGS"
"""The environment variable that opts out of `set_safe_xla_flags` (value "1")."""


def set_safe_xla_flags(environ=os.environ) -> str:
    """Add SAFE_CPU_FLAGS to `environ["XLA_FLAGS"]` where it does not mention them already
    (unless JAXMB_KEEP_XLA_FLAGS=1); returns the flags in force."""
    flags = environ.get("XLA_FLAGS", "")
    if environ.get(KEEP_XLA_FLAGS) == "1":
        return flags
    for flag in SAFE_CPU_FLAGS:
        if flag.split("=")[0] not in flags:
            flags = f"{flags} {flag}".strip()
    environ["XLA_FLAGS"] = flags
    return flags


KEEP_BLAS_THREADS = "JAXMB_KEEP_BLAS_THREADS"
"""The environment variable that opts out of `pin_blas_threads` (value "1")."""


def pin_blas_threads(environ=os.environ) -> bool:
    """One BLAS thread (module docstring), unless JAXMB_KEEP_BLAS_THREADS=1 or the user set
    OPENBLAS_NUM_THREADS; returns whether it pinned."""
    if environ.get(KEEP_BLAS_THREADS) == "1" or "OPENBLAS_NUM_THREADS" in environ:
        return False
    environ["OPENBLAS_NUM_THREADS"] = "1"
    import scipy.linalg  # noqa: F401  (loads the OpenBLAS that jaxlib's LAPACK calls use)
    import threadpoolctl

    threadpoolctl.threadpool_limits(limits=1, user_api="blas")
    return True


def enable_float64() -> None:
    """`jax_enable_x64` on: jaxmb computes in float64 throughout."""
    import jax

    jax.config.update("jax_enable_x64", True)


def jax_setting(name: str) -> Any:
    """The value JAX uses now for the setting `name` (a context manager's override included).
    jax.config's attributes are made at run time, so type checkers cannot see them."""
    import jax

    return getattr(jax.config, name)
