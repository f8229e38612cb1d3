"""Time integration of the null-space formulation with diffrax.

Constraint stabilization (Baumgarte): the acceleration constraints are replaced by

    C qdd = gamma - 2 alpha (C qd + b) - beta^2 [Phi; 0],

so violations e of the holonomic rows obey e'' + 2 alpha e' + beta^2 e = 0 and those of the
Pfaffian rows e' + 2 alpha e = 0: integration errors decay instead of accumulating as they
would in the pure index-1 formulation. alpha = beta = 10 1/s (critically damped, time constant
0.1 s) is far slower than the step sizes the tolerances imply yet fast against the motions of
interest, so the ODE does not become stiff and the drift stays at the level of the local errors.
"""

import diffrax
import equinox as eqx
import jax.numpy as jnp
import numpy as np

from . import _errors, _failures
from ._dynamics import (
    Eliminate,
    accelerations,
    check_shapes,
    checked_finite,
    eliminated_solve,
    keep_mask,
    null_space_solve,
)
from ._independent import IndependentCoordinates, simulate_independent

POSITION_TOL = 1e-8
VELOCITY_TOL = 1e-8


class Baumgarte(eqx.Module):
    """Baumgarte stabilization parameters (1/s)."""

    alpha: float = 10.0
    beta: float = 10.0

    def gamma(self, model, q, qd, t):
        """Stabilized right-hand side gamma - 2 alpha (C qd + b) - beta^2 [Phi; 0]."""
        return self.stabilized(model.kinematic_terms(q, qd, t))

    def stabilized(self, terms):
        """The same from precomputed `Model.kinematic_terms`."""
        return terms.gamma - 2.0 * self.alpha * terms.g - self.beta**2 * terms.phi


class Trajectory(eqx.Module):
    """Saved states of a simulation: `ts` (T,), `q` and `qd` (T, n); `result` is diffrax's
    result code (`success` True when the integration reached t1); `repartitioned` (T,) marks
    the saved instants where the independent-coordinate formulation changed its partition
    (None for the other formulations). `t_stop` is the time the integration reached (t1 on
    success; saved states after it are inf) and `singular` says whether it stopped at a
    singular configuration (see `jaxmb._failures`); both None where not integrated."""

    ts: jnp.ndarray
    q: jnp.ndarray
    qd: jnp.ndarray
    result: diffrax.RESULTS
    num_steps: jnp.ndarray
    repartitioned: jnp.ndarray | None = None
    t_stop: jnp.ndarray | None = None
    singular: jnp.ndarray | None = None

    @property
    def success(self):
        return self.result == diffrax.RESULTS.successful


def _worst_pair_error(model, x, residual, tol, text, holonomic_only):
    """x, raising unless max |residual| <= tol (nan fails); the message names the pair owning
    the largest entry."""
    pairs = [p for p in model.pairs if p.holonomic or not holonomic_only]
    owner = np.concatenate([np.full(p.num_rows, k) for k, p in enumerate(pairs)])
    worst = jnp.asarray(owner)[jnp.argmax(jnp.abs(residual))]
    bad = ~(jnp.max(jnp.abs(residual)) <= tol)
    return _errors.branched_error_if(x, bad, worst, tuple(text.format(p.name) for p in pairs))


def _check_initial_state(model, q0, qd0, t0):
    q0 = checked_finite(model, q0, "simulate", "q0")
    qd0 = checked_finite(model, qd0, "simulate", "qd0")
    if model.m:
        q0 = _worst_pair_error(
            model, q0, model.phi(q0, t0), POSITION_TOL,
            "simulate: the initial configuration violates the position constraints of pair "
            f"{{!r}} (|Phi| above {POSITION_TOL}); call mb.assemble(model, q0) first.", True,
        )
    if model.num_rows:
        qd0 = _worst_pair_error(
            model, qd0, model.velocity_residual(q0, qd0, t0),
            VELOCITY_TOL * (1.0 + jnp.max(jnp.abs(qd0))),
            "simulate: the initial velocity violates the velocity constraints C qd + b = 0 of "
            "pair {!r}; call mb.consistent_velocity(model, q0, qd0) first.", False,
        )
    return _failures.check_initial_forces(model, q0, qd0, t0), qd0


# the independent-coordinate formulation checks the initial state in its own small program
_checked_initial_state = _errors.checked_jit(_check_initial_state)


