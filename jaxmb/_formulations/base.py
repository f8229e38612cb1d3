"""The abstract formulation: how `simulate` turns the equations of motion into motion.

    M qdd + C^T lambda = F,    C qdd = gamma                 (seed 001, eq. 11)

With redundant constraints the augmented matrix is singular; a formulation is one way of
getting the unique qdd regardless (seed 001, section 3; seed 002): the null space of C
(`NullSpace`), eliminating removable rows (`Eliminate`, `Auto`), the null space with
projections after every step (`Projection`), independent coordinates
(`IndependentCoordinates`) or the augmented Lagrangian (`AugmentedLagrangian`).

Every formulation has one hook, `integrate(model, problem) -> Trajectory`: `simulate` checks
its arguments, picks the formulation and calls it. Formulations whose ODE is
y = (q, qd), y' = (qd, qdd(q, qd, t)) derive from `AbstractStateFormulation`, whose
`integrate` is simulate's diffrax program (`jaxmb._formulations.state_ode`); they supply the
pieces it calls. Equinox's abstract-or-final rule holds: a method is abstract or never
overridden, so an implementation that several formulations share lives in a small abstract
class of its own (`AbstractRatiosApart`, `AbstractMonitored`, `AbstractUnchecked`).
"""

import abc
from typing import ClassVar

import diffrax
import equinox as eqx
from jaxtyping import Array, Float

from .._custom_types import Coordinates, Scalar
from .._model.model import Model
from .._model.terms import StateTerms
from .passages import PassageMonitor, ratios_of
from .problem import Problem
from .state_ode import integrate_state
from .trajectory import Trajectory


class AbstractFormulation(eqx.Module):
    """A formulation of the equations of motion for `simulate` (the docs' Formulations page)."""

    @abc.abstractmethod
    def integrate(self, model: Model, problem: Problem) -> Trajectory:
        """The motion of `model` from `problem`'s initial state over its times."""


class AbstractStateFormulation(AbstractFormulation):
    """A formulation whose ODE is y = (q, qd), y' = (qd, qdd(q, qd, t)), integrated by
    simulate's diffrax program. It supplies

    - `accelerations(model, terms)`: qdd from the terms of the equations of motion at
      a state (M, F, C, gamma; runtime errors name the analysis being run, which the hook
      is never told);
    - `accelerations_and_ratios(model, terms)`: qdd and the pivot ratios the passage
      monitor follows (`AbstractRatiosApart` forms them apart);
    - `wrap_solver(solver, model, from_rhs)`: the diffrax solver as this formulation runs it
      (`AbstractMonitored`: inside the singular-passage monitor, `Trajectory.t_passage`);
    - `check_start(model, q0, t0)`: trace-time checks of the formulation against the
      model, and q0 with runtime checks of the initial state;
    - `diagnose_stop(model, failed, stop)`: eagerly, after a run that stopped early, raise
      with this formulation's own reason (or return, and the generic diagnosis speaks);
    - `baumgarte`: whether simulate's default stabilization is Baumgarte's (else none);
    - `monitored`: whether the solver state carries the passage monitor (`t_passage`);
    - `stabilizable`: whether its accelerations read the stabilized gamma, so that an explicit
      `stabilization=` takes effect (where not, simulate refuses one rather than ignore it).

    The implementations several formulations share are abstract classes of one method each,
    to inherit beside this one: `AbstractRatiosApart`, `AbstractMonitored` (with the flag
    `monitored`) and `AbstractUnchecked` (`check_start` and `diagnose_stop`).
    """

    baumgarte: eqx.AbstractVar[bool]
    monitored: eqx.AbstractVar[bool]
    stabilizable: eqx.AbstractVar[bool]

    @abc.abstractmethod
    def accelerations(self, model: Model, terms: StateTerms) -> Coordinates:
        """qdd at the state whose terms are `terms`."""

    @abc.abstractmethod
    def accelerations_and_ratios(
        self, model: Model, terms: StateTerms
    ) -> tuple[Coordinates, Float[Array, " width"]]:
        """(qdd, the pivot ratios of the mass-scaled C that the passage monitor follows)."""

    @abc.abstractmethod
    def wrap_solver(
        self, solver: diffrax.AbstractSolver, model: Model, from_rhs: bool = False
    ) -> diffrax.AbstractSolver:
        """The diffrax solver as this formulation runs it."""

    @abc.abstractmethod
    def check_start(self, model: Model, q0: Coordinates, t0: Scalar) -> Coordinates:
        """q0, with this formulation's checks of the initial configuration."""

    @abc.abstractmethod
    def diagnose_stop(self, model: Model, failed: object, stop: tuple) -> None:
        """Eagerly, after a failed run (`stop` = (t, q, qd) reached): raise with this
        formulation's own reason, or return."""

    def integrate(self, model: Model, problem: Problem) -> Trajectory:
        return integrate_state(self, model, problem)


class AbstractRatiosApart(AbstractStateFormulation):
    """A state formulation whose pivot ratios are formed apart from its accelerations: qdd from
    `accelerations`, and the pivoted QR ratios of the mass-scaled C (`ratios_of`) beside it."""

    def accelerations_and_ratios(
        self, model: Model, terms: StateTerms
    ) -> tuple[Coordinates, Float[Array, " width"]]:
        return self.accelerations(model, terms), ratios_of(terms.M, terms.C)


class AbstractMonitored(AbstractStateFormulation):
    """A state formulation whose solver runs inside the singular-passage monitor
    (`PassageMonitor`, `Trajectory.t_passage`) when the model has rows."""

    monitored: ClassVar[bool] = True

    def wrap_solver(
        self, solver: diffrax.AbstractSolver, model: Model, from_rhs: bool = False
    ) -> diffrax.AbstractSolver:
        return PassageMonitor(solver, model, from_rhs) if model.num_rows else solver


class AbstractUnchecked(AbstractStateFormulation):
    """A state formulation with no checks of its own: none of the initial configuration, no
    reason of its own for a stop (the generic diagnosis speaks)."""

    def check_start(self, model: Model, q0: Coordinates, t0: Scalar) -> Coordinates:
        return q0

    def diagnose_stop(self, model: Model, failed: object, stop: tuple) -> None:
        return None


class AbstractAccelerationFormulation(AbstractRatiosApart, AbstractMonitored, AbstractUnchecked):
    """A state formulation given by its accelerations alone: subclass it and write
    `accelerations(model, terms)` (qdd from the `StateTerms` at a state). Baumgarte
    stabilization by default, the singular-passage monitor on, no checks of its own at the
    start or after a stop."""

    baumgarte: ClassVar[bool] = True
    stabilizable: ClassVar[bool] = True
