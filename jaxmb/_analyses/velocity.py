"""Velocity and acceleration analysis: consistent velocities, driven kinematics."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Real

from .._custom_types import Coordinates, CoordinatesLike, ScalarLike
from .._linalg.dense import pinv_solve
from .._model.arguments import checked_option
from .._model.input_checks import check_shapes, checked_finite
from .._model.model import Model
from .._runtime import errors as _errors
from .assemble import assemble, assembly_failure, failure_messages

VELOCITY_TOL = 1e-9


def consistent_velocity(
    model: Model,
    q: CoordinatesLike,
    qd: CoordinatesLike,
    t: ScalarLike = 0.0,
    *,
    throw: bool = True,
) -> Coordinates:
    """Projection of qd onto C(q, t) qd + b(q, t) = 0 (seed 001, eq. 4):

        qd* = qd - C^+ (C qd + b),

    the velocity closest to qd (Euclidean norm) that satisfies every velocity constraint.
    Raises (with `throw`, also inside jit) when the constraints admit no velocity (b not in the
    range of C) or q or qd has a nan or inf entry.
    """
    q = jnp.asarray(q, jnp.float64)
    qd = jnp.asarray(qd, jnp.float64)
    with _errors.reporting("consistent_velocity"):
        check_shapes(model, q=q, qd=qd)
        if throw:
            q = checked_finite(model, q, "q")
            qd = checked_finite(model, qd, "qd")
    if model.num_rows == 0:
        return qd
    return _consistent_velocity(model, q, qd, jnp.asarray(t, jnp.float64), throw)


@_errors.checked_jit  # one compiled program per model structure, cacheable (no callback)
def _consistent_velocity(model, q, qd, t, throw):
    C = model.C(q, t)
    g = model.velocity_residual(q, qd, t)
    qd_star = qd - pinv_solve(C, g)
    if throw:
        residual = jax.lax.stop_gradient(C @ qd_star + model.b(q, t))
        scale = 1.0 + jnp.max(jnp.abs(jax.lax.stop_gradient(qd)))
        qd_star = _errors.error_if(
            qd_star,
            jnp.max(jnp.abs(residual)) > VELOCITY_TOL * scale,
            "consistent_velocity: the velocity constraints C qd + b = 0 have no solution "
            "(contradictory drivers or a singular configuration); check the drivers' rates.",
        )
    return qd_star


class KinematicsResult(eqx.Module):
    """q, qd, qdd of a kinematically driven mechanism at the times ts (T of them; `*batch`:
    leading axes where `kinematics` is vmapped)."""

    ts: Float[Array, "*batch T"]
    q: Float[Array, "*batch T n"]
    qd: Float[Array, "*batch T n"]
    qdd: Float[Array, "*batch T n"]


def kinematics(
    model: Model,
    ts: Real[ArrayLike, " T"],
    q: CoordinatesLike | None = None,
    *,
    tol: float = 1e-12,
) -> KinematicsResult:
    """Kinematic analysis of a driven mechanism (dof = 0): at each t in ts,

        Phi(q, t) = 0 (assemble, warm-started from the previous instant),
        C qd = -b,   C qdd = gamma   (seed 001, eq. 4 and 8; min-norm for redundant rows).

    **Returns:** `KinematicsResult(ts, q, qd, qdd)`, each with a leading time axis. Jitted by the
    caller (`jax.jit(mb.kinematics)` or inside any jitted function).
    """
    ts = jnp.asarray(ts, jnp.float64)
    q_start = jnp.asarray(model.q0 if q is None else q, jnp.float64)

    with _errors.reporting("assemble"):  # q is the first assembly's start
        q_start = checked_finite(model, q_start, "q")
    with _errors.reporting("kinematics"):
        q_start = checked_option(q_start, tol, "tol")

    def step(q_prev, t):
        # the assembly check leaves the loop as data (a check inside it would be a callback)
        q_t = assemble(model, q_prev, t, tol=tol, throw=False)
        bad, worst = assembly_failure(model, q_t, t, tol)
        C = model.C(q_t, t)
        qd_t = pinv_solve(C, -model.b(q_t, t))
        qdd_t = pinv_solve(C, model.gamma(q_t, qd_t, t))
        return q_t, (q_t, qd_t, qdd_t, bad, worst)

    _, (qs, qds, qdds, bad, worst) = jax.lax.scan(step, q_start, ts)
    if model.m:
        qs = _errors.branched_error_if(
            qs, jnp.any(bad), worst[jnp.argmax(bad)], failure_messages(model)
        )
    return KinematicsResult(ts, qs, qds, qdds)