class _Dynamics(eqx.Module):
    """Right-hand side (qd, qdd) of the first-order system. A module rather than a closure, so
    that diffrax's compiled solve is reused by the next eager `simulate` of the same model
    structure (a new closure per call would recompile every time)."""

    model: object
    stabilization: object
    formulation: object

    def __call__(self, t, y, args):
        model, formulation = self.model, self.formulation
        q, qd = y
        if model.num_rows == 0:
            return qd, accelerations(model, q, qd, t)
        terms = model.kinematic_terms(q, qd, t)
        gamma = (terms.gamma if self.stabilization is None
                 else self.stabilization.stabilized(terms))
        M, F = model.mass_matrix(), model.forces(q, qd, t)
        if isinstance(formulation, str) and formulation == "null_space":
            return qd, null_space_solve(M, F, terms.C, gamma)
        keep = keep_mask(model, formulation, terms.C)
        label = f"simulate(formulation={formulation!r})"
        return qd, eliminated_solve(M, F, terms.C, gamma, keep, label=label)[0]


def simulate(
    model,
    q0,
    qd0,
    t1,
    *,
    ts=None,
    t0=0.0,
    rtol=1e-8,
    atol=1e-10,
    solver=None,
    dt0=None,
    max_steps=200_000,
    stabilization=Baumgarte(),
    adjoint=None,
    throw=True,
    progress=False,
    formulation="null_space",
    stepsize_controller=None,
):
    """Integrate M qdd + C^T lambda = F with the null-space formulation (seed 001, eq. 13).

    **Arguments:**
    - `model`, initial state `q0`, `qd0` (consistent: see `assemble`, `consistent_velocity`),
      final time `t1`, start `t0`.
    - `ts`: times to save (default 201 equally spaced instants from t0 to t1).
    - `rtol`, `atol`: error tolerances of the adaptive step-size controller.
    - `solver`: a diffrax solver (default `diffrax.Tsit5()`; `diffrax.Dopri5()` is the
      Dormand-Prince pair used by seed 001).
    - `stabilization`: `Baumgarte(alpha, beta)` or None.
    - `adjoint`: diffrax adjoint for reverse-mode gradients (default recursive checkpointing).
    - `throw`: raise on failure, naming the cause (a singular configuration and the pair
      involved, a non-finite force element, step-size collapse, max_steps; see
      `jaxmb._failures`); with False, inspect `Trajectory.result`, `t_stop` and `singular`
      (per item under vmap).
    - `progress`: print a text progress meter.
    - `stepsize_controller`: replaces the default `diffrax.PIDController(rtol, atol)` (with
      dtmin = 1e-12 |t1 - t0|, so a collapsing step size stops the run), e.g.
      `diffrax.ConstantStepSize()` with `dt0` for a fixed step sequence.
    - `formulation`: "null_space" (seed 001 eq. 13, default), or `mb.Eliminate(rows)` / "auto":
      the augmented system (eq. 11) with those redundant rows removed (section 3.1); all give
      the same motion, which the tests check; "independent" or `mb.IndependentCoordinates()`:
      seed 002's minimal-order equations in independent coordinates with automatic
      re-partitioning (holonomic models; no stabilization needed: the dependent coordinates
      are solved by Newton, so Phi stays at round-off).

    **Returns:** `Trajectory(ts, q, qd, result, num_steps, t_stop=..., singular=...)`.

    ```python
    traj = mb.simulate(model, q0, qd0, t1=20.0, ts=jnp.linspace(0, 20, 401))
    ```
    """
    q0 = jnp.asarray(q0, jnp.float64)
    qd0 = jnp.asarray(qd0, jnp.float64)
    t0 = jnp.asarray(t0, jnp.float64)
    t1 = jnp.asarray(t1, jnp.float64)
    ts = jnp.linspace(t0, t1, 201) if ts is None else jnp.asarray(ts, jnp.float64)
    # numbers as arrays: a new value reuses the compiled program instead of recompiling
    rtol, atol = jnp.asarray(rtol, jnp.float64), jnp.asarray(atol, jnp.float64)
    dt0 = None if dt0 is None else jnp.asarray(dt0, jnp.float64)
    check_shapes(model, "simulate", q0=q0, qd0=qd0)

    if formulation == "independent":
        formulation = IndependentCoordinates()
    if isinstance(formulation, IndependentCoordinates):
        q0, qd0 = _checked_initial_state(model, q0, qd0, t0)
        ts_full = jnp.concatenate([t0[None], ts])
        q, qd, result, steps, switched = simulate_independent(
            model, q0, qd0, ts_full, option=formulation,
            solver=diffrax.Tsit5() if solver is None else solver, rtol=rtol, atol=atol,
            max_steps=max_steps, throw=throw,
        )
        return Trajectory(ts=ts, q=q[1:], qd=qd[1:], result=result, num_steps=steps,
                          repartitioned=switched[1:])
    if not (formulation in ("null_space", "auto") or isinstance(formulation, Eliminate)):
        raise ValueError(
            "simulate: formulation must be 'null_space', 'auto', 'independent', "
            f"mb.Eliminate(rows) or mb.IndependentCoordinates(), got {formulation!r}"
        )
    if isinstance(formulation, Eliminate):
        keep_mask(model, formulation, None)  # range check of the rows at trace time

    options = _Options(solver, stabilization, adjoint, formulation, stepsize_controller,
                       max_steps, progress)
    q, qd, result, num_steps, stop, dtmin = _integrate(
        model, q0, qd0, t0, t1, ts, rtol, atol, dt0, options)
    t_stop, q_stop, qd_stop = stop
    q, singular = _failures.check_stop(
        model, result, (t0, q0), (t_stop, q_stop, qd_stop), dtmin, q, throw
    )
    return Trajectory(ts=ts, q=q, qd=qd, result=result, num_steps=num_steps,
                      t_stop=t_stop, singular=singular)


