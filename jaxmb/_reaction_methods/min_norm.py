"""The minimum-norm multipliers."""

from typing import ClassVar

from .._formulations.null_space import min_norm_multipliers
from .._model.model import Model
from ._base import AbstractReactionMethod, ConstraintMatrix, Forces, MassMatrix, RowValues, Solution
from ._common import unique_accelerations


class MinNorm(AbstractReactionMethod):
    """lambda = (C^T)^+ (F - M qdd): the multipliers of least Euclidean norm (pseudo-inverse,
    seed 001 section 3.1, ref. [32]); spelled "min_norm".

    The norm adds newtons to newton metres, so the non-unique reactions change with the unit
    of length (and of force); `Compliance` is the physical, unit-consistent choice.
    """

    name: ClassVar[str] = "min_norm"
    physical: ClassVar[bool] = False

    def multipliers(self, model: Model, M: MassMatrix, F: Forces, C: ConstraintMatrix,
                    gamma: RowValues, qdd: Forces | None, label: str) -> Solution:
        qdd = unique_accelerations(M, F, C, gamma, qdd)
        return qdd, min_norm_multipliers(C, F - M @ qdd)
