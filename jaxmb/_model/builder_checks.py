"""The argument checks of the model builders (`jaxmb.models`): each names the builder, the
argument and the problem. A concrete value is checked at the call (a `JaxmbError`, a
ValueError); a traced one (inside jit or vmap) by a runtime check
(`jaxmb._runtime.errors.error_if`) attached to the value the builder goes on with, so it fails
when the model is used:

    side = real("rotating_squares", "side", side, "positive")   # side = -1: refused
"""

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .._runtime import errors as _errors
from .._runtime.exceptions import JaxmbError
from ..elements.drive import AbstractDrive
from ..elements.geometry import is_concrete, is_real

PROBLEMS = {
    "finite": "must be finite",
    "positive": "must be positive and finite",
    "nonnegative": "must be non-negative and finite",
    "nonzero": "must be a finite vector of non-zero length",
}


def _failing(x, kind):
    """Per entry of x (a vector: one entry), whether it fails the check `kind`."""
    finite = jnp.isfinite(x) if not isinstance(x, np.ndarray) else np.isfinite(x)
    if kind == "positive":
        return ~(finite & (x > 0.0))
    if kind == "nonnegative":
        return ~(finite & (x >= 0.0))
    if kind == "nonzero":
        return ~(finite.all() & ((x * x).sum() > 0.0))
    return ~finite


def real(
    builder: str,
    name: str,
    value,
    kind: str = "finite",
    shape: tuple | None = (),
    traced: bool = True,
) -> Array:
    """`value` as a float64 array, refused (naming `builder` and `name`) unless it is real, of
    `shape` (None: any) and, entry by entry, `kind` ("finite", "positive", "nonnegative";
    "nonzero": a finite vector of non-zero length). `traced=False` leaves a traced value to
    the checks of the elements it becomes (which name the element)."""
    if value is None or not is_real(value):
        raise JaxmbError.about(
            builder,
            f"{name} must be a real number (or numbers), got {value!r} of type "
            f"{type(value).__name__}",
        )
    x = jnp.asarray(value, jnp.float64)
    if shape is not None and x.shape != shape:
        want = "be a number" if shape == () else f"have shape {shape}"
        raise JaxmbError.about(builder, f"{name} must {want}, got shape {x.shape}")
    if is_concrete(x):
        v = np.asarray(x)
        bad = np.atleast_1d(_failing(v, kind))
        if bad.any():
            if v.ndim == 0 or kind == "nonzero":
                raise JaxmbError.about(builder, f"{name} = {v.tolist()} {PROBLEMS[kind]}")
            k = np.unravel_index(int(np.argmax(bad.reshape(-1))), v.shape)
            where = ", ".join(map(str, k))
            raise JaxmbError.about(builder, f"{name}[{where}] = {v[k].tolist()} {PROBLEMS[kind]}")
        return x
    if not traced:
        return x
    message = f"{builder}: {name} {PROBLEMS[kind]} (traced value)"
    return jnp.asarray(_errors.error_if(x, jnp.any(_failing(x, kind)), message))


def attached(x: Array, builder: str, name: str, derived, kind: str = "finite") -> Array:
    """x, refused unless `derived` (a quantity of the arguments, e.g. the vector between two
    points) passes the check `kind` of `real`: concrete at once, traced by a runtime check
    attached to x (x's value unchanged)."""
    d = real(builder, name, derived, kind, shape=None, traced=False)
    if is_concrete(d):
        return x
    message = f"{builder}: {name} {PROBLEMS[kind]} (traced value)"
    return jnp.asarray(_errors.error_if(x, jnp.any(_failing(d, kind)), message))


def reals(builder: str, name: str, values, count: int, kind: str = "finite"):
    """`count` numbers (a sequence or an array) as a tuple of float64 scalars, each checked as
    `real` (named `name[k]`)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__") or len(values) != count:
        raise JaxmbError.about(builder, f"{name} must hold {count} numbers, got {values!r}")
    return tuple(real(builder, f"{name}[{k}]", v, kind) for k, v in enumerate(values))


def flag(builder: str, name: str, value) -> bool:
    """`value` as a bool, refused unless it is True or False (a string such as "no" is
    truthy: it would switch the option on)."""
    if not isinstance(value, (bool, np.bool_)):
        raise JaxmbError.about(
            builder, f"{name} must be True or False, got {value!r} of type {type(value).__name__}"
        )
    return bool(value)


def vector(builder: str, name: str, value, kind: str = "finite") -> Array | None:
    """A 2-vector (x, y) checked as `real`, or None as it is."""
    return None if value is None else real(builder, name, value, kind, (2,))


def drive_or_none(builder: str, name: str, value):
    """`value` unless it is neither None nor a drive function (`jaxmb.drive`)."""
    if value is not None and not isinstance(value, AbstractDrive):
        raise JaxmbError.about(
            builder,
            f"{name} must be a drive function of time (jaxmb.drive, e.g. "
            f"mb.drive.Harmonic(...)) or None, got {value!r} of type {type(value).__name__}",
        )
    return value
