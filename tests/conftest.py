"""Shared test setup: importing jaxmb switches on float64 before any test builds arrays."""

import atexit
import os
import shutil
import tempfile

# One persistent JAX compilation cache folder for the run's subprocesses, set before jax is
# imported: the CLI and example subprocesses and the notebook kernel inherit it (and never
# touch ~/.cache), so a program one of them compiled is loaded from disk by the others. Fresh
# per run (a clean CI machine sees the same), removed at exit by the process that made it.
# The xdist workers themselves do not write to it (below).
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    _cache = tempfile.mkdtemp(prefix="jaxmb-tests-jax-cache-")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _cache
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)

# The CLI, example and notebook subprocesses compile the same programs as one another and
# find them in the cache above. With the program store (jaxmb._runtime.program_store) on, they
# would compile its exported wrappers as well: the store is off for them;
# tests/test_program_store.py, test_compile_cache.py and the CLI's first-run test switch it on
# where they test it.
os.environ.setdefault("JAXMB_PROGRAM_STORE", "0")

# The suite is dominated by XLA:CPU compile time, not run time (measured with jax.monitoring
# over a whole run: XLA's backend compile 61% of the workers' time, tracing 27%, lowering 12%).
# Two compiler settings cut it at the price of slower loops, which the tests do not time:
# - LLVM's optimization level 0: about a fifth less compile time (test_a02 + test_friction
#   45 s -> 36 s);
# - XLA:CPU's older loop emitters instead of the MLIR fusion emitters: at level 0 the backend
#   compile of tests/test_dynamics.py drops from 56 s to 31 s (the file from 94 s to 70 s).
# Both are code generators of the same HLO, with the same semantics (no fast-math either way);
# round-off may differ in the last bits, as between any two builds. Subprocesses inherit them.
# JAXMB_TEST_OPTIMIZED=1 tests the programs exactly as users compile them.
TEST_COMPILE_FLAGS = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")
if os.environ.get("JAXMB_TEST_OPTIMIZED") != "1":
    for _flag in TEST_COMPILE_FLAGS:
        if _flag.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
            os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _flag).strip()

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import jaxmb  # noqa: F401, E402  (side effect: jax_enable_x64)

# As diffrax's and equinox's test suites do: an operation that relies on implicit rank promotion
# (broadcasting a (n,) against a (T, n) array without saying so) raises instead of guessing, in
# the library and in the tests. Subprocesses (CLI, examples, notebooks) keep JAX's default.
jax.config.update("jax_numpy_rank_promotion", "raise")
# The workers compile with the persistent cache off (tests of the cache switch it on where
# they test it): measured over a whole run, loading programs from it saved the workers 10 s
# in all (each test compiles its own programs), while writing every program (serialize,
# compress, write) is where a worker twice died in native code (a segmentation fault and an
# abort inside jax's put_executable_and_time).
jax.config.update("jax_compilation_cache_dir", None)
# and, also as there, strict dtype promotion: mixing int32 with int64, or a bool mask with
# floats, raises instead of silently promoting (jaxmb casts and selects explicitly).
jax.config.update("jax_numpy_dtype_promotion", "strict")


@pytest.fixture
def rng():
    """A seeded numpy generator, fresh for every test."""
    return np.random.default_rng(20240613)


@pytest.fixture
def count_calls(monkeypatch):
    """`count_calls(module, name)` replaces module.name, for this test, by a wrapper that
    appends to the returned list on every call (e.g. once per trace of a jitted program)."""

    def install(module, name):
        calls = []
        original = getattr(module, name)

        def counting(*args, **kwargs):
            calls.append(1)
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, counting)
        return calls

    return install


@pytest.fixture(autouse=True)
def _program_store_off_after_each_test():
    """A test that runs the CLI in this process switches the program store on
    (`enable_compilation_cache`); later tests, some of which patch jaxmb functions that the
    store's keys cannot see, must trace as usual."""
    yield
    from jaxmb._runtime import program_store as _program_store

    if _program_store.directory() is not None:
        _program_store.disable()


# Test files that take longest on 2 cores (measured with --durations=0, 2026-11-29, longest
# first), run first: pytest-xdist (--dist loadfile) hands files to workers in collection order,
# so long files started late leave one worker idle at the end. Order within a file is unchanged.
LONG_FILES = (
    "test_augmented_lagrangian.py",
    "test_notebooks.py",
    "test_dynamics.py",
    "test_compile_cache.py",
    "test_bad_input.py",
    "test_independent.py",
    "test_program_store.py",
    "test_snippets.py",
    "test_friction.py",
    "test_cli_examples.py",
    "test_compliance.py",
    "test_metamaterial_example.py",
    "test_a02.py",
    "test_auxetic.py",
    "test_sparse_solvability.py",
    "test_batch_sharding.py",
    "test_linalg.py",
    "test_sparse_cholesky.py",
    "test_lint.py",
    "test_io.py",
    "test_reference_numpy.py",
    "test_solvability.py",
)


def _long_first(items):
    def rank(item):
        name = os.path.basename(str(item.fspath))
        return LONG_FILES.index(name) if name in LONG_FILES else len(LONG_FILES)

    items.sort(key=rank)  # stable: files keep their internal order


KERNELS = ("native", "jnp")
"""The two kernels of vmapped factorizations: jaxmb's compiled ones (`jaxmb._linalg.native`) and the
pure-jnp algorithms used where they were not built (JAXMB_NATIVE_KERNELS=0)."""


def select_kernel(monkeypatch, kernel):
    """Trace this test's programs with `kernel` (read at trace time: jit inside the test). The
    compiled kernels must exist wherever pip had a C++ compiler; elsewhere "native" skips."""
    import jax.numpy as jnp

    from jaxmb._linalg import native as _native

    if kernel == "jnp":
        monkeypatch.setenv("JAXMB_NATIVE_KERNELS", "0")
        return
    monkeypatch.delenv("JAXMB_NATIVE_KERNELS", raising=False)
    if not _native.available(jnp.zeros((), jnp.float64)):
        if shutil.which("c++") or shutil.which("g++"):
            pytest.fail(
                "a C++ compiler is installed but jaxmb's kernels were not built "
                "(reinstall jaxmb: pip install -e .)"
            )
        pytest.skip("no C++ compiler: jaxmb's compiled kernels were not built")


QUICK_MODULES = {
    "test_elements",
    "test_model",
    "test_linalg",
    "test_sparse_cholesky",
    "test_groups",
    "test_assemble",
    "test_layers",
    "test_auxetic",
    "test_compliance",
    "test_seed003_pairs",
}
"""`pytest -m quick`: a subset that touches every layer (elements, the model and its autodiff
rows, the dense and sparse factorizations, the default formulation's motion (energy of a
rotating-squares grid), the reaction methods, solvability), in under 2 minutes on 2 cores;
the whole suite is the reference (README)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "quick: the quick subset (`pytest -m quick`)")


def pytest_collection_modifyitems(config, items):
    """The long files first (`LONG_FILES`), and the quick marker on `QUICK_MODULES`' tests."""
    _long_first(items)
    for item in items:
        if item.module.__name__.rsplit(".", 1)[-1] in QUICK_MODULES:
            item.add_marker(pytest.mark.quick)
