"""Checks of simulate's time and tolerance arguments, before diffrax sees them, and of the
numerical options of the other analyses.

Concrete values are checked at once (ValueError naming the argument and the value); traced ones
(inside jit or vmap) by jaxmb._runtime.errors.error_if when the program runs; the messages name
the function being reported (`jaxmb._runtime.errors.reporting`, set by the entry point). Rules:
t0 and t1 finite scalars (t1 < t0 integrates backwards); `ts` a non-empty 1-D array of finite
times within [t0, t1], ordered from t0 towards t1 (diffrax's SaveAt(ts) requirement); rtol and
atol positive and finite (they scale the error estimate of the step-size controller: 0 or nan
make every step fail, which used to surface only as a late, misleading step-size collapse).
"""

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .._runtime import errors as _errors
from ..elements.geometry import is_concrete, is_real


def _scalar(x, label) -> Array:
    x = jnp.asarray(x, jnp.float64)
    if x.shape != ():
        raise _errors.wrong_argument(f"{label} must be a scalar time, got shape {x.shape}")
    return x


def checked_times(t0, t1, ts) -> tuple[Array, Array, Array]:
    """(t0, t1, ts) as float64 arrays, checked; `ts` None gives 201 instants from t0 to t1."""
    t0, t1 = _scalar(t0, "t0"), _scalar(t1, "t1")
    for label, x in (("t0", t0), ("t1", t1)):
        if is_concrete(x) and not np.isfinite(float(x)):
            raise _errors.wrong_argument(f"{label} = {float(x)} is not finite; give a finite time")
    t0 = _errors.error_if(t0, ~jnp.isfinite(t0), _errors.named("t0 is not finite"))
    t1 = _errors.error_if(t1, ~jnp.isfinite(t1), _errors.named("t1 is not finite"))
    if ts is None:
        return t0, t1, jnp.linspace(t0, t1, 201)
    ts = jnp.asarray(ts, jnp.float64)
    if ts.ndim != 1:
        raise _errors.wrong_argument(f"ts must be a 1-D array of save times, got shape {ts.shape}")
    if ts.shape[0] == 0:
        raise _errors.wrong_argument("ts is empty; give at least one save time in [t0, t1]")
    if is_concrete(ts) and is_concrete(t0) and is_concrete(t1):
        _check_concrete_ts(np.asarray(ts), float(t0), float(t1))
        return t0, t1, ts
    lo, hi = jnp.minimum(t0, t1), jnp.maximum(t0, t1)
    step = jnp.diff(ts) * jnp.where(t1 >= t0, 1.0, -1.0)
    ts = _errors.error_if(
        ts, ~jnp.all(jnp.isfinite(ts)), _errors.named("ts has a nan or inf entry")
    )
    ts = _errors.error_if(
        ts,
        jnp.any((ts < lo) | (ts > hi)),
        _errors.named("every save time in ts must lie within [t0, t1]"),
    )
    ts = _errors.error_if(
        ts,
        jnp.any(step < 0.0),
        _errors.named("ts must be ordered from t0 towards t1 (increasing when t1 > t0)"),
    )
    return t0, t1, ts


def _check_concrete_ts(ts, t0, t1):
    bad = np.flatnonzero(~np.isfinite(ts))
    if bad.size:
        raise _errors.wrong_argument(f"ts[{bad[0]}] = {ts[bad[0]]} is not finite")
    lo, hi = min(t0, t1), max(t0, t1)
    out = np.flatnonzero((ts < lo) | (ts > hi))
    if out.size:
        k = out[0]
        raise _errors.wrong_argument(
            f"ts[{k}] = {ts[k]:.17g} lies outside [t0, t1] = "
            f"[{t0:.17g}, {t1:.17g}]; every save time must lie within it"
        )
    step = np.diff(ts) * (1.0 if t1 >= t0 else -1.0)
    back = np.flatnonzero(step < 0.0)
    if back.size:
        k = back[0]
        order = "increasing" if t1 >= t0 else "decreasing (t1 < t0: integrating backwards)"
        raise _errors.wrong_argument(
            f"ts must be {order}, but ts[{k + 1}] = {ts[k + 1]:.17g} "
            f"comes after ts[{k}] = {ts[k]:.17g}"
        )


def checked_tolerances(rtol, atol) -> tuple[Array, Array]:
    """(rtol, atol), each a positive finite scalar."""
    out = []
    for label, x in (("rtol", rtol), ("atol", atol)):
        if not is_real(x):
            raise _errors.wrong_argument(f"{label} must be a number, got {x!r}")
        x = jnp.asarray(x, jnp.float64)
        if x.shape != ():
            raise _errors.wrong_argument(f"{label} must be a scalar, got shape {x.shape}")
        problem = f"{label} must be a positive, finite tolerance (e.g. rtol = 1e-8, atol = 1e-10)"
        if is_concrete(x) and not (np.isfinite(float(x)) and float(x) > 0.0):
            raise _errors.wrong_argument(f"{problem}, got {float(x)}")
        out.append(_errors.error_if(x, ~(jnp.isfinite(x) & (x > 0.0)), _errors.named(problem)))
    return tuple(out)


def checked_option(x, value, label, *, below_one=False):
    """x (an argument the check rides on), after checking that the numerical option `value`
    is a positive finite scalar (and below 1 with `below_one`, for relative tolerances):
    eagerly a ValueError with the value, traced a run-time check."""
    if not is_real(value) or jnp.shape(value) != ():
        raise _errors.wrong_argument(f"{label} must be a number, got {value!r}")
    v = jnp.asarray(value)
    problem = (
        f"{label} must be a finite number in (0, 1)"
        if below_one
        else f"{label} must be a positive finite number"
    )
    bad = ~(jnp.isfinite(v) & (v > 0) & ((v < 1) if below_one else True))
    if is_concrete(v):
        if bool(bad):
            raise _errors.wrong_argument(f"{problem}, got {value!r}")
        return x
    return _errors.error_if(x, bad, _errors.named(f"{problem} (traced value)"))


def checked_count(value, label):
    """value, checked to be an integer >= 1 (a static count such as max_steps)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise _errors.wrong_argument(f"{label} must be an integer >= 1, got {value!r}")
    return int(value)


def checked_direction(t0, t1):
    """t1, refusing t1 < t0 (for formulations that integrate forwards only)."""
    problem = (
        "t1 < t0 (backward integration) is supported by the null-space and "
        "Eliminate formulations only"
    )
    if is_concrete(t0) and is_concrete(t1) and float(t1) < float(t0):
        raise _errors.wrong_argument(f"{problem}; got t0 = {float(t0)}, t1 = {float(t1)}")
    return _errors.error_if(t1, t1 < t0, _errors.named(problem))
