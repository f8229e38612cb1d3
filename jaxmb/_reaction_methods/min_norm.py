"""The minimum-norm multipliers."""

from typing import ClassVar

from jaxtyping import Array, Float

from .._dynamics import min_norm_multipliers
from .._model import Model
from ._base import AbstractReactionMethod
from ._common import unique_accelerations


class MinNorm(AbstractReactionMethod):
    """lambda = (C^T)^+ (F - M qdd): the multipliers of least Euclidean norm (pseudo-inverse,
    seed 001 section 3.1, ref. [32]); spelled "min_norm".

    The norm adds newtons to newton metres, so the non-unique reactions change with the unit
    of length (and of force); `Compliance` is the physical, unit-consistent choice.
    """

    name: ClassVar[str] = "min_norm"
    physical: ClassVar[bool] = False

    def bind(self, model: Model, where: str) -> AbstractReactionMethod:
        return self

    def multipliers(
        self,
        model: Model,
        M: Float[Array, "n n"],
        F: Float[Array, " n"],
        C: Float[Array, "rows n"],
        gamma: Float[Array, " rows"],
        qdd: Float[Array, " n"] | None,
        label: str,
    ) -> tuple[Float[Array, " n"], Float[Array, " rows"]]:
        qdd = unique_accelerations(M, F, C, gamma, qdd)
        return qdd, min_norm_multipliers(C, F - M @ qdd)
