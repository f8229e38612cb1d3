"""Time integration of the null-space formulation with diffrax.

Constraint stabilization (Baumgarte): the acceleration constraints are replaced by

    C qdd = gamma - 2 alpha (C qd + b) - beta^2 [Phi; 0],

so violations e of the holonomic rows obey e'' + 2 alpha e' + beta^2 e = 0 and those of the
Pfaffian rows e' + 2 alpha e = 0: integration errors decay instead of accumulating as they
would in the pure index-1 formulation. alpha = beta = 10 1/s (critically damped, time constant
0.1 s) is far slower than the step sizes the tolerances imply yet fast against the motions of
interest, so the ODE does not become stiff and the drift stays at the level of the local errors.
"""

import contextlib
import dataclasses
import warnings
from typing import Literal

import diffrax
import equinox as eqx
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jaxtyping import Array, ArrayLike, Float, Real

from . import _errors, _failures, _friction
from ._arguments import checked_direction, checked_times, checked_tolerances
from ._dynamics import NullSpace, suggesting_rows
from ._formulation_base import AbstractFormulation, AbstractStateFormulation
from ._independent import IndependentCoordinates, simulate_independent
from ._input_checks import check_shapes, checked_finite
from ._model import KinematicTerms, Model
from ._passages import SingularPassageWarning, ratios_of, state_norm, uses_rhs_ratios
from ._projection import Projection
from ._reaction_methods._base import AbstractReactionMethod
from ._reaction_methods.auto import Auto
from ._state_checks import worst_pair_error
from ._terms import state_terms
from ._trajectory import Trajectory

POSITION_TOL = 1e-8
VELOCITY_TOL = 1e-8


class Baumgarte(eqx.Module):
    """Baumgarte stabilization parameters (1/s).

    Integrating backwards (t1 < t0) the damping term changes sign, s = sign(t1 - t0):
    C qdd = gamma - 2 alpha s (C qd + b) - beta^2 [Phi; 0], so that in the time of integration
    tau = s t the violations again obey e_tautau + 2 alpha e_tau + beta^2 e = 0 (damped, where
    the forward form would make them grow like exp(2 alpha |t|))."""

    alpha: Real[ArrayLike, ""] = 10.0
    beta: Real[ArrayLike, ""] = 10.0

    def gamma(
        self,
        model: Model,
        q: Float[Array, " n"],
        qd: Float[Array, " n"],
        t: Real[ArrayLike, ""],
        direction: Real[ArrayLike, ""] = 1.0,
    ) -> Float[Array, " rows"]:
        """Stabilized right-hand side gamma - 2 alpha s (C qd + b) - beta^2 [Phi; 0]."""
        return self.stabilized(model.kinematic_terms(q, qd, t), direction)

    def stabilized(
        self, terms: KinematicTerms, direction: Real[ArrayLike, ""] = 1.0
    ) -> Float[Array, " rows"]:
        """The same from precomputed `Model.kinematic_terms`."""
        return terms.gamma - 2.0 * self.alpha * direction * terms.g - self.beta**2 * terms.phi


START_ERRORS = (
    "",
    "q0 is not finite",
    "qd0 is not finite",
    "q0 violates the position constraints (call mb.assemble first)",
    "qd0 violates the velocity constraints (call mb.consistent_velocity first)",
    "an applied force is not finite at the initial state",
)
"""Why `simulate(..., throw=False)` refused an initial state: `Trajectory.start_error` indexes
this tuple (0: accepted). A refused run integrates nothing: `result` is
`diffrax.RESULTS.nonfinite_input` (diffrax has no code for an inconsistent start), `t_stop`
is t0 and every saved state is inf; rerun that member with throw=True for the message naming
the entry or the pair."""


def _start_error(model, q0, qd0, t0):
    """Index into START_ERRORS of the first problem of the initial state (0: none)."""
    flags = [~jnp.all(jnp.isfinite(q0)), ~jnp.all(jnp.isfinite(qd0))]
    flags.append(~(jnp.max(jnp.abs(model.phi(q0, t0)), initial=0.0) <= POSITION_TOL))
    residual = model.velocity_residual(q0, qd0, t0)
    flags.append(~(jnp.max(jnp.abs(residual), initial=0.0)
                   <= VELOCITY_TOL * (1.0 + jnp.max(jnp.abs(qd0)))))
    forces = (_failures._forces(model, q0, qd0, t0) if model.force_elements
              else jnp.zeros(1))
    flags.append(~jnp.all(jnp.isfinite(forces)))
    flags = jnp.stack(flags)
    return jnp.where(jnp.any(flags), jnp.argmax(flags) + 1, 0)


