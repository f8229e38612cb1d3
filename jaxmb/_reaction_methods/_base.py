"""The abstract reaction method."""

import abc
from typing import TYPE_CHECKING

import equinox as eqx

from .._custom_types import Coordinates, RowVector

if TYPE_CHECKING:  # the model imports nothing from here; this keeps the package import-free
    from .._model.model import Model
    from .._model.terms import EquationTerms

Solution = tuple[Coordinates, RowVector]  # (qdd, lambda)


class AbstractReactionMethod(eqx.Module):
    """How the multipliers lambda of M qdd + C^T lambda = F (seed 001, eq. 10) are picked.

    With redundant constraints C^T lambda = F - M qdd has infinitely many solutions (seed 001,
    section 2.2); a method chooses one. Every choice gives the same total reaction C^T lambda
    and the same reactions of the solvable pairs (seed 001, section 3.2).

    A method implements:

    - `bind(model)`: trace-time checks against the model (a ValueError saying the problem;
      jaxmb's methods prefix it with the analysis being run, which the hook is never told);
      returns the method as the compiled program receives it, with any model-dependent data
      as arrays, so that methods differing only in data share one compiled program
      (`Eliminate` returns its kept-row mask; by default the method itself);
    - `multipliers(model, terms, qdd)`: `(qdd, lam)` for the equations whose terms M, F, C
      and gamma are `terms` (an `EquationTerms`, seed 001, eq. 11), where `qdd` is the given
      acceleration or, when None, the unique one of the model; runtime errors name the
      analysis being run, which the hook is never told;
    - `name`: how `Reactions.method` and error messages name it;
    - `physical`: True when the reactions of non-unique pairs are the physical ones (e.g.
      `Compliance`), False when they are a mathematical choice (then `reactions` warns,
      once per call site, naming the pairs whose reactions are not unique).
    """

    physical: eqx.AbstractClassVar[bool]

    def bind(self, model: "Model") -> "AbstractReactionMethod":
        """The checked method as the compiled program receives it (default: the method itself,
        for methods with nothing to check or to turn into data)."""
        return self

    @abc.abstractmethod
    def multipliers(
        self, model: "Model", terms: "EquationTerms", qdd: Coordinates | None
    ) -> Solution:
        """(qdd, lambda) with C^T lambda = F - M qdd, M, F, C from `terms`."""

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The method's name in `Reactions.method` and in error messages."""
