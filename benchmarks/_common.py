"""Shared helpers of the benchmark scripts: timing, compile timing, tables, machine line.

Every figure is the median of `repeats` runs after compilation (compile timed separately), as the
performance issue asks; `table` prints aligned columns.
"""

import os
import platform
import statistics
import sys
import time

try:
    import jaxmb  # noqa: F401  (first: float64 and the XLA CPU flags)
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import jaxmb  # noqa: F401
import jax

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
sys.path.insert(0, HERE)
# the numpy reference models live with the tests' oracle: `from oracle import reference_numpy`
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))


def block(x):
    return jax.block_until_ready(x)


def median_time(fn, repeats=5):
    """Median wall time (s) of fn() over `repeats` runs (fn must block on its result)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def compile_timed(fn, *args):
    """(compiled, trace+lower seconds, XLA compile seconds) of jax.jit(fn) at args."""
    start = time.perf_counter()
    lowered = jax.jit(fn).lower(*args)
    mid = time.perf_counter()
    compiled = lowered.compile()
    return compiled, mid - start, time.perf_counter() - mid


def machine() -> str:
    """One line: CPU model, cores, jax version, backend."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores, jax {jax.__version__}, "
        f"{jax.devices()[0].platform} x{jax.device_count()}"
    )


def table(title, header, rows):
    """Print rows (lists of str/float) under header with aligned columns; returns the text."""
    cells = [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(str(h)), *(len(r[k]) for r in cells)) for k, h in enumerate(header)]
    lines = [
        title,
        "  ".join(str(h).ljust(w) for h, w in zip(header, widths)),
        "  ".join("-" * w for w in widths),
    ]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cells]
    text = "\n".join(lines)
    print(text + "\n", flush=True)
    return text


def _fmt(c):
    if isinstance(c, float):
        if c == 0 or 1e-3 <= abs(c) < 1e5:
            return f"{c:.4g}"
        return f"{c:.2e}"
    return str(c)