def _check_initial_state(model, q0, qd0, t0, throw=True):
    """(q0, qd0, start_error): with throw, raising for a bad initial state naming the entry or
    the pair (start_error None); without, its START_ERRORS index, per member under vmap."""
    if not throw:
        return q0, qd0, _start_error(model, q0, qd0, t0)
    q0 = checked_finite(model, q0, "simulate", "q0")
    qd0 = checked_finite(model, qd0, "simulate", "qd0")
    if model.m:
        q0 = worst_pair_error(
            model, q0, model.phi(q0, t0), POSITION_TOL,
            "simulate: the initial configuration violates the position constraints of pair "
            f"{{!r}} (|Phi| above {POSITION_TOL}); call mb.assemble(model, q0) first.", True,
        )
    if model.num_rows:
        qd0 = worst_pair_error(
            model, qd0, model.velocity_residual(q0, qd0, t0),
            VELOCITY_TOL * (1.0 + jnp.max(jnp.abs(qd0))),
            "simulate: the initial velocity violates the velocity constraints C qd + b = 0 of "
            "pair {!r}; call mb.consistent_velocity(model, q0, qd0) first.", False,
        )
    return _failures.check_initial_forces(model, q0, qd0, t0), qd0, None


# the independent-coordinate formulation checks the initial state in its own small program
_checked_initial_state = _errors.checked_jit(_check_initial_state)


class _Dynamics(eqx.Module):
    """Right-hand side (qd, qdd) of the first-order system. A module rather than a closure, so
    that diffrax's compiled solve is reused by the next eager `simulate` of the same model
    structure (a new closure per call would recompile every time)."""

    model: Model
    stabilization: Baumgarte | None
    formulation: AbstractStateFormulation
    label: str = eqx.field(static=True, default="simulate")  # how errors name the call
    direction: object = 1.0  # sign(t1 - t0), for the Baumgarte damping
    method: object = None  # the bound reaction method of friction's normal loads
    ratios: bool = eqx.field(static=True, default=False)  # y = (q, qd, r), r' the pivot ratios

    def __call__(self, t, y, args):
        model = self.model
        q, qd = y[0], y[1]
        terms = state_terms(model, q, qd, t, self.stabilization, self.direction)
        if model.num_rows == 0:
            return qd, terms.F / model.mass_diagonal()
        if model.friction:
            qdd = _friction.simulate_accelerations(model, q, qd, t, terms, self.method,
                                                   self.label)
            return (qd, qdd, ratios_of(terms.M, terms.C)) if self.ratios else (qd, qdd)
        if self.ratios:  # for the passage monitor (`jaxmb._passages.PassageMonitor`)
            return (qd, *self.formulation.accelerations_and_ratios(model, terms, self.label))
        return qd, self.formulation.accelerations(model, terms, self.label)


