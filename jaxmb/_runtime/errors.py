# pyright: reportPrivateImportUsage=false
# (this module is the seam to equinox's error policy, kept in its private _errors module)
"""Runtime checks that keep host callbacks out of the programs jaxmb compiles for eager calls.

JAX's persistent compilation cache does not store programs that contain host callbacks, and
`eqx.error_if` is one (a `pure_callback` that raises). jaxmb therefore writes every runtime
check with the two functions below instead of equinox's:

    x = error_if(x, pred, "message")                      # like eqx.error_if
    x = branched_error_if(x, pred, index, ("m0", "m1"))   # like eqx.branched_error_if

Outside a `checked_jit` program (inside the user's own jit, vmap or grad) they are
`eqx.error_if` / `eqx.branched_error_if` (raise on the `EQX_ON_ERROR` policy, also inside jit).
While a `checked_jit` function is traced they *collect* the check instead: x comes back
unchanged, the flag and index become extra outputs of the compiled program (the message tuples
are static outputs, returned also on cache hits), and the Python wrapper raises
`JaxmbRuntimeError` (an `eqx.EquinoxRuntimeError`) with the first failed check's message after
the call. So the
program holds no callback and the persistent cache keeps it. When the wrapper's outputs are
traced (an outer jit or vmap), the collected checks are re-issued through `branched_error_if`
at that level, i.e. they behave as before.

Checks traced inside a loop or branch body (lax.while_loop, scan, cond: diffrax's vector
field, Newton loops) cannot leave that body as data; there these functions delegate to equinox
(a callback stays in such programs). Prefer returning a status from the loop and checking it
after the loop.

Derivatives: a delegated check multiplies the tangents of x by a factor 1 that the check
returns, and a checked_jit function's outputs carry a zero tangent term from every input's
(`_tied`), so jit(grad) computes every check that guards an input or output of what it
differentiates, even where the derivative is structurally zero (equinox's checks ride on the
primal values, which a backward pass drops as dead code).

A check may name its `RESULTS` code (`cause="not_removable"`), which the raised error carries
as `cause`. Messages name the analysis being run through `named`, which reads the function an
entry point set with `reporting(...)`; `checked_jit` makes that function part of the compiled
program's key (a program never shows another function's name) and the raised error's
`function`. The checks of arguments (jaxmb._model.arguments, input_checks, a reaction method's
`bind`) are written the same way, so no function name is passed down to them:

    with reporting("assemble"):                            # in the entry point
        max_steps = checked_count(max_steps, "max_steps")  # "assemble: max_steps must be ..."

and a wrong argument found at trace time raises `wrong_argument(text)`, a `JaxmbError` carrying
the function.

`quiet_third_party_checks()` switches equinox's *default* policy off while a library call is
traced (diffrax's own `SaveAt(ts)` checks, which jaxmb performs itself before the call); jaxmb's
own delegated checks pass the process policy explicitly and are not affected.

    @checked_jit          # instead of eqx.filter_jit, for a compiled entry-point core
    def _core(model, q):
        q = error_if(q, ~jnp.all(jnp.isfinite(q)), "q is not finite")
        return q
"""

import contextlib
import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar, overload

import equinox as eqx
import jax
import jax.core
import jax.numpy as jnp
import numpy as np
from equinox import _errors as _eqx_errors  # the module holding equinox's default policy
from equinox.internal import unvmap_any, unvmap_max
from jax.extend.core import concrete_or_error

from . import announce as _announce, program_store as _program_store
from .exceptions import JaxmbError, JaxmbRuntimeError
from .results import RESULTS

_ON_ERROR = _eqx_errors.EQX_ON_ERROR  # the process policy (environment EQX_ON_ERROR)
_state = threading.local()


class _Collector:
    """Checks recorded while one checked_jit function is traced (at the trace `trace`)."""

    def __init__(self):
        self.trace = _current_trace()
        self.preds, self.indices, self.msgs = [], [], []


def _current_trace():
    """The trace that new values are recorded at (JAX has no public accessor)."""
    from jax._src import core

    return core.trace_ctx.trace


def _stack():
    if not hasattr(_state, "stack"):
        _state.stack = []
    return _state.stack


@contextlib.contextmanager
def reporting(function: str):
    """Within the body, failures are reported as `function`'s (an analysis entry point sets it,
    e.g. "reactions(method=min_norm)"): messages written with `named` start with it and
    `JaxmbError.function` holds it. Numerical code reads it here; it is never passed down."""
    names = _names()
    names.append(function)
    try:
        yield
    finally:
        names.pop()


def function_name() -> str | None:
    """The function failures are reported as (`reporting`), or None outside any."""
    names = _names()
    return names[-1] if names else None


