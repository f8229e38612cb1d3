"""The diffrax program of the state formulations (`AbstractStateFormulation.integrate`):
y = (q, qd), y' = (T(q) qd, qdd(q, qd, t)) (T = I for planar bodies) with qdd from the
formulation, the initial checks, the singular-passage monitor and the diagnosis of an early
stop."""

import dataclasses
import warnings
from typing import Protocol

import diffrax
import equinox as eqx
import jax.numpy as jnp
import numpy as np
import optimistix as optx

from .._custom_types import Coordinates, Scalar, ScalarLike
from .._model.model import Model
from .._model.terms import StateTerms, state_terms
from .._runtime import errors as _errors
from . import failures as _failures
from .baumgarte import Baumgarte
from .normalized import normalizing
from .passages import SingularPassageWarning, state_norm, uses_rhs_ratios
from .problem import Problem
from .start import check_initial_state, refuse_start, refused
from .trajectory import Trajectory


class StateFormulation(Protocol):
    """What this program needs of a formulation (`base.AbstractStateFormulation` declares
    it; named here so that the program does not import the class that calls it)."""

    baumgarte: bool
    monitored: bool
    stabilizable: bool

    def accelerations(self, model: Model, terms: StateTerms) -> Coordinates: ...

    def accelerations_and_ratios(self, model: Model, terms: StateTerms) -> tuple: ...

    def wrap_solver(
        self, solver: diffrax.AbstractSolver, model: Model, from_rhs: bool = False
    ) -> diffrax.AbstractSolver: ...

    def check_start(self, model: Model, q0: Coordinates, t0: Scalar) -> Coordinates: ...

    def diagnose_stop(self, model: Model, failed, stop) -> None: ...


class VectorField(eqx.Module):
    """Right-hand side (qd, qdd) of the first-order system. A module rather than a closure, so
    that diffrax's compiled solve is reused by the next eager `simulate` of the same model
    structure (a new closure per call would recompile every time)."""

    model: Model
    stabilization: Baumgarte | None
    formulation: "StateFormulation"
    direction: ScalarLike = 1.0  # sign(t1 - t0), for the Baumgarte damping
    ratios: bool = eqx.field(static=True, default=False)  # y = (q, qd, r), r' the pivot ratios

    def __call__(self, t, y, args):
        model = self.model
        q, qd = y[0], y[1]
        terms = state_terms(model, q, qd, t, self.stabilization, self.direction)
        qdot = model.qdot(q, qd)  # T(q) qd: qd itself for planar bodies
        if model.num_rows == 0:
            return qdot, terms.F / model.mass_diagonal()
        if self.ratios:  # for the passage monitor (`jaxmb._formulations.passages.PassageMonitor`)
            qdd, ratios = self.formulation.accelerations_and_ratios(model, terms)
            return qdot, checked_accelerations(qdd, model, self.formulation), ratios
        return qdot, checked_accelerations(
            self.formulation.accelerations(model, terms), model, self.formulation
        )


def checked_accelerations(qdd, model, formulation):
    """qdd, refused at trace time unless it is a float array of shape (n,): a formulation
    written by a user gets a message naming it, not a broadcasting error inside diffrax."""
    shape, dtype = jnp.shape(qdd), getattr(qdd, "dtype", None)
    if shape != (model.n,) or dtype is None or not jnp.issubdtype(dtype, jnp.floating):
        raise ValueError(
            f"simulate: formulation {type(formulation).__name__}.accelerations returned "
            f"{'shape ' + str(shape) if dtype is not None else type(qdd).__name__}"
            f"{' of ' + str(dtype) if dtype is not None else ''}; it must return the "
            f"accelerations qdd, a float array of shape (n,) = ({model.n},)"
        )
    return qdd


def stabilization_of(formulation: "StateFormulation", stabilization):
    """The stabilization a run uses: `mb.Baumgarte(...)` or None as given; "default" is
    `Baumgarte()` for the formulations that want it, None for the others."""
    if isinstance(stabilization, str):
        if stabilization != "default":
            raise ValueError(
                "simulate: stabilization must be mb.Baumgarte(alpha, beta), None "
                f"or 'default', got {stabilization!r}"
            )
        return Baumgarte() if formulation.baumgarte else None
    if stabilization is not None and not formulation.stabilizable:
        raise ValueError(
            f"simulate: formulation {formulation!r} takes no stabilization (its projections "
            "hold the constraints at round-off, and its accelerations use the exact gamma); "
            "leave stabilization at its default or pass None, or choose "
            "formulation=mb.NullSpace() for Baumgarte's"
        )
    return stabilization


