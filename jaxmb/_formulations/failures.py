"""Why a simulation stopped before t1: non-finite forces, a singular configuration, step-size
collapse or too many steps.

diffrax reports *that* an integration failed (its result code) and, with `SaveAt(t1=True)`,
the last state it accepted; `diagnose` finds *why* from that state:

- non-finite applied forces: some force element returns inf or nan there (or a moment later);
- singular configuration: the singular value sigma_k of C = [Phi_q; Psi] that was the smallest
  non-zero one at t0 (k = rank at t0) has fallen below SINGULAR_RTOL sigma_max, i.e. rows of C
  have become (nearly) dependent, as at the limit position of a driven linkage, where the
  constrained velocities grow like 1 / sqrt(t* - t) and the step size collapses; the pair
  carrying the largest share of the dependent combination (the left singular vector u_k) is
  named;
- otherwise the step size collapsed (diffrax `dt_min_reached`; the force element whose
  generalized force changes most over a short probe step is named) or max_steps ran out.

SINGULAR_RTOL: at a square-root limit position the step size reaches dtmin = 1e-12 |t1 - t0|
when sigma_k / sigma_max is about 1e-6 (1.3e-6 for the pushed pendulum of the tests), well
below 1e-4, while regular configurations of reasonably scaled mechanisms stay far above it.
The diagnosis runs only after a failure, so a false verdict can only change a message.

Messages are static strings per cause (`_errors.branched_error_if`), so they also work inside jit;
an eager call adds the time reached and every pair involved.
"""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp

from .._linalg.dense import numerical_rank, svd
from .._runtime import errors as _errors
from .._runtime.exceptions import JaxmbRuntimeError
from .._runtime.results import RESULTS

SINGULAR_RTOL = 1e-4
"""sigma_k / sigma_max below this at the stop state marks a singular configuration."""

DTMIN_RTOL = 1e-12
"""Default smallest step of simulate's step-size controller, relative to |t1 - t0|."""

TRACED_TIME = "Trajectory.t_stop (rerun with throw=False)"


def messages(model, when=TRACED_TIME) -> tuple[str, ...]:
    """Static messages indexed by the cause code of `diagnose` (0: success, never raised);
    `when` names the time the integration stopped."""
    forces = tuple(
        f"simulate: the applied force of {type(f).__name__} {f.name!r} is not finite where the "
        f"integration stopped, t = {when}; check its parameters and its drive function"
        for f in model.force_elements
    )
    singular = tuple(
        f"simulate: a singular configuration was reached at t = {when}: the rows of pair "
        f"{name!r} become dependent on other rows of C (the rank of C drops), so the "
        "constrained motion cannot go on (a driver pushes the mechanism into a limit or dead "
        "position, or the linkage locks) or this formulation cannot pass it (a bifurcation, "
        "where branches of the motion cross, e.g. a parallelogram's collinear position: "
        "formulation=mb.Projection() passes it on the branch the velocity selects); check "
        "mb.solvability(model, q) near that time"
        for name in model.pair_names
    )
    collapse = tuple(
        f"simulate: the step size collapsed (below dtmin = {DTMIN_RTOL:g} |t1 - t0|) at "
        f"t = {when}: forces or drive functions vary too fast there, are discontinuous or "
        f"unbounded{suspect}; check them, or loosen rtol and atol"
        for suspect in [
            f" (the applied force changing fastest there is {type(f).__name__} {f.name!r})"
            for f in model.force_elements
        ]
    ) + (
        f"simulate: the step size collapsed (below dtmin = {DTMIN_RTOL:g} |t1 - t0|) at "
        f"t = {when}, where no applied force changes: a drive function varies too fast or is "
        "discontinuous there, or the time span t1 - t0 is so long that dtmin exceeds the steps "
        "the motion needs (simulate shorter spans); check them, or loosen rtol and atol",
    )
    others = (
        f"simulate: max_steps ran out at t = {when}, before t1. The usual cause is a very "
        "stiff spring or damper: its vibration, of period 2 pi sqrt(m / k), forces steps "
        "shorter than that period. If it stands for a rigid connection, model it as a "
        "constraint instead (e.g. mb.Distance between the same points), which removes the "
        "vibration; otherwise raise max_steps (the number of steps grows like sqrt(k)). "
        "Implicit solvers (diffrax.Kvaerno5) do not lift this limit when the stiff element "
        "rotates.",
        f"simulate: the integration failed at t = {when} (see Trajectory.result)",
    )
    return ("",) + forces + singular + collapse + others


def _forces(model, q, qd, t):
    """Generalized force of each force element over the velocity coordinates (its force over
    q at qdot = T(q) qd, pulled back by T(q)^T), shape (elements, n)."""
    qdot, pull = model.qdot(q, qd), model.kind.stacked_pull_back
    return jnp.stack(
        [pull(q, f.generalized_force(model, q, qdot, t)) for f in model.force_elements]
    )


def singular_share(model, q0, t0, q, t):
    """(sigma_k / sigma_max at (q, t) with k the rank of C at (q0, t0), share of each pair in the
    left singular vector u_k)."""
    rank0 = numerical_rank(model.C(q0, t0))
    U, s, _ = svd(jax.lax.stop_gradient(jnp.nan_to_num(model.C(q, t))))
    k = jnp.clip(rank0 - 1, 0, s.shape[0] - 1)
    ratio = jnp.where(rank0 > 0, s[k] / jnp.maximum(s[0], 1e-300), 1.0)
    rows = jnp.asarray(model.row_pair_index)
    share = jax.ops.segment_sum(U[:, k] ** 2, rows, num_segments=len(model.pair_names))
    return ratio, share