def named(text: str) -> str:
    """`text` (a cause, e.g. "the remaining rows leave a singular system") as a message of the
    function being reported (`reporting`): "function: text"."""
    function = function_name()
    return text if function is None else f"{function}: {text}"


def wrong_argument(text: str) -> JaxmbError:
    """The error of a wrong argument found at trace time (a shape, an option): a `JaxmbError`
    (a ValueError) "function: text" of the function being reported (`reporting`), which it
    carries as `function` (and as `subject`, `text` as `detail`)."""
    function = function_name()
    if function is None:
        return JaxmbError(text)
    return JaxmbError.about(function, text, function=function)


def _names():
    if not hasattr(_state, "names"):
        _state.names = []
    return _state.names


def _failure(text: str, cause: str) -> JaxmbRuntimeError:
    """The exception of a failed check whose RESULTS code is named `cause` ("" for none)."""
    code = getattr(RESULTS, cause) if cause else None
    return JaxmbRuntimeError(text, function=function_name(), cause=code)


def _delegate(x, pred, index, msgs):
    return _checked(x, pred, index, msgs=tuple(msgs))


@eqx.filter_custom_jvp
def _checked(x, pred, index, *, msgs):
    """`eqx.branched_error_if`, whose check also guards the tangents (`_checked_jvp`)."""
    return eqx.branched_error_if(x, pred, index, msgs, on_error=_ON_ERROR)


@_checked.def_jvp
def _checked_jvp(primals, tangents, *, msgs):
    """The check returns, besides x, a unit factor that multiplies x's tangents.
    equinox's own rule passes the tangents through unchecked, so only the primal x carried
    the check, and jit(grad), whose backward pass needs the tangents but often not x (never
    a function's output), dropped it as dead code: a refusal vanished under grad. The factor
    is needed by the backward pass, so the check stays; it is exactly 1."""
    x, pred, index = primals
    tx, _, _ = tangents
    out, unit = eqx.branched_error_if(
        (x, jnp.ones((), jnp.float64)), pred, index, msgs, on_error=_ON_ERROR
    )
    return out, _tie(x, tx, tx, unit)  # a model's leaves are checked together: tied


def _tie(out, t_out, t_in, unit=None):
    """out's tangents `t_out`, each plus 0 * sum(t_in) (a zero that depends on all of `t_in`),
    times `unit` (None: 1)."""
    sums = [jnp.sum(t) for t in jax.tree.leaves(t_in)]
    nothing = 0.0 * jnp.asarray(sum(sums)) if sums else None

    def tie(o, t):
        if not eqx.is_inexact_array(o) or (t is None and nothing is None):
            return None
        t = jnp.zeros_like(o) if t is None else t
        t = t if nothing is None else t + nothing.astype(o.dtype)
        return t if unit is None else t * unit.astype(o.dtype)

    return jax.tree.map(tie, out, t_out, is_leaf=_is_none)


def _is_none(x):
    return x is None


def _traced(leaf) -> bool:
    """Whether `leaf` is a tracer whose value is not known now (jit, vmap)."""
    return isinstance(leaf, jax.core.Tracer) and concrete(leaf) is None


@eqx.filter_custom_jvp
def _tied(out, inputs):
    """out; its tangents depend on all of `inputs`' (by a term 0 * sum(t_in)). A check's
    unit factor (`_checked_jvp`) guards the tangents it multiplies, which is not enough where
    the derivative is structurally zero (a tolerance, a length that enters Phi only): nothing
    of the check is then computed by jit(grad). Tied, a derivative of an analysis's output
    with respect to any of its inputs passes the checks on out (the collected ones) and on
    the inputs (a build's), so they hold whatever the derivative is."""
    return out


@_tied.def_jvp
def _tied_jvp(primals, tangents):
    (out, _), (t_out, t_in) = primals, tangents
    return out, _tie(out, t_out, t_in)


def concrete(x):
    """x as a NumPy value when it is known now (a plain array, or a tracer of an eager
    jax.grad / jvp, whose primal values are known), else None (jit, vmap)."""
    if isinstance(x, jax.core.Tracer) and hasattr(x, "to_concrete_value"):
        # asked first: raising ConcretizationTypeError builds a message that prints the whole
        # traced program, which made every check cost time proportional to the trace
        value = x.to_concrete_value()
        return None if value is None else np.asarray(value)
    try:
        return np.asarray(concrete_or_error(None, x))
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        return None


def known(x) -> np.ndarray:
    """x's value, where the caller has established that it is known now (`concrete`)."""
    value = concrete(x)
    if value is None:
        raise TypeError("a value known only inside a compiled program was read as a number")
    return value


