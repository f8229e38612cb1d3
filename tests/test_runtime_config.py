"""The process-wide settings of `jaxmb._runtime.config`: chosen in one place, each with its
opt-out, and the private JAX / equinox APIs fenced into `jaxmb/_runtime/`."""

import os
import pathlib
import re
import subprocess
import sys

import jax

import jaxmb
from jaxmb._runtime import config

ROOT = pathlib.Path(jaxmb.__file__).parent


def test_safe_flags_are_added_once_and_respect_the_users():
    env = {}
    flags = config.set_safe_xla_flags(env)
    assert flags.split() == list(config.SAFE_CPU_FLAGS)
    assert config.set_safe_xla_flags(env) == flags  # idempotent
    # a flag the user set, to any value, is left as the user set it
    env = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=true --foo=1"}
    flags = config.set_safe_xla_flags(env)
    assert "--xla_cpu_multi_thread_eigen=true" in flags and "--foo=1" in flags
    assert "--xla_cpu_multi_thread_eigen=false" not in flags
    assert "--xla_cpu_experimental_ynn_fusion_type=" in flags


def test_opt_out_leaves_xla_flags_alone():
    env = {config.KEEP_XLA_FLAGS: "1", "XLA_FLAGS": "--foo=1"}
    assert config.set_safe_xla_flags(env) == "--foo=1" and env["XLA_FLAGS"] == "--foo=1"
    code = "import os, jaxmb; print(repr(os.environ.get('XLA_FLAGS')))"
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env[config.KEEP_XLA_FLAGS] = "1"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "None"


def test_float64_is_on():
    assert jax.config.jax_enable_x64


def test_private_apis_only_in_the_runtime_folder():
    """jax._src and equinox's private modules are used only in jaxmb/_runtime/ (they may change
    in any release: one folder to mend)."""
    private = re.compile(r"\bjax\._src\b|\bequinox\._\w+|from equinox\._")
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in ROOT.rglob("*.py")
        if path.parent.name != "_runtime"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if private.search(line.split("#")[0])
    ]
    assert offenders == []
    assert any(private.search(p.read_text()) for p in (ROOT / "_runtime").glob("*.py"))


_BLAS_THREADS = (
    "import jaxmb, jax.numpy as jnp, threadpoolctl; jnp.linalg.qr(jnp.ones((9, 9)));"
    "print(sorted({i['num_threads'] for i in threadpoolctl.threadpool_info()"
    " if i['user_api'] == 'blas'}))"
)


def _blas_threads(**env_changes):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENBLAS_NUM_THREADS", config.KEEP_BLAS_THREADS)
    }
    env.update(env_changes)
    out = subprocess.run(
        [sys.executable, "-c", _BLAS_THREADS], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return eval(out.stdout.strip().splitlines()[-1])


def test_blas_runs_one_thread_unless_the_user_says_otherwise():
    """After importing jaxmb and a first LAPACK call (which loads scipy's OpenBLAS for
    jaxlib), every BLAS library of the process runs one thread (numpy's, loaded before jaxmb,
    included); OPENBLAS_NUM_THREADS set by the user and the opt-out are respected. The
    slowdown this prevents is measured by benchmarks/bench_concurrency.py."""
    assert _blas_threads() == [1]
    assert _blas_threads(OPENBLAS_NUM_THREADS="2") == [2]
    if (os.cpu_count() or 1) > 1:  # OpenBLAS's default is the core count
        assert _blas_threads(**{config.KEEP_BLAS_THREADS: "1"}) != [1]
