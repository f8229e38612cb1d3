"""Checks of the state vectors handed to jaxmb's functions: their shape (at trace time) and
finite entries (at run time, eagerly or inside jit through `jaxmb._runtime.errors`), each error
naming the function (the one being reported, `jaxmb._runtime.errors.reporting`), the argument
and the coordinate by body and component."""

import jax.numpy as jnp
from jaxtyping import Array

from .._runtime import errors as _errors


def is_position(label: str) -> bool:
    """Whether the argument `label` holds positions (q, q0, q_init: over the position
    coordinates) rather than velocities or accelerations (qd, qdd, ...: over the velocity
    coordinates, the columns of C)."""
    return label.startswith("q") and not label.startswith("qd")


def layout(model, label: str) -> tuple[int, tuple[str, ...]]:
    """(length, per-body component names) of the state vector `label` of `model`."""
    kind = model.kind
    if is_position(label):
        return model.nq, kind.position_names
    return model.n, kind.velocity_names if kind.nq != kind.nv else kind.position_names


def check_shapes(model, **vectors):
    """Trace-time check that each state vector (q: (nq,); qd, qdd: (n,)) has its shape; the
    error names the function, the argument and the expected layout."""
    for label, x in vectors.items():
        size, names = layout(model, label)
        if jnp.shape(x) != (size,):
            what = "(nq,)" if size != model.n else "(n,)"
            raise _errors.wrong_argument(
                f"{label} must have shape {what} = ({size},): {', '.join(names)} of each of "
                f"the {model.num_bodies} bodies {list(model.body_names)}; got shape "
                f"{jnp.shape(x)}"
            )


def as_states(model, **vectors) -> tuple[Array, ...]:
    """The state vectors (q, qd, ...) as arrays of shape (n,) (`check_shapes`), in the order
    given: lists and NumPy arrays become JAX arrays, integers become floats."""
    check_shapes(model, **vectors)
    arrays = (jnp.asarray(x) for x in vectors.values())
    return tuple(x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(float) for x in arrays)


def checked_finite(model, x: Array, label: str) -> Array:
    """x with a runtime check (eager or inside jit) that all entries are finite; the error
    names the first bad coordinate by body and component. Its cause is
    `RESULTS.nonfinite_velocities` for the velocities (`label` qd, qd0), else
    `RESULTS.nonfinite_positions`."""
    _, names = layout(model, label)
    messages = tuple(
        _errors.named(f"{label}[{len(names) * k + c}] ({comp} of body {body!r}) is not finite")
        for k, body in enumerate(model.body_names)
        for c, comp in enumerate(names)
    )
    bad = ~jnp.isfinite(x)
    cause = "nonfinite_velocities" if label.startswith("qd") else "nonfinite_positions"
    return _errors.branched_error_if(x, jnp.any(bad), jnp.argmax(bad), messages, cause)
