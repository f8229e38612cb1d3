"""Formulations that project the state onto the constraints after every accepted step
(`Projection`, `AugmentedLagrangian`): their common base and the diffrax solver that runs them.

A projecting formulation supplies `project_state(model, q, qd, t) -> (q, qd, max |Phi| left)`,
the largest residual a step may leave (`projection_limit`), whether a projection onto another
branch is rejected (`detects_jumps`) and whether an FSAL solver's last stage may be kept
(`reuses_last_stage`); `ProjectedSolver` wraps the Runge-Kutta solver with them.
"""

import abc

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
from equinox.internal import unvmap_any
from jaxtyping import Array, ArrayLike

from .._custom_types import Coordinates, Scalar
from .._model.model import Model
from .base import AbstractStateFormulation
from .wrapped_solver import TransparentSolver


class AbstractProjectingFormulation(AbstractStateFormulation):
    """A state formulation whose steps end with projections onto the constraints (module
    docstring); its solver is the `ProjectedSolver` around the one simulate chose."""

    detects_jumps: eqx.AbstractClassVar[bool]

    @abc.abstractmethod
    def project_state(
        self, model: Model, q: Coordinates, qd: Coordinates, t: Scalar
    ) -> tuple[Coordinates, Coordinates, Scalar]:
        """(q, qd, max |Phi| left): the state projected onto the constraints."""

    @abc.abstractmethod
    def reuses_last_stage(self, model: Model) -> bool:
        """Whether an FSAL solver's last stage may stand for the next step's first after a
        small projection (`KeptFirstStage`)."""

    @property
    @abc.abstractmethod
    def projection_limit(self) -> float | Scalar:
        """The largest max |Phi| a step may leave (else it is rejected)."""

    def wrap_solver(
        self, solver: diffrax.AbstractSolver, model: Model, from_rhs: bool = False
    ) -> diffrax.AbstractSolver:
        return ProjectedSolver(solver, model, self)


JUMP_FACTOR = 100.0
"""A projection may move the state by at most this multiple of the step's local error
estimate (plus a round-off floor); a larger move reached another branch, see `_jumped`."""


def _jumped(projected, y1, y_error):
    """Whether the projection moved q or qd by more than JUMP_FACTOR times the local error
    estimate of the step (each part in its own max norm, with a floor of 1e-12 of its size).
    The step ends within its local error of the branch the motion is on, so the projection
    back onto it is of that size; near a bifurcation the nearest consistent state can lie on
    another branch crossing there, a move of the size of the distance between the branches:
    such a step is rejected and retried shorter, so the state never changes branch silently
    (if no step short enough is found, the run stops with the step-size collapse message)."""
    moved = []
    for p, y, e in zip(projected, y1, y_error):
        size = jnp.max(jnp.abs(p - y))
        allowed = JUMP_FACTOR * jnp.max(jnp.abs(e)) + 1e-12 * (1.0 + jnp.max(jnp.abs(y)))
        moved.append(size > allowed)
    return moved[0] | moved[1]


def _model_time(terms, t) -> Array:
    """The model time of diffrax's internal time t: for t1 < t0 diffrax integrates in -t and
    hands the solver its terms wrapped with `direction` = -1."""
    return t * getattr(terms, "direction", 1)


REUSE_FACTOR = 1.0
"""A formulation whose `reuses_last_stage(model)` is True keeps an FSAL solver's last stage
(taken at the unprojected state) as the next step's first stage while its projection moved q
and qd by at most this multiple of the step's local error estimate (`_keeps_last_stage`).
Measured on 64 slider-cranks at rtol 1e-8 (design measurement D16): the projection exceeds
0.1 of the estimate in 5.4 % of the steps, 0.5 of it in 0.015 %, 1 in 0.0075 %; a batch
evaluates a fresh first stage whenever one member needs it, so with 1,024 members the factor
0.1 re-evaluated it in four steps out of five, 1 in about one out of fourteen. The
trajectories moved by 1e-11 m (slider-crank) and the IFToMM A02 errors by 1-3 % either way."""


def _fsal(solver) -> bool:
    """Whether `solver` is a first-same-as-last Runge-Kutta pair (its state: (first step?,
    last stage))."""
    tableau = getattr(solver, "tableau", None)
    return isinstance(solver, diffrax.AbstractRungeKutta) and bool(getattr(tableau, "fsal", False))


