"""What jaxmb is compiling, said on the `logging` logger named "jaxmb".

A first call of an analysis (`simulate`, `reactions`, `solvability`, ...) traces and compiles
its program, which takes seconds to minutes; later calls reuse it. Each eager call runs inside
`compiling(analysis, args)`, which listens to JAX's compilation events (`jax.monitoring`) and
logs, at INFO:

- "compiling simulate for a model of 9 bodies and 4 pairs ..." when XLA starts compiling (a
  miss of the persistent compilation cache, or any lowering when that cache is off), so the
  line comes before the wait and never when nothing is compiled (a program the cache does not
  look up, below its minimum compile time, is announced when its compile ends);
- "compiled simulate in 12.3 s (kept in the compilation cache)" after the call.

A program loaded from the persistent cache is logged at DEBUG only. Calls inside the user's own
`jit`, `vmap` or `grad` are part of the user's program and say nothing.

Off by default, as a library's logger should be (a `NullHandler`); `mb.log_progress()` (the
examples and notebooks call it) sends INFO and above to stderr, and any `logging`
configuration works as usual (`logging.getLogger("jaxmb").setLevel(logging.WARNING)` to
silence it again). The command line prints the same lines with the model's name
(`name_models(name)`).
"""

import contextlib
import logging
import sys
import threading
import time

import jax
import jax.core

from .config import jax_setting

logger = logging.getLogger("jaxmb")
logger.addHandler(logging.NullHandler())

_state = threading.local()
_installed = []


class _Call:
    """One eager call being watched: its name, what it is for, and the compiles seen."""

    def __init__(self, analysis, subject):
        self.analysis, self.subject = analysis, subject
        self.announced = False
        self.compile_seconds = 0.0
        self.compiles = 0
        self.cache_hits = 0
        self.kept = True  # every compile long enough for the persistent cache to store it
        self.hit = False  # the last cache lookup hit: the next "backend compile" is a load

    def announce(self):
        if not self.announced:
            self.announced = True
            logger.info("compiling %s for %s ...", self.analysis, self.subject)


def _current():
    calls = getattr(_state, "calls", None)
    return calls[-1] if calls else None


def _on_event(event, **kwargs):
    call = _current()
    if call is None:
        return
    if event == "/jax/compilation_cache/cache_misses":
        call.announce()
    elif event == "/jax/compilation_cache/cache_hits":
        call.hit = True
        call.cache_hits += 1


def _on_duration(event, duration_secs, **kwargs):
    call = _current()
    if call is None:
        return
    cache = _cache_on()
    if event == "/jax/core/compile/jaxpr_to_mlir_module_duration" and not cache:
        call.announce()  # no persistent cache: every lowering is compiled
    elif event == "/jax/core/compile/backend_compile_duration":
        if call.hit:  # the event also times a program loaded from the cache: no compile
            call.hit = False
            return
        call.announce()  # late where the cache reported no lookup (programs below its minimum)
        call.compiles += 1
        call.compile_seconds += duration_secs
        call.kept &= cache and (
            duration_secs >= jax_setting("jax_persistent_cache_min_compile_time_secs")
        )


def _cache_on() -> bool:
    return bool(jax_setting("jax_compilation_cache_dir")) and bool(
        jax_setting("jax_enable_compilation_cache")
    )


def _install():
    if not _installed:
        jax.monitoring.register_event_listener(_on_event)
        jax.monitoring.register_event_duration_secs_listener(_on_duration)
        _installed.append(True)


PUBLIC_NAMES = {"velocity": "consistent_velocity"}
"""Analyses whose module name is not the public function's."""


def public_name(analysis: str) -> str:
    return PUBLIC_NAMES.get(analysis, analysis)


def describe(args) -> str:
    """What an analysis is compiled for: the model among `args`, by its size (or the name set
    by `name_models`)."""
    name = getattr(_state, "name", None)
    if name:
        return name
    for x in args:
        bodies, pairs = getattr(x, "body_names", None), getattr(x, "pairs", None)
        if bodies is not None and pairs is not None:
            return f"a model of {len(bodies)} bodies and {len(pairs)} pairs"
    return "its arguments"


def name_models(name: str | None) -> None:
    """From now on (in this thread) announcements name the model `name` (the command line's
    MODEL); None: by its size again."""
    _state.name = name


@contextlib.contextmanager
def compiling(analysis: str, args):
    """Watch the block (an eager call of `analysis`) for compiles and log them (module
    docstring); nothing is logged for calls inside the user's own traces."""
    if not logger.isEnabledFor(logging.INFO) or any(
        isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(args)
    ):
        yield
        return
    _install()
    call = _Call(analysis, describe(args))
    calls = getattr(_state, "calls", None)
    if calls is None:
        calls = _state.calls = []
    calls.append(call)
    start = time.perf_counter()
    try:
        yield
    finally:
        calls.pop()
        if call.compiles:
            kept = " (kept in the compilation cache)" if call.kept else ""
            logger.info("compiled %s in %.1f s%s", analysis, time.perf_counter() - start, kept)
        elif call.cache_hits:
            logger.debug("loaded %s from the compilation cache", analysis)


class _Stderr(logging.Handler):
    """Writes to the sys.stderr of the moment (a captured or replaced stream included)."""

    def emit(self, record):
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:  # as logging's own handlers: never raise from logging
            self.handleError(record)


def log_progress(level: int | str = logging.INFO) -> logging.Logger:
    """Send jaxmb's messages at `level` and above (default INFO: what it compiles, and for how
    long, e.g. "jaxmb: compiling simulate for a model of 3 bodies and 4 pairs ..." then
    "jaxmb: compiled simulate in 3.0 s") to stderr; returns the "jaxmb" logger, which any
    `logging` configuration also controls. Calling it again changes the level only; the
    examples and notebooks call it. Messages come only from jaxmb's own eager calls, not from
    calls inside your `jax.jit`, `vmap` or `grad`."""
    if not any(isinstance(h, _Stderr) for h in logger.handlers):
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("jaxmb: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level)
    return logger
