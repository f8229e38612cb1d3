"""The string spellings of the reaction methods and the one place that turns a `method=`
argument into a method object (used by reactions, statics, inverse_dynamics and friction)."""

from typing import Literal

from .._runtime import errors as _errors
from ._base import AbstractReactionMethod
from .auto import Auto
from .min_norm import MinNorm

SPELLINGS = {"min_norm": MinNorm, "auto": Auto}
"""`method="min_norm"` and `method="auto"`."""


def as_method(
    method: AbstractReactionMethod | Literal["min_norm", "auto"],
) -> AbstractReactionMethod:
    """The method object for `method` (a method, or one of the `SPELLINGS`); raises naming the
    function being reported (`jaxmb._runtime.errors.reporting`) for anything else."""
    if isinstance(method, str) and method in SPELLINGS:
        return SPELLINGS[method]()
    if not isinstance(method, AbstractReactionMethod):
        raise _errors.wrong_argument(
            "method must be 'min_norm', 'auto', mb.Eliminate(rows), "
            f"mb.Compliance(...) or another mb.AbstractReactionMethod, got {method!r}"
        )
    return method