def simulate(
    model: Model,
    q0: Real[ArrayLike, " n"],
    qd0: Real[ArrayLike, " n"],
    t1: Real[ArrayLike, ""],
    *,
    ts: Real[ArrayLike, " T"] | None = None,
    t0: Real[ArrayLike, ""] = 0.0,
    rtol: Real[ArrayLike, ""] = 1e-8,
    atol: Real[ArrayLike, ""] = 1e-10,
    solver: diffrax.AbstractSolver | None = None,
    dt0: Real[ArrayLike, ""] | None = None,
    max_steps: int = 200_000,
    stabilization: Baumgarte | Literal["default"] | None = "default",
    adjoint: diffrax.AbstractAdjoint | None = None,
    throw: bool = True,
    progress: bool = False,
    formulation: AbstractFormulation
    | Literal["null_space", "auto", "projection", "independent"] = "null_space",
    stepsize_controller: diffrax.AbstractStepSizeController | None = None,
    method: AbstractReactionMethod | Literal["min_norm", "auto"] | None = None,
) -> Trajectory:
    """Integrate M qdd + C^T lambda = F with the null-space formulation (seed 001, eq. 13).

    **Arguments:**
    - `model`, initial state `q0`, `qd0` (consistent: see `assemble`, `consistent_velocity`),
      final time `t1`, start `t0` (finite; t1 < t0 integrates backwards, the Baumgarte
      damping acting in the direction of integration; not with "independent").
    - `ts`: times to save (default 201 equally spaced instants from t0 to t1): a non-empty
      1-D array within [t0, t1], ordered from t0 towards t1.
    - `rtol`, `atol`: error tolerances of the adaptive step-size controller (positive).
    - `solver`: a diffrax solver (default `diffrax.Tsit5()`; `diffrax.Dopri5()` is the
      Dormand-Prince pair used by seed 001).
    - `stabilization`: `Baumgarte(alpha, beta)` or None; "default" is `Baumgarte()`, and None
      for `mb.Projection()` (its projections hold the constraints at round-off).
    - `adjoint`: diffrax adjoint for reverse-mode gradients (default recursive checkpointing);
      for forward mode (jax.jacfwd, jax.jvp) pass `diffrax.ForwardMode()`.
    - `throw`: raise on failure, naming the cause (a singular configuration and the pair
      involved, a non-finite force element, step-size collapse, max_steps; see
      `jaxmb._failures`); with False, inspect `Trajectory.result`, `t_stop` and `singular`
      (per item under vmap); an initial state that would raise (non-finite, off the
      constraints, non-finite forces) is then refused per item instead: `start_error` > 0
      indexes `START_ERRORS`, and nothing is integrated for that item.
    - `progress`: print a text progress meter.
    - `stepsize_controller`: replaces the default `diffrax.PIDController(rtol, atol)` (with
      dtmin = 1e-12 |t1 - t0|, so a collapsing step size stops the run), e.g.
      `diffrax.ConstantStepSize()` with `dt0` for a fixed step sequence.
    - `formulation`: an `mb.AbstractFormulation` or its spelling: "null_space" /
      `mb.NullSpace()` (seed 001 eq. 13, default), or `mb.Eliminate(rows)` / "auto":
      the augmented system (eq. 11) with those redundant rows removed (section 3.1); all give
      the same motion, which the tests check; "independent" or `mb.IndependentCoordinates()`:
      seed 002's minimal-order equations in independent coordinates with automatic
      re-partitioning (holonomic models; no stabilization needed: the dependent coordinates
      are solved by Newton, so Phi stays at round-off); "projection" or `mb.Projection()`: the
      null-space formulation with mass-orthogonal projections of q and qd after every step,
      which passes singular configurations (bifurcations) on the branch the velocity selects
      (IFToMM A02). The null-space and eliminated formulations may switch branch there: they
      record the first such passage (`Trajectory.t_passage`) and warn
      (`mb.SingularPassageWarning`).
    - `method`: for a model with friction elements, the reaction method their normal loads
      come from (default: the formulation's, i.e. the minimum-norm multipliers for
      "null_space"). Where the reactions of a pair with friction are not unique (an
      overconstrained mechanism) only `mb.Compliance(stiffness, default)` is accepted, and
      another method raises naming the pair (`jaxmb._friction`). Each right-hand side solves
      the friction forces by Newton's method; where it does not converge the step is
      rejected, and a run stopped by that raises saying so.

    **Returns:** `Trajectory(ts, q, qd, result, num_steps, t_stop=..., singular=...,
    start_error=...)`.

    ```python
    traj = mb.simulate(model, q0, qd0, t1=20.0, ts=jnp.linspace(0, 20, 401))
    ```
    """
    q0 = jnp.asarray(q0, jnp.float64)
    qd0 = jnp.asarray(qd0, jnp.float64)
    check_shapes(model, "simulate", q0=q0, qd0=qd0)
    t0, t1, ts = checked_times(t0, t1, ts)
    # numbers as arrays: a new value reuses the compiled program instead of recompiling
    rtol, atol = checked_tolerances(rtol, atol)
    dt0 = None if dt0 is None else jnp.asarray(dt0, jnp.float64)

    formulation = as_formulation(formulation)
    # one label per formulation object: a spelling and its object share the compiled program
    label = f"simulate(formulation={formulation!r})"
    if isinstance(formulation, IndependentCoordinates):
        if model.friction:
            raise ValueError("simulate: the independent-coordinate formulation does not "
                             "support friction elements; use formulation='null_space'")
        q0, qd0, start_error = _checked_initial_state(model, q0, qd0, t0, throw)
        q0, qd0, t1, ts = _refuse_start(model, start_error, q0, qd0, t0, t1, ts)
        t1 = checked_direction(t0, t1, "simulate(formulation='independent')")
        ts_full = jnp.concatenate([t0[None], ts])
        with _forward_mode_hint(adjoint):
            q, qd, result, steps, switched = simulate_independent(
                model, q0, qd0, ts_full, option=formulation,
                solver=diffrax.Tsit5() if solver is None else solver, rtol=rtol, atol=atol,
                max_steps=max_steps, throw=throw,
            )
        traj = Trajectory(ts=ts, q=q[1:], qd=qd[1:], result=result, num_steps=steps,
                          repartitioned=switched[1:])
        return _refused(traj, start_error, t0)
    if isinstance(stabilization, str):
        if stabilization != "default":
            raise ValueError("simulate: stabilization must be mb.Baumgarte(alpha, beta), None "
                             f"or 'default', got {stabilization!r}")
        stabilization = Baumgarte() if formulation.baumgarte else None
    if type(formulation).check_start is not AbstractStateFormulation.check_start:
        with suggesting_rows(model, q0, t0, "at q0"):  # e.g. an Eliminate's rows at q0
            q0 = _checked_start(model, formulation, q0, t0, label)

    method = (_friction.default_method(method, formulation).bind(model, "simulate")
              if model.friction else None)
    options = _Options(solver, stabilization, adjoint, formulation, label, stepsize_controller,
                       max_steps, progress, throw, method)
    with _forward_mode_hint(adjoint):
        q, qd, result, num_steps, stop, dtmin, q0, start_error, t_passage = _integrate(
            model, q0, qd0, t0, t1, ts, rtol, atol, dt0, options)
    t_stop, q_stop, qd_stop = stop
    if throw:
        _friction.check_stop(model, method, result != diffrax.RESULTS.successful, stop)
    q, singular = _failures.check_stop(
        model, result, (t0, q0), (t_stop, q_stop, qd_stop), dtmin, q, throw
    )
    traj = Trajectory(ts=ts, q=q, qd=qd, result=result, num_steps=num_steps,
                      t_stop=t_stop, singular=singular, t_passage=t_passage)
    _warn_passage(t_passage, label)
    return _refused(traj, start_error, t0)


