"""Elimination of the rows that pivoted QR marks dependent."""

from typing import ClassVar

from .._custom_types import Coordinates
from .._formulations.base import AbstractAccelerationFormulation
from .._linalg.dense import independent_rows
from .._model.model import Model
from .._model.terms import EquationTerms, StateTerms
from ._base import AbstractReactionMethod, Solution
from ._common import eliminated_multipliers


class Auto(AbstractReactionMethod, AbstractAccelerationFormulation):
    """Eliminate the rows of C that column-pivoted QR of C^T ranks after the numerical rank
    (seed 001, sections 3.1 and 3.3), solve the reduced augmented system (eq. 11) and give
    them zero multipliers; spelled "auto". The rows chosen depend on the configuration. A
    reaction method and a `simulate` formulation (its accelerations are those of the reduced
    system; stabilization and passage monitor as `AbstractAccelerationFormulation` gives)."""

    name: ClassVar[str] = "auto"
    physical: ClassVar[bool] = False

    def multipliers(self, model: Model, terms: EquationTerms, qdd: Coordinates | None) -> Solution:
        return eliminated_multipliers(terms, independent_rows(terms.C), qdd)

    def accelerations(self, model: Model, terms: StateTerms) -> Coordinates:
        return self.multipliers(model, terms.equation_terms, None)[0]
