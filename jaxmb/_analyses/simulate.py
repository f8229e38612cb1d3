"""`simulate`: the motion of a model from an initial state, by the formulation chosen.

    M qdd + C^T lambda = F,    C qdd = gamma                 (seed 001, eq. 11)

`simulate` checks its arguments, chooses the formulation (`as_formulation`: a spelling, the
default, friction's coupled solve) and calls its one hook, `integrate`
(`jaxmb._formulations.base`), in the spirit of MJX's `forward()`.
"""

import contextlib
from typing import Literal

import diffrax
import jax.numpy as jnp
from jaxtyping import ArrayLike, Real

from .._custom_types import CoordinatesLike, ScalarLike
from .._formulations.augmented_lagrangian import AugmentedLagrangian
from .._formulations.base import AbstractFormulation, AbstractStateFormulation
from .._formulations.baumgarte import Baumgarte
from .._formulations.independent import IndependentCoordinates
from .._formulations.null_space import NullSpace
from .._formulations.problem import Problem
from .._formulations.projection import Projection
from .._formulations.solvers import default_solver
from .._formulations.trajectory import Trajectory
from .._model.arguments import checked_times, checked_tolerances
from .._model.input_checks import check_shapes, checked_finite
from .._model.model import Model
from .._reaction_methods._base import AbstractReactionMethod
from .._reaction_methods.auto import Auto
from .._runtime import errors as _errors
from ..elements.geometry import is_concrete
from . import friction as _friction
from .solvability import suggesting_rows


def simulate(
    model: Model,
    q0: CoordinatesLike,
    qd0: CoordinatesLike,
    t1: ScalarLike,
    *,
    ts: Real[ArrayLike, " T"] | None = None,
    t0: ScalarLike = 0.0,
    rtol: ScalarLike = 1e-8,
    atol: ScalarLike = 1e-10,
    solver: diffrax.AbstractSolver | None = None,
    dt0: ScalarLike | None = None,
    max_steps: int = 200_000,
    stabilization: Baumgarte | Literal["default"] | None = "default",
    adjoint: diffrax.AbstractAdjoint | None = None,
    throw: bool = True,
    progress: bool = False,
    formulation: AbstractFormulation
    | Literal[
        "default", "augmented_lagrangian", "null_space", "auto", "projection", "independent"
    ] = "default",
    stepsize_controller: diffrax.AbstractStepSizeController | None = None,
    method: AbstractReactionMethod | Literal["min_norm", "auto"] | None = None,
) -> Trajectory:
    """Integrate M qdd + C^T lambda = F (seed 001, eq. 11) by the formulation chosen: by
    default one that passes singular positions (`default_formulation`).

    **Arguments:**
    - `model`: a built `Model`.
    - `q0`, `qd0`: the initial state, coordinates (n,) and their rates, consistent with the
      constraints (see `assemble`, `consistent_velocity`).
    - `t1`: the final time (s, finite); t1 < t0 integrates backwards, the Baumgarte damping
      acting in the direction of integration (not with "independent").
    - `t0`: the start time (s, finite).
    - `ts`: times to save (default 201 equally spaced instants from t0 to t1): a non-empty
      1-D array within [t0, t1], ordered from t0 towards t1.
    - `rtol`, `atol`: error tolerances of the adaptive step-size controller (positive).
    - `solver`: a diffrax solver (default `diffrax.Tsit5()`, or `diffrax.Dopri8()` where
      rtol is a number at most 1e-10, where the higher order takes fewer steps (the docs'
      Formulations page); `diffrax.Dopri5()` is the
      Dormand-Prince pair used by seed 001).
    - `dt0`: the first step (s, with the sign of t1 - t0); None lets the controller choose it.
    - `max_steps`: the most integrator steps; a run that needs more stops (and raises with
      `throw`).
    - `stabilization`: `Baumgarte(alpha, beta)` or None; "default" is `Baumgarte()`, and None
      for `mb.Projection()` (its projections hold the constraints at round-off).
    - `adjoint`: diffrax adjoint for reverse-mode gradients (default recursive checkpointing);
      for forward mode (jax.jacfwd, jax.jvp) pass `diffrax.ForwardMode()`.
    - `throw`: raise on failure, naming the cause (a singular configuration and the pair
      involved, a non-finite force element, step-size collapse, max_steps); with False,
      inspect `Trajectory.result`, `t_stop` and `singular` (per item under vmap); an initial
      state that would raise is then refused per item instead, and nothing is integrated
      for that item: its `result` is the code of the reason, `mb.RESULTS.nonfinite_positions`
      or `nonfinite_velocities` (a nan or inf in q0 or qd0), `inconsistent_positions` (call
      `mb.assemble`), `inconsistent_velocities` (call `mb.consistent_velocity`) or
      `nonfinite_force` (an applied force at the initial state); rerun the item with
      throw=True for the message naming the entry or the pair.
    - `progress`: print a text progress meter.
    - `stepsize_controller`: replaces the default `diffrax.PIDController(rtol, atol)` (with
      dtmin = 1e-12 |t1 - t0|, so a collapsing step size stops the run), e.g.
      `diffrax.ConstantStepSize()` with `dt0` for a fixed step sequence.
    - `formulation`: an `mb.AbstractFormulation` or its spelling. "default":
      `default_formulation(model)`, i.e. `mb.AugmentedLagrangian()` (no rank decision: it
      passes redundant constraints and singular positions, and is the fastest from the
      smallest models up, see the README's Performance table), or for a model with friction
      elements `mb.NullSpace()`. "augmented_lagrangian" / `mb.AugmentedLagrangian()`;
      "null_space" / `mb.NullSpace()` (seed 001 eq. 13), or `mb.Eliminate(rows)` / "auto":
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
      another method raises naming the pair. Each right-hand side
      solves the friction forces by Newton's method; where it does not converge the step is
      rejected, and a run stopped by that raises saying so.

    **Returns:** `Trajectory(ts, q, qd, result, num_steps, t_stop=..., singular=...)`.

    ```python
    traj = mb.simulate(model, q0, qd0, t1=20.0, ts=jnp.linspace(0, 20, 401))
    ```
    """
    q0 = jnp.asarray(q0, jnp.float64)
    qd0 = jnp.asarray(qd0, jnp.float64)
    with _errors.reporting("simulate"):
        check_shapes(model, q0=q0, qd0=qd0)
        if throw and is_concrete(q0) and is_concrete(qd0):  # answered before any compile
            q0 = checked_finite(model, q0, "q0")
            qd0 = checked_finite(model, qd0, "qd0")
        t0, t1, ts = checked_times(t0, t1, ts)
        rtol, atol = checked_tolerances(rtol, atol)  # arrays: a new value reuses the program
        solver = default_solver(rtol) if solver is None else solver
        dt0 = None if dt0 is None else jnp.asarray(dt0, jnp.float64)
        formulation = as_formulation(formulation, model, method)
    problem = Problem(
        q0,
        qd0,
        t0,
        t1,
        ts,
        rtol,
        atol,
        dt0,
        solver,
        stepsize_controller,
        stabilization,
        adjoint,
        max_steps,
        throw,
        progress,
    )
    with _forward_mode_hint(adjoint), suggesting_rows(model, q0, t0, "at q0"):
        return formulation.integrate(model, problem)