def _warn_passage(t_passage, label):
    """Eagerly, warn about a singular passage (see `jaxmb._passages`) with its time."""
    if t_passage is None:
        return
    known = _errors.concrete(t_passage)
    if known is None or not np.any(np.isfinite(known)):
        return
    first = float(np.min(known))
    warnings.warn(
        f"{label}: the motion passed close to a singular "
        f"configuration (C loses rank) at t = {first:.10g}, where this formulation may "
        "switch to another branch of the motion without an error; "
        "formulation=mb.Projection() follows the branch the velocity selects "
        "(Trajectory.t_passage has the time per batch member)",
        SingularPassageWarning, stacklevel=3)


class _Options(eqx.Module):
    """simulate's solver options (array leaves, e.g. a user controller's tolerances, stay data)."""

    solver: object
    stabilization: object
    adjoint: object
    formulation: AbstractStateFormulation
    label: str = eqx.field(static=True)
    stepsize_controller: object
    max_steps: int = eqx.field(static=True)
    progress: bool = eqx.field(static=True)
    throw: bool = eqx.field(static=True)
    method: object = None  # friction's reaction method (bound), None without friction


def _refuse_start(model, start_error, q0, qd0, t0, t1, ts):
    """With throw=False a refused start integrates nothing (per member): t1 = t0, a consistent
    dummy state; `_refused` marks the run failed afterwards."""
    if start_error is None:
        return q0, qd0, t1, ts
    accepted = start_error == 0
    t1, ts = jnp.where(accepted, t1, t0), jnp.where(accepted, ts, t0)
    return jnp.where(accepted, q0, model.q0), jnp.where(accepted, qd0, 0.0), t1, ts


