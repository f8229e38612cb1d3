"""The abstract formulation: how `simulate` turns the equations of motion into an ODE.

    M qdd + C^T lambda = F,    C qdd = gamma                 (seed 001, eq. 11)

With redundant constraints the augmented matrix is singular; a formulation is one way of
getting the unique qdd regardless (seed 001, section 3; seed 002): the null space of C
(`NullSpace`, the default), eliminating removable rows (`Eliminate`, `Auto`), the null space with
projections after every step (`Projection`) or independent coordinates
(`IndependentCoordinates`, its own integrator). `simulate(formulation=...)` takes an instance
or the string spelling of one ("null_space", "auto", "projection", "independent").
"""

import abc
from typing import ClassVar

import diffrax
import equinox as eqx
from jaxtyping import Array, Float

from ._model import Model
from ._passages import PassageMonitor, ratios_of
from ._terms import StateTerms


class AbstractFormulation(eqx.Module):
    """A formulation of the equations of motion for `simulate` (module docstring)."""


class AbstractStateFormulation(AbstractFormulation):
    """A formulation whose ODE is y = (q, qd), y' = (qd, qdd(q, qd, t)), integrated by
    simulate's diffrax program. It implements

    - `accelerations(model, terms, label)`: qdd from the `jaxmb._terms.StateTerms` at a state
      (runtime errors start with `label`);
    - `wrap_solver(solver, model)`: the diffrax solver as this formulation runs it (default:
      wrapped in the singular-passage monitor of `jaxmb._passages` when the model has rows);
    - `check_start(model, q0, t0, label)`: trace-time checks of the formulation against the
      model, and q0 with runtime checks of the initial state (default: q0 unchanged);
    - `baumgarte`: whether simulate's default stabilization is Baumgarte's (else none);
    - `monitored`: whether the solver state carries the passage monitor (`t_passage`).
    """

    baumgarte: ClassVar[bool] = True
    monitored: ClassVar[bool] = True

    @abc.abstractmethod
    def accelerations(self, model: Model, terms: StateTerms, label: str) -> Float[Array, " n"]:
        """qdd at the state whose terms are `terms`."""

    def accelerations_and_ratios(
        self, model: Model, terms: StateTerms, label: str
    ) -> tuple[Float[Array, " n"], Float[Array, " width"]]:
        """(qdd, the pivot ratios of the mass-scaled C that the passage monitor follows);
        by default a pivoted QR of `terms.C` besides `accelerations`."""
        return self.accelerations(model, terms, label), ratios_of(terms.M, terms.C)

    def wrap_solver(
        self, solver: diffrax.AbstractSolver, model: Model, from_rhs: bool = False
    ) -> diffrax.AbstractSolver:
        return PassageMonitor(solver, model, from_rhs) if model.num_rows else solver

    def check_start(
        self, model: Model, q0: Float[Array, " n"], t0: Float[Array, ""], label: str
    ) -> Float[Array, " n"]:
        return q0