class _Options(eqx.Module):
    """simulate's solver options (array leaves, e.g. a user controller's tolerances, stay data)."""

    solver: object
    stabilization: object
    adjoint: object
    formulation: object
    stepsize_controller: object
    max_steps: int = eqx.field(static=True)
    progress: bool = eqx.field(static=True)


def _check_save_times(ts, t0, t1):
    """ts, failing unless the save times are finite, ordered from t0 towards t1 and within
    [t0, t1] (diffrax's own checks of SaveAt(ts) are switched off: they are host callbacks)."""
    lo, hi = jnp.minimum(t0, t1), jnp.maximum(t0, t1)
    ts = _errors.error_if(
        ts, ~jnp.all((ts >= lo) & (ts <= hi)),
        "simulate: every save time in ts must be finite and lie between t0 and t1",
    )
    step = jnp.diff(ts) * jnp.sign(t1 - t0)
    return _errors.error_if(
        ts, jnp.any(step < 0), "simulate: the save times ts must be ordered from t0 to t1"
    )


@_errors.checked_jit  # one program, no host callback: the persistent cache stores it
def _integrate(model, q0, qd0, t0, t1, ts, rtol, atol, dt0, options):
    """The integration of `simulate` (null-space and eliminated formulations): the initial
    checks, diffeqsolve and the saved states; the failure diagnosis runs after it."""
    q0, qd0 = _check_initial_state(model, q0, qd0, t0)
    ts = _check_save_times(ts, t0, t1)
    if dt0 is not None:
        dt0 = _errors.error_if(dt0, (t1 - t0) * dt0 < 0,
                               "simulate: dt0 must have the sign of t1 - t0")
    dtmin = _failures.DTMIN_RTOL * jnp.abs(t1 - t0)
    solver, controller = options.solver, options.stepsize_controller
    with _errors.quiet_third_party_checks():  # diffrax's SaveAt / dt0 checks: done above
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(_Dynamics(model, options.stabilization, options.formulation)),
            diffrax.Tsit5() if solver is None else solver,
            t0=t0,
            t1=t1,
            dt0=dt0,
            y0=(q0, qd0),
            saveat=diffrax.SaveAt(ts=ts, t1=True),  # t1: the last state reached, even on failure
            stepsize_controller=(
                diffrax.PIDController(rtol=rtol, atol=atol, dtmin=dtmin, force_dtmin=False)
                if controller is None
                else controller
            ),
            max_steps=options.max_steps,
            adjoint=(diffrax.RecursiveCheckpointAdjoint() if options.adjoint is None
                     else options.adjoint),
            throw=False,
            progress_meter=(diffrax.TextProgressMeter() if options.progress
                            else diffrax.NoProgressMeter()),
        )
    # the last state reached follows the saved instants reached (inf after it)
    stop = jnp.sum(jnp.isfinite(sol.ts)) - 1
    reached = (jnp.arange(ts.shape[0]) < stop)[:, None]
    q, qd = (jnp.where(reached, y[:-1], jnp.inf) for y in sol.ys)
    last = (sol.ts[stop], sol.ys[0][stop], sol.ys[1][stop])
    return q, qd, sol.result, sol.stats["num_steps"], last, dtmin