@_errors.checked_jit  # one program, no host callback: the persistent cache stores it
def _integrate(model, q0, qd0, t0, t1, ts, rtol, atol, dt0, options):
    """The integration of `simulate` (null-space and eliminated formulations): the initial
    checks, diffeqsolve and the saved states; the failure diagnosis runs after it."""
    q0, qd0, start_error = _check_initial_state(model, q0, qd0, t0, options.throw)
    q0 = _friction.check_unique_at(q0, model, q0, t0, options.method, "simulate")
    q0, qd0, t1, ts = _refuse_start(model, start_error, q0, qd0, t0, t1, ts)
    if dt0 is not None:
        dt0 = _errors.error_if(dt0, (t1 - t0) * dt0 < 0,
                               "simulate: dt0 must have the sign of t1 - t0")
    dtmin = _failures.DTMIN_RTOL * jnp.abs(t1 - t0)
    direction = jnp.where(t1 >= t0, 1.0, -1.0)
    solver, controller = options.solver, options.stepsize_controller
    solver = diffrax.Tsit5() if solver is None else solver
    monitored = model.num_rows > 0 and options.formulation.monitored
    from_rhs = monitored and uses_rhs_ratios(solver, controller)
    solver = options.formulation.wrap_solver(solver, model, from_rhs)
    y0 = (q0, qd0)
    if from_rhs:  # the passage monitor's ratios ride along as r' (see PassageMonitor)
        y0 = (q0, qd0, jnp.zeros(min(model.n, model.num_rows), q0.dtype))
    with _errors.quiet_third_party_checks():  # diffrax's SaveAt / dt0 checks: done before
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(_Dynamics(model, options.stabilization, options.formulation,
                                      options.label, direction, options.method, from_rhs)),
            solver,
            t0=t0,
            t1=t1,
            dt0=dt0,
            y0=y0,
            # t1: the last state reached, even on failure; the solver state: the passage time
            saveat=diffrax.SaveAt(ts=ts, t1=True, solver_state=monitored),
            stepsize_controller=(
                diffrax.PIDController(rtol=rtol, atol=atol, dtmin=dtmin, force_dtmin=False,
                                      norm=state_norm if from_rhs else optx.rms_norm)
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
    q, qd = (jnp.where(reached, y[:-1], jnp.inf) for y in sol.ys[:2])
    last = (sol.ts[stop], sol.ys[0][stop], sol.ys[1][stop])
    t_passage = sol.solver_state[1][2] if monitored else None
    return q, qd, sol.result, sol.stats["num_steps"], last, dtmin, q0, start_error, t_passage


def _refused(traj, start_error, t0):
    """traj with its `start_error` (0 with throw=True: a bad start raised); where it is non-zero
    the run is marked failed: result nonfinite_input, t_stop = t0, saved states inf."""
    if start_error is None:
        return dataclasses.replace(traj, start_error=jnp.asarray(0))
    accepted = start_error == 0
    inf_unless = lambda x: jnp.where(accepted, x, jnp.inf)  # noqa: E731
    return dataclasses.replace(
        traj,
        q=inf_unless(traj.q),
        qd=inf_unless(traj.qd),
        result=diffrax.RESULTS.where(accepted, traj.result, diffrax.RESULTS.nonfinite_input),
        t_stop=None if traj.t_stop is None else jnp.where(accepted, traj.t_stop, t0),
        start_error=start_error,
    )


@_errors.checked_jit
def _checked_start(model, formulation, q0, t0, label):
    """q0 with the formulation's own checks of the initial state (`check_start`: e.g. the rows
    of an Eliminate removable at (q0, t0)), in a small program run before the integration."""
    return formulation.check_start(model, q0, t0, label)


FORMULATIONS = {"null_space": NullSpace, "auto": Auto, "projection": Projection,
                "independent": IndependentCoordinates}
"""The string spellings of `simulate(formulation=...)`."""


def as_formulation(
    formulation: AbstractFormulation | Literal["null_space", "auto", "projection", "independent"],
) -> AbstractFormulation:
    """The formulation object for `formulation` (an instance, or one of `FORMULATIONS`)."""
    if isinstance(formulation, str) and formulation in FORMULATIONS:
        return FORMULATIONS[formulation]()
    if not isinstance(formulation, AbstractFormulation):
        raise ValueError(
            "simulate: formulation must be 'null_space', 'auto', 'independent', 'projection', "
            "mb.NullSpace(), mb.Eliminate(rows), mb.Auto(), mb.Projection(), "
            f"mb.IndependentCoordinates() or another mb.AbstractFormulation, got {formulation!r}"
        )
    return formulation


@contextlib.contextmanager
def _forward_mode_hint(adjoint):
    """jax.jacfwd / jax.jvp through diffrax's default adjoint (a custom_vjp) fails with a
    message that does not say what to do: say it."""
    try:
        yield
    except TypeError as err:
        if "custom_vjp" not in str(err) or adjoint is not None:
            raise
        raise TypeError(
            "simulate: forward-mode differentiation (jax.jacfwd, jax.jvp, jax.hessian) through "
            "simulate needs simulate(..., adjoint=diffrax.ForwardMode()); the default adjoint "
            "(diffrax.RecursiveCheckpointAdjoint) supports reverse mode (jax.grad, jax.jacrev) "
            "only."
        ) from None

