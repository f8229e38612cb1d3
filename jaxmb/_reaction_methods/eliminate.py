"""Elimination of a given set of redundant rows (seed 001, section 3.1), as a reaction method
and a `simulate` formulation."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool

from .._custom_types import Coordinates, Scalar
from .._formulations.base import AbstractMonitored, AbstractRatiosApart
from .._formulations.eliminated import check_removable
from .._model.model import Model
from .._model.terms import EquationTerms, StateTerms
from .._runtime import errors as _errors
from ._base import AbstractReactionMethod, Solution
from ._common import eliminated_multipliers


class Eliminate(AbstractReactionMethod, AbstractRatiosApart, AbstractMonitored):
    """Redundant-constraint elimination (seed 001, section 3.1): drop the rows `rows` (0-based
    rows of C), solve the reduced, nonsingular augmented system (eq. 11) and give the dropped
    rows zero multipliers. The rows must be a removable set of exactly p = redundancy rows,
    e.g. `mb.solvability(...).redundant_rows` or the paper's (5, 20). A reaction method and a
    `simulate` formulation."""

    rows: tuple[int, ...] = eqx.field(static=True, converter=lambda r: tuple(int(k) for k in r))
    physical: ClassVar[bool] = False
    baumgarte: ClassVar[bool] = True
    stabilizable: ClassVar[bool] = True

    def __check_init__(self):
        repeated = sorted({k for k in self.rows if self.rows.count(k) > 1})
        if repeated:
            raise ValueError(f"Eliminate: row(s) {repeated} listed more than once in {self.rows}")

    @property
    def name(self) -> str:
        return f"Eliminate(rows={self.rows})"

    def bind(self, model: Model) -> AbstractReactionMethod:
        """The kept rows as a mask array: every elimination shares one compiled program."""
        return KeptRows(keep_mask(model, self))

    def multipliers(self, model: Model, terms: EquationTerms, qdd: Coordinates | None) -> Solution:
        return self.bind(model).multipliers(model, terms, qdd)

    def accelerations(self, model: Model, terms: StateTerms) -> Coordinates:
        return eliminated_multipliers(terms.equation_terms, keep_mask(model, self), None)[0]

    def check_start(self, model: Model, q0: Coordinates, t0: Scalar) -> Coordinates:
        """The rows in range (trace time) and removable at (q0, t0) (run time)."""
        keep = keep_mask(model, self)
        return check_removable(q0, model.C(q0, t0), keep)

    def diagnose_stop(self, model: Model, failed: object, stop: tuple) -> None:
        return None


class KeptRows(AbstractReactionMethod):
    """`Eliminate` with its kept rows as data (a boolean mask over the rows of C)."""

    keep: Bool[Array, " rows"]
    name: ClassVar[str] = "mb.Eliminate(rows)"
    physical: ClassVar[bool] = False

    def bind(self, model: Model) -> AbstractReactionMethod:
        if self.keep.shape != (model.num_rows,):
            raise _errors.wrong_argument(
                f"the kept-row mask has shape {self.keep.shape}; C has {model.num_rows} rows"
            )
        return self

    def multipliers(self, model: Model, terms: EquationTerms, qdd: Coordinates | None) -> Solution:
        C = check_removable(terms.C, terms.C, self.keep)
        return eliminated_multipliers(terms._replace(C=C), self.keep, qdd)


def keep_mask(model: Model, method: Eliminate) -> Bool[Array, " rows"]:
    """The rows of C that `Eliminate(rows)` keeps, as a boolean mask (trace time: the rows
    must be in range)."""
    rows = model.num_rows
    for k in method.rows:
        if not 0 <= k < rows:
            raise ValueError(
                f"Eliminate: row {k} is out of range; C has {rows} rows (0..{rows - 1})"
            )
    keep = np.ones(rows, bool)
    keep[list(method.rows)] = False
    return jnp.asarray(keep)