def default_formulation(model: Model | None = None) -> AbstractFormulation:
    """The formulation `simulate` runs when none is given: `AugmentedLagrangian()`, which
    needs no rank decision (it passes redundant constraints and singular positions) and is
    the fastest on every model measured, from the slider-crank (3 bodies) to the N-four-bar
    with 801 bodies (README, Performance). A model with friction elements gets `NullSpace()`:
    its accelerations come from the coupled friction solve over a reaction method either way,
    and the null space's Baumgarte stabilization is what that solve was validated with."""
    if model is not None and model.friction:
        return NullSpace()
    return AugmentedLagrangian()


FORMULATIONS = {
    "null_space": NullSpace,
    "auto": Auto,
    "projection": Projection,
    "independent": IndependentCoordinates,
    "augmented_lagrangian": AugmentedLagrangian,
}
"""The string spellings of `simulate(formulation=...)`."""


def as_formulation(
    formulation: AbstractFormulation | str,
    model: Model | None = None,
    method: AbstractReactionMethod | Literal["min_norm", "auto"] | None = None,
) -> AbstractFormulation:
    """The formulation `simulate` runs: `formulation` (an instance, or one of
    `FORMULATIONS`); for a `model` with friction elements, the coupled friction solve over the
    reaction `method` (`jaxmb._analyses.friction.WithFriction`) around it; "default" is
    `default_formulation(model)`."""
    formulation = _spelled(formulation, model)
    if model is None or not model.friction:
        return formulation
    if not isinstance(formulation, AbstractStateFormulation):
        raise ValueError(
            "simulate: the independent-coordinate formulation does not "
            "support friction elements; use formulation='null_space'"
        )
    bound = _friction.default_method(method, formulation).bind(model)
    return _friction.WithFriction(formulation, bound)  # pyright: ignore[reportCallIssue]
    # (pyright counts the base's AbstractVars, which WithFriction fills with properties, as fields)


def _spelled(formulation, model=None):
    """The formulation object of an instance, "default" or one of `FORMULATIONS`."""
    if isinstance(formulation, str) and formulation == "default":
        return default_formulation(model)
    if isinstance(formulation, str) and formulation in FORMULATIONS:
        return FORMULATIONS[formulation]()
    if not isinstance(formulation, AbstractFormulation):
        raise ValueError(
            "simulate: formulation must be 'default', 'augmented_lagrangian', 'null_space', "
            "'auto', 'independent', 'projection', mb.AugmentedLagrangian(), mb.NullSpace(), "
            "mb.Eliminate(rows), mb.Auto(), mb.Projection(), mb.IndependentCoordinates() or "
            f"another mb.AbstractFormulation, got {formulation!r}"
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
