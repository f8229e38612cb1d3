"""Checks of the state vectors handed to jaxmb's functions: their shape (at trace time) and
finite entries (at run time, eagerly or inside jit through `jaxmb._runtime.errors`), each error
naming the function (the one being reported, `jaxmb._runtime.errors.reporting`), the argument
and the coordinate by body and component."""

import jax.numpy as jnp
from jaxtyping import Array

from .._runtime import errors as _errors


def check_shapes(model, **vectors):
    """Trace-time check that each state vector (q, qd, ...) has shape (n,); the error names the
    function, the argument and the expected layout."""
    for label, x in vectors.items():
        if jnp.shape(x) != (model.n,):
            raise _errors.wrong_argument(
                f"{label} must have shape (n,) = ({model.n},): x, y, phi of each of the "
                f"{model.num_bodies} bodies {list(model.body_names)}; got shape {jnp.shape(x)}"
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
    messages = tuple(
        _errors.named(f"{label}[{3 * k + c}] ({comp} of body {body!r}) is not finite")
        for k, body in enumerate(model.body_names)
        for c, comp in enumerate(("x", "y", "phi"))
    )
    bad = ~jnp.isfinite(x)
    cause = "nonfinite_velocities" if label.startswith("qd") else "nonfinite_positions"
    return _errors.branched_error_if(x, jnp.any(bad), jnp.argmax(bad), messages, cause)
