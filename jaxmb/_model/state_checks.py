"""Runtime checks of a state (q, qd) handed to an analysis: finite entries, position constraints
Phi(q, t) = 0 and velocity constraints C qd + b = 0 (seed 001, eq. 1-4) within a tolerance.

The errors work eagerly and inside jit / vmap (jaxmb._runtime.errors.branched_error_if) and name the
pair owning the largest residual. Under vmap equinox reports the largest message index over the
batch, so members that pass contribute index 0 and the message names a pair of a member that fails.
"""

import jax.numpy as jnp

from .._runtime import errors as _errors
from .input_checks import checked_finite
from .rows import row_table


def worst_pair_error(model, x, residual, tol, text, holonomic_only):
    """x, raising unless max |residual| <= tol (nan fails); the message `text.format(name)`
    names the pair owning the largest entry; the cause is `RESULTS.inconsistent_positions`
    for the holonomic rows (`holonomic_only`), else `RESULTS.inconsistent_velocities`."""
    pairs = [p for p in model.pair_info if p.holonomic or not holonomic_only]
    worst = jnp.asarray(row_table(pairs).owner)[jnp.argmax(jnp.abs(residual))]
    bad = ~(jnp.max(jnp.abs(residual)) <= tol)
    return _errors.branched_error_if(
        x,
        bad,
        jnp.where(bad, worst, 0),
        tuple(text.format(p.name) for p in pairs),
        "inconsistent_positions" if holonomic_only else "inconsistent_velocities",
    )


def checked_positions(model, q, t, tol, text, relative):
    """q, raising unless the position constraints hold, max |Phi(q, t)| <= tol, or
    tol (1 + max |q|) when `relative` (seed 001, eq. 1; nan fails), naming the worst pair
    (`text.format(name)`). q as it is without holonomic rows."""
    if not model.m:
        return q
    bound = tol * (1.0 + jnp.max(jnp.abs(q))) if relative else tol
    return worst_pair_error(model, q, model.phi(q, t), bound, text, True)


def checked_velocities(model, q, qd, t, tol, text):
    """qd, raising unless the velocity constraints hold, max |C qd + b| <= tol (1 + max |qd|)
    (seed 001, eq. 3; nan fails), naming the worst pair (`text.format(name)`). qd as it is
    without constraint rows."""
    if not model.num_rows:
        return qd
    bound = tol * (1.0 + jnp.max(jnp.abs(qd)))
    return worst_pair_error(model, qd, model.velocity_residual(q, qd, t), bound, text, False)


def checked_configuration(model, q, t, tol):
    """q with the runtime checks of `checked_state` on q alone: every entry finite and
    |Phi(q, t)| <= tol (1 + max |q|)."""
    return _state_positions(model, checked_finite(model, q, "q"), t, tol)


def _state_positions(model, q, t, tol):
    return checked_positions(
        model,
        q,
        t,
        tol,
        _errors.named(
            f"q violates the position constraints of pair {{!r}} (|Phi| above {tol:g} "
            "(1 + max |q|)); assemble it with mb.assemble(model, q, t), or pass check=False "
            "to compute at this state anyway."
        ),
        relative=True,
    )


def checked_state(model, q, qd, t, tol):
    """(q, qd) with runtime checks: every entry finite, |Phi(q, t)| <= tol (1 + max |q|) and
    |C qd + b| <= tol (1 + max |qd|); the messages name the function being reported, the entry
    or the pair, and the opt-out `check=False`."""
    q = checked_finite(model, q, "q")
    qd = checked_finite(model, qd, "qd")
    q = _state_positions(model, q, t, tol)
    qd = checked_velocities(
        model,
        q,
        qd,
        t,
        tol,
        _errors.named(
            f"qd violates the velocity constraints C qd + b = 0 of pair {{!r}} (above {tol:g} "
            "(1 + max |qd|)); project it with mb.consistent_velocity(model, q, qd, t), or pass "
            "check=False to compute at this state anyway."
        ),
    )
    return q, qd
