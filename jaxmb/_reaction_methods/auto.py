"""Elimination of the rows that pivoted QR marks dependent."""

from typing import ClassVar

from .._custom_types import ConstraintMatrix, Coordinates, MassMatrix, RowVector
from .._formulations.base import AbstractAccelerationFormulation
from .._formulations.eliminated import eliminated_solve
from .._linalg.dense import independent_rows
from .._model.model import Model
from .._model.terms import StateTerms
from ._base import AbstractReactionMethod, Solution


class Auto(AbstractReactionMethod, AbstractAccelerationFormulation):
    """Eliminate the rows of C that column-pivoted QR of C^T ranks after the numerical rank
    (seed 001, sections 3.1 and 3.3), solve the reduced augmented system (eq. 11) and give
    them zero multipliers; spelled "auto". The rows chosen depend on the configuration. A
    reaction method and a `simulate` formulation (its accelerations are those of the reduced
    system; stabilization and passage monitor as `AbstractAccelerationFormulation` gives)."""

    name: ClassVar[str] = "auto"
    physical: ClassVar[bool] = False

    def multipliers(
        self,
        model: Model,
        M: MassMatrix,
        F: Coordinates,
        C: ConstraintMatrix,
        gamma: RowVector,
        qdd: Coordinates | None,
    ) -> Solution:
        qdd_e, lam = eliminated_solve(M, F, C, gamma, independent_rows(C))
        return (qdd_e if qdd is None else qdd), lam

    def accelerations(self, model: Model, terms: StateTerms) -> Coordinates:
        return self.multipliers(model, terms.M, terms.F, terms.C, terms.gamma, None)[0]