def integrate_state(formulation: "StateFormulation", model: Model, problem: Problem) -> Trajectory:
    """`simulate` with a state formulation: the compiled integration, then (eagerly) the
    diagnosis of an early stop and the warning of a singular passage."""
    function = f"simulate(formulation={formulation!r})"
    problem = dataclasses.replace(
        problem, stabilization=stabilization_of(formulation, problem.stabilization)
    )
    with _errors.reporting(function):
        q, qd, result, num_steps, stop, dtmin, q0, start, t_passage = _integrate(
            model, formulation, problem
        )
    t_stop, q_stop, qd_stop = stop
    if problem.throw:
        formulation.diagnose_stop(model, result != diffrax.RESULTS.successful, stop)
    q, singular = _failures.check_stop(
        model, result, (problem.t0, q0), (t_stop, q_stop, qd_stop), dtmin, q, problem.throw
    )
    traj = Trajectory(
        ts=problem.ts,
        q=q,
        qd=qd,
        result=result,
        num_steps=num_steps,
        t_stop=t_stop,
        singular=singular,
        t_passage=t_passage,
    )
    _warn_passage(t_passage, function)
    return refused(traj, start, problem.t0)


def _warn_passage(t_passage, function):
    """Eagerly, warn about a singular passage (see `jaxmb._formulations.passages`) with its
    time, as `function`'s warning."""
    if t_passage is None:
        return
    known = _errors.concrete(t_passage)
    if known is None or not np.any(np.isfinite(known)):
        return
    first = float(np.min(known))
    warnings.warn(
        f"{function}: the motion passed close to a singular "
        f"configuration (C loses rank) at t = {first:.10g}, where this formulation may "
        "switch to another branch of the motion without an error; "
        "formulation=mb.Projection() follows the branch the velocity selects "
        "(Trajectory.t_passage has the time per batch member)",
        SingularPassageWarning,
        stacklevel=4,
    )


@_errors.checked_jit(analysis="simulate")  # one program, no callback: the cache stores it
def _integrate(model, formulation, problem):
    """The integration: the initial checks, diffeqsolve and the saved states; the failure
    diagnosis runs after it."""
    p = problem
    t0, t1, ts = p.t0, p.t1, p.ts
    q0, qd0, start = check_initial_state(model, p.q0, p.qd0, t0, p.throw)
    q0 = formulation.check_start(model, q0, t0)
    if p.stabilization is not None:
        q0 = p.stabilization.checked(q0)
    q0, qd0, t1, ts = refuse_start(model, start, q0, qd0, t0, t1, ts)
    dt0 = p.dt0
    if dt0 is not None:
        dt0 = _errors.error_if(
            dt0, (t1 - t0) * dt0 < 0, "simulate: dt0 must have the sign of t1 - t0"
        )
    dtmin = _failures.DTMIN_RTOL * jnp.abs(t1 - t0)
    direction = jnp.where(t1 >= t0, 1.0, -1.0)
    solver, controller = p.solver, p.stepsize_controller
    assert solver is not None  # simulate chose it (`default_solver`)
    monitored = model.num_rows > 0 and formulation.monitored
    from_rhs = monitored and uses_rhs_ratios(solver, controller)
    solver = normalizing(formulation.wrap_solver(solver, model, from_rhs), model)
    y0 = (q0, qd0)
    if from_rhs:  # the passage monitor's ratios ride along as r' (see PassageMonitor)
        y0 = (q0, qd0, jnp.zeros(min(model.n, model.num_rows), q0.dtype))
    with _errors.quiet_third_party_checks():  # diffrax's SaveAt / dt0 checks: done before
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(VectorField(model, p.stabilization, formulation, direction, from_rhs)),
            solver,
            t0=t0,
            t1=t1,
            dt0=dt0,
            y0=y0,
            # t1: the last state reached, even on failure; the solver state: the passage time
            saveat=diffrax.SaveAt(ts=ts, t1=True, solver_state=monitored),
            stepsize_controller=(
                diffrax.PIDController(
                    rtol=p.rtol,
                    atol=p.atol,
                    dtmin=dtmin,
                    force_dtmin=False,
                    norm=state_norm if from_rhs else optx.rms_norm,
                )
                if controller is None
                else controller
            ),
            max_steps=p.max_steps,
            adjoint=(diffrax.RecursiveCheckpointAdjoint() if p.adjoint is None else p.adjoint),
            throw=False,
            progress_meter=(
                diffrax.TextProgressMeter() if p.progress else diffrax.NoProgressMeter()
            ),
        )
    # the last state reached follows the saved instants reached (inf after it)
    assert sol.ts is not None and sol.ys is not None  # SaveAt(ts=...)
    stop = jnp.sum(jnp.isfinite(sol.ts)) - 1
    reached = (jnp.arange(ts.shape[0]) < stop)[:, None]
    q, qd = (jnp.where(reached, y[:-1], jnp.inf) for y in sol.ys[:2])
    last = (sol.ts[stop], sol.ys[0][stop], sol.ys[1][stop])
    t_passage = sol.solver_state[1][2] if monitored and sol.solver_state is not None else None
    return q, qd, sol.result, sol.stats["num_steps"], last, dtmin, q0, start, t_passage
