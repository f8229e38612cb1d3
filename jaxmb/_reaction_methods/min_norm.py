"""The minimum-norm multipliers."""

from typing import ClassVar

import jax.numpy as jnp

from .._custom_types import Coordinates
from .._formulations import augmented_lagrangian as al
from .._formulations.null_space import min_norm_multipliers
from .._model.model import Model
from .._model.terms import EquationTerms
from ._base import AbstractReactionMethod, Solution
from ._common import unique_accelerations
from .compliance import sparse_compliance_multipliers


class MinNorm(AbstractReactionMethod):
    """lambda = (C^T)^+ (F - M qdd): the multipliers of least Euclidean norm (pseudo-inverse,
    seed 001 section 3.1, ref. [32]); spelled "min_norm".

    The norm adds newtons to newton metres, so the non-unique reactions change with the unit
    of length (and of force); `Compliance` is the physical, unit-consistent choice.

    Above DENSE_BODIES the same lambda = C (C^T C)^+ f comes from the sparse factorization
    (`sparse_compliance_multipliers` with equal stiffness: no pseudo-inverse of the dense C).
    """

    name: ClassVar[str] = "min_norm"
    physical: ClassVar[bool] = False

    def multipliers(self, model: Model, terms: EquationTerms, qdd: Coordinates | None) -> Solution:
        qdd = unique_accelerations(model, terms, qdd)
        C, f = terms.C, terms.F - terms.M @ qdd
        if C.shape[0] and not al.is_dense(model):
            return qdd, sparse_compliance_multipliers(model, C, f, jnp.ones(C.shape[0], C.dtype))
        return qdd, min_norm_multipliers(C, f)