def branched_error_if(x, pred, index, msgs, cause: str = ""):
    """x unchanged; fails with msgs[index] where any(pred) (see the module docstring).
    `cause`: the name of the RESULTS code the failure reports (`JaxmbError.cause`)."""
    msgs = tuple(msgs)
    if cause:
        getattr(RESULTS, cause)  # an unknown name fails here, when the check is written
    stack = _stack()
    known, where = concrete(pred), concrete(index)
    if known is not None and where is not None:  # values known now (eager, also under an
        if np.any(known):  # eager jax.grad): decided here, no program
            raise _failure(msgs[int(np.max(where))], cause)
        return x
    if not stack:
        return _delegate(x, pred, index, msgs)
    collector = stack[-1]
    flag = unvmap_any(jnp.asarray(pred))  # vmap inside the program: any batch member fails
    where = unvmap_max(jnp.asarray(index, jnp.int32))
    if getattr(flag, "_trace", None) is not collector.trace or (
        isinstance(where, jax.core.Tracer) and where._trace is not collector.trace
    ):
        return _delegate(x, pred, index, msgs)  # inside a loop or branch body
    collector.preds.append(flag)
    collector.indices.append(jnp.broadcast_to(where, ()).astype(jnp.int32))
    collector.msgs.append((cause, *msgs))  # static: the code's name, then the messages
    return x


def error_if(x, pred, msg, cause: str = ""):
    """x unchanged; fails with msg where any(pred) (see the module docstring and
    `branched_error_if`)."""
    return branched_error_if(x, pred, 0, (msg,), cause)


def raise_collected(out, flags, indices, msgs, inputs=()):
    """out, after raising the first failed check (eagerly), or with the checks re-issued
    at the caller's trace level (inside an outer jit or vmap). `inputs`: the program's
    arguments, whose tangents out's are tied to (`_tied`)."""
    failed, where = concrete(flags), concrete(indices)  # also under an eager jax.grad
    if failed is None or where is None or any(map(_traced, jax.tree.leaves(inputs))):
        out = _tied(out, eqx.filter(inputs, eqx.is_inexact_array))
        for k, (cause, *texts) in enumerate(msgs):
            out = branched_error_if(out, flags[k], indices[k], texts, cause)
        return out
    for k, (cause, *texts) in enumerate(msgs):
        if failed[k]:
            raise _failure(texts[int(where[k])], cause)
    return out


_F = TypeVar("_F", bound=Callable[..., Any])


@overload
def checked_jit(fn: _F, *, analysis: str | None = None) -> _F: ...


@overload
def checked_jit(fn: None = None, *, analysis: str | None = None) -> Callable[[_F], _F]: ...


def checked_jit(fn: Callable | None = None, *, analysis: str | None = None) -> Any:
    """`eqx.filter_jit(fn)` whose runtime checks (`error_if`, `branched_error_if`) are returned
    as data and raised in Python after the call: no host callback in the compiled program.
    `analysis`: the name a first compile is announced under (default: fn's module)."""
    if fn is None:
        return functools.partial(checked_jit, analysis=analysis)
    name = analysis or fn.__module__.rsplit(".", 1)[-1].lstrip("_")

    def collect(function, *args, **kwargs):  # `function` (static): the one reported as
        collector = _Collector()
        _stack().append(collector)
        try:
            with reporting(function) if function else contextlib.nullcontext():
                out = fn(*args, **kwargs)
        finally:
            _stack().pop()
        flags = jnp.stack(collector.preds) if collector.preds else jnp.zeros(0, bool)
        indices = jnp.stack(collector.indices) if collector.indices else jnp.zeros(0, jnp.int32)
        return out, flags, indices, tuple(collector.msgs)

    program = eqx.filter_jit(collect)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        args = (function_name(), *args)
        with _announce.compiling(_announce.public_name(name), args[1:]):
            # an eager call with the compilation cache on: the traced program from disk
            stored = _program_store.call(fn, collect, args, kwargs, name)
            out, flags, indices, msgs = program(*args, **kwargs) if stored is None else stored
        return raise_collected(out, flags, indices, msgs, (args[1:], kwargs))

    return wrapper


@contextlib.contextmanager
def quiet_third_party_checks():
    """equinox's default error policy "off" while the body traces a library call (see the
    module docstring); jaxmb's own delegated checks keep the process policy."""
    saved = _eqx_errors.EQX_ON_ERROR
    _eqx_errors.EQX_ON_ERROR = "off"
    try:
        yield
    finally:
        _eqx_errors.EQX_ON_ERROR = saved