def _keeps_last_stage(projected, y1, y_error):
    """Whether the last stage f(y1) of the step may serve as f at the projected state (else
    it is evaluated there): the projection moved the state by at most REUSE_FACTOR times the
    step's local error estimate.
    The stale stage then changes the next step by about h b_1 L REUSE_FACTOR times an error
    the controller accepted (L: the vector field's Lipschitz constant, b_1 = 0.097 Tsit5's
    weight of the first stage), below the step's own error where h L < 10;
    near a singular position, where the projections grow, the stage is re-evaluated."""
    moved = jnp.maximum(*(jnp.max(jnp.abs(p - y)) for p, y in zip(projected, y1)))
    error = jnp.maximum(*(jnp.max(jnp.abs(e)) for e in y_error))
    return moved <= REUSE_FACTOR * error


class KeptFirstStage(diffrax.AbstractTerm):
    """`term`, except that its value at the step's start (t0, y0) is `stage` where `keep`:
    the last stage of the previous step stands in for the first stage of this one. The
    Runge-Kutta solver evaluates that first stage only when some member needs it (it is told
    so by `made_jump`; under vmap the decision is taken for the whole batch), and each member
    then selects its own value here, so a member's result is the same as in a single run.
    The vector field is traced once, inside the solver's loop over stages (a separate
    evaluation of it for the fresh first stage would be a second copy of the vector field and
    of its derivative in every compiled program: a third of the robot gradient's XLA compile)."""

    term: diffrax.AbstractTerm
    t0: ArrayLike
    y0: tuple
    keep: Array
    stage: tuple

    def vf(self, t, y, args):
        value = self.term.vf(t, y, args)
        at_start = t == self.t0
        for a, b in zip(jax.tree.leaves(y), jax.tree.leaves(self.y0)):
            at_start = at_start & jnp.all(a == b)
        use = self.keep & at_start
        return jax.tree.map(lambda kept, fresh: jnp.where(use, kept, fresh), self.stage, value)

    def contr(self, t0, t1, **kwargs):
        return self.term.contr(t0, t1, **kwargs)

    def prod(self, vf, control):
        return self.term.prod(vf, control)

    def is_vf_expensive(self, t0, t1, y, args):
        return self.term.is_vf_expensive(t0, t1, y, args)


class ProjectedSolver(TransparentSolver):
    """A diffrax Runge-Kutta solver whose every step ends with the projections of its
    formulation (`option.project_state(model, q, qd, t) -> (q, qd, max |Phi| left)`; a step
    leaving more than `option.projection_limit` is rejected). The last stage of a
    first-same-as-last solver was taken before the projection: the next step re-evaluates its
    first stage (as after a jump), unless the formulation `reuses_last_stage`: then it is
    kept where the projection was small (`_keeps_last_stage`) and evaluated at the projected
    state otherwise (`KeptFirstStage`), which saves one of Tsit5's seven evaluations per step
    on a regular motion. The solver state is then (the wrapped solver's, keep)."""

    solver: diffrax.AbstractSolver
    model: Model
    option: AbstractProjectingFormulation

    @property
    def _reuses_last_stage(self) -> bool:
        return self.option.reuses_last_stage(self.model) and _fsal(self.solver)

    def init(self, terms, t0, t1, y0, args):
        """The wrapped solver's state; with `reuses_last_stage`, (it, keep = False): the
        first step evaluates its first stage in the solver's loop over stages."""
        state = self.solver.init(terms, t0, t1, y0, args)
        if self._reuses_last_stage:
            return state, jnp.array(False)
        return state

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        reuse, model_t1 = self._reuses_last_stage, _model_time(terms, t1)
        if reuse:
            (first_step, last_stage), keep = solver_state
            keep = keep & ~jnp.asarray(made_jump) & ~first_step
            terms = KeptFirstStage(terms, t0, y0, keep, last_stage)
            solver_state = (first_step, last_stage)
            # the first stage is evaluated when a member that moves needs it (a member that
            # has finished, or never started, makes steps of length 0 under vmap: discarded)
            idle = jnp.asarray(t0) == t1
            made_jump = made_jump | unvmap_any(~keep & ~idle)
        else:
            made_jump = True
        y1, y_error, dense_info, solver_state, result = self.solver.step(
            terms, t0, t1, y0, args, solver_state, made_jump
        )
        q, qd, residual = self.option.project_state(self.model, y1[0], y1[1], model_t1)
        rejected = ~(residual <= self.option.projection_limit)
        if self.option.detects_jumps:
            rejected = rejected | _jumped((q, qd), y1, y_error)
        if reuse:  # per member, so a vmapped run equals the loop of single runs
            solver_state = (solver_state, _keeps_last_stage((q, qd), y1, y_error))
        y_error = jax.tree.map(lambda e: jnp.where(rejected, jnp.inf, e), y_error)
        return (q, qd), y_error, dense_info, solver_state, result