def diagnose(model, result, t0, q0, t, q, qd, probe_dt):
    """Cause code of a stop at state (t, q, qd) (0 when `result` is success), whether the state
    is singular, sigma_k / sigma_max and the per-pair shares of the dependent combination.

    Forces are probed at the state and `probe_dt` later (a force that turns non-finite at some
    instant makes the steps shrink up to it)."""
    E, P = len(model.force_elements), len(model.pair_names)
    collapse = 1 + E + P
    failed = result != diffrax.RESULTS.successful
    cause = jnp.where(failed, collapse + E + 2, 0)
    cause = jnp.where(failed & (result == diffrax.RESULTS.max_steps_reached), cause - 1, cause)
    if E:
        now, later = (
            _forces(model, q, qd, t),
            _forces(model, model.retract(q, probe_dt * qd), qd, t + probe_dt),
        )
        change = jnp.nan_to_num(jnp.max(jnp.abs(later - now), axis=1), nan=jnp.inf)
        # only a force that changes is suspected (a constant one, e.g. gravity, never is)
        collapse = collapse + jnp.where(jnp.max(change) > 0.0, jnp.argmax(change), E)
    else:
        collapse = collapse + E
    cause = jnp.where(failed & (result == diffrax.RESULTS.dt_min_reached), collapse, cause)
    ratio, share, singular = jnp.asarray(1.0), jnp.zeros(P), jnp.asarray(False)
    if P:
        # only on failure: the SVDs of the dense C cost O(n^3) (seconds at n = 2400), and a
        # traced successful run must not pay them (lax.cond runs one branch, except under vmap)
        ratio, share = jax.lax.cond(
            failed,
            lambda: singular_share(model, q0, t0, q, t),
            lambda: (jnp.ones((), q.dtype), jnp.zeros(P, q.dtype)),
        )
        singular = failed & (ratio < SINGULAR_RTOL)
        cause = jnp.where(singular, 1 + E + jnp.argmax(share), cause)
    if E:
        ok = jnp.all(jnp.isfinite(now), axis=1) & jnp.all(jnp.isfinite(later), axis=1)
        cause = jnp.where(failed & ~jnp.all(ok), 1 + jnp.argmin(ok), cause)
    return cause, singular, ratio, share


def check_initial_forces(model, q0, qd0, t0):
    """q0, raising (also inside jit) when a force element is not finite at the initial state;
    the message names the element."""
    if not model.force_elements:
        return q0
    ok = jnp.all(jnp.isfinite(_forces(model, q0, qd0, t0)), axis=1)
    texts = tuple(
        f"simulate: the applied force of {type(f).__name__} {f.name!r} is not finite at the "
        "initial state (t0); check its parameters and its drive function"
        for f in model.force_elements
    )
    return _errors.branched_error_if(q0, ~jnp.all(ok), jnp.argmin(ok), texts, "nonfinite_force")


def check_stop(model, result, start, stop, dtmin, saved, throw):
    """(saved, singular): `saved` threaded through an error when the run failed and `throw`
    (message from `messages`); `singular` as in `diagnose`. `start` = (t0, q0), `stop` =
    (t, q, qd) the last state reached. Eagerly a successful run skips the analysis, and the
    message of a failure gives the time reached and every pair with over 10 % of the
    dependent combination."""
    failed = _errors.concrete(result != diffrax.RESULTS.successful)
    if failed is not None and not bool(failed):  # also under an eager jax.grad
        return saved, jnp.asarray(False)
    # a diagnosis, not a result: no derivative flows through it (nor through its SVDs)
    frozen = jax.tree.map(
        lambda x: jax.lax.stop_gradient(x) if eqx.is_inexact_array(x) else x,
        (model, start, stop, dtmin),
    )
    model, (t0, q0), (t, q, qd), dtmin = frozen
    cause, singular, ratio, share = diagnose(model, result, t0, q0, t, q, qd, 1e3 * dtmin)
    if not throw:
        return saved, singular
    if _errors.concrete(cause) is None:
        return _errors.branched_error_if(saved, cause != 0, cause, messages(model)), singular
    code = int(_errors.known(cause))
    text = messages(model, when=f"{float(_errors.known(t)):.10g}")[code]
    E, P = len(model.force_elements), len(model.pair_names)
    if 1 + E + P <= code <= 1 + 2 * E + P:  # a step-size collapse: how short dtmin was
        text += f"; dtmin = {float(_errors.known(dtmin)):.3g} s"
    if E < code <= E + P:
        share, ratio = _errors.known(share), float(_errors.known(ratio))
        names = [nm for nm, w in zip(model.pair_names, share) if w > 0.1]
        text += f"; pairs involved: {names}; sigma_k / sigma_max = {ratio:.2e}"
    raise JaxmbRuntimeError(text, function="simulate", cause=_code(model, code))


def _code(model, cause):
    """The RESULTS code of a cause of `diagnose` (its index into `messages`)."""
    E, P = len(model.force_elements), len(model.pairs)
    if cause <= E:
        return RESULTS.nonfinite_force
    if cause <= E + P:
        return RESULTS.singular_configuration
    if cause <= 2 * E + P + 1:
        return RESULTS.dt_min_reached
    return RESULTS.max_steps_reached if cause == 2 * E + P + 2 else None
