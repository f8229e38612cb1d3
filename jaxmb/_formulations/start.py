"""The checks of a simulation's initial state, shared by every formulation: eagerly (throw=True)
they raise naming the entry or the pair; with throw=False a bad start is refused per batch
member instead: its `Trajectory.result` is the code of the reason (`START_CODES`) and nothing is
integrated for it."""

import dataclasses

import jax
import jax.core
import jax.numpy as jnp

from .._model.input_checks import checked_finite
from .._model.state_checks import checked_positions, checked_velocities
from .._runtime import errors as _errors
from .._runtime.results import RESULTS
from . import failures as _failures

POSITION_TOL = 1e-8
VELOCITY_TOL = 1e-8


START_CODES = (
    RESULTS.nonfinite_positions,
    RESULTS.nonfinite_velocities,
    RESULTS.inconsistent_positions,
    RESULTS.inconsistent_velocities,
    RESULTS.nonfinite_force,
)
"""The codes of a start `simulate(..., throw=False)` refuses, in the order checked: the member's
`Trajectory.result` is the first that applies, and nothing is integrated for it (t_stop = t0,
every saved state inf); rerun that member with throw=True for the message naming the entry or
the pair. With throw=True the error raised carries the same code as `cause`."""


def start_result(model, q0, qd0, t0):
    """`RESULTS.successful`, or the first of START_CODES that refuses the initial state."""
    flags = [~jnp.all(jnp.isfinite(q0)), ~jnp.all(jnp.isfinite(qd0))]
    flags.append(~(jnp.max(jnp.abs(model.phi(q0, t0)), initial=0.0) <= POSITION_TOL))
    residual = model.velocity_residual(q0, qd0, t0)
    flags.append(
        ~(jnp.max(jnp.abs(residual), initial=0.0) <= VELOCITY_TOL * (1.0 + jnp.max(jnp.abs(qd0))))
    )
    forces = _failures._forces(model, q0, qd0, t0) if model.force_elements else jnp.zeros(1)
    flags.append(~jnp.all(jnp.isfinite(forces)))
    result = RESULTS.successful
    for flag, code in reversed(tuple(zip(flags, START_CODES))):
        result = RESULTS.where(flag, code, result)
    return result


def check_initial_state(model, q0, qd0, t0, throw=True):
    """(q0, qd0, start): with throw, raising for a bad initial state naming the entry or the
    pair (start None); without, its `start_result`, per member under vmap."""
    if not throw:
        return q0, qd0, start_result(model, q0, qd0, t0)
    with _errors.reporting("simulate"):  # simulate's own checks, whichever formulation runs
        q0 = checked_finite(model, q0, "q0")
        qd0 = checked_finite(model, qd0, "qd0")
        q0 = checked_positions(
            model,
            q0,
            t0,
            POSITION_TOL,
            _errors.named(
                "the initial configuration violates the position constraints of pair "
                f"{{!r}} (|Phi| above {POSITION_TOL}); call mb.assemble(model, q0) first."
            ),
            relative=False,
        )
        qd0 = checked_velocities(
            model,
            q0,
            qd0,
            t0,
            VELOCITY_TOL,
            _errors.named(
                "the initial velocity violates the velocity constraints C qd + b = 0 of "
                "pair {!r}; call mb.consistent_velocity(model, q0, qd0) first."
            ),
        )
    return _failures.check_initial_forces(model, q0, qd0, t0), qd0, None


# the independent-coordinate formulation checks the initial state in its own small program
checked_initial_state = _errors.checked_jit(check_initial_state, analysis="simulate")


def refuse_start(model, start, q0, qd0, t0, t1, ts):
    """A refused start (`start` not successful) integrates nothing (per member): t1 = t0, a
    consistent dummy state; with throw=False `refused` marks the run failed afterwards. With
    throw=True (`start` None) the start's checks raise after the program has run, which inside
    an outer jit is after the integration: a bad start is refused here too, so that it does
    not integrate (a nan q0) until max_steps first."""
    if start is None:
        if not any(isinstance(x, jax.core.Tracer) for x in (q0, qd0, t0)):
            return q0, qd0, t1, ts  # known values: a bad start has raised already
        start = start_result(model, q0, qd0, t0)
    accepted = start == RESULTS.successful
    t1, ts = jnp.where(accepted, t1, t0), jnp.where(accepted, ts, t0)
    return jnp.where(accepted, q0, model.q0), jnp.where(accepted, qd0, 0.0), t1, ts


def refused(traj, start, t0):
    """traj, where the start was refused (`start` not successful; None with throw=True, where
    a bad start raised) marked failed: result the refusal's code, t_stop = t0, saved states
    inf."""
    if start is None:
        return traj
    accepted = start == RESULTS.successful
    inf_unless = lambda x: jnp.where(accepted, x, jnp.inf)  # noqa: E731
    return dataclasses.replace(
        traj,
        q=inf_unless(traj.q),
        qd=inf_unless(traj.qd),
        result=RESULTS.where(accepted, traj.result, start),
        t_stop=None if traj.t_stop is None else jnp.where(accepted, traj.t_stop, t0),
    )
