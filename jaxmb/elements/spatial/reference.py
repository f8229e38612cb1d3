"""Binding of the build-time orientations, the one call `Mechanism.add` makes for them."""

from typing import TypeVar

from jaxtyping import ArrayLike, Real

from .._base import AbstractElement

E = TypeVar("E", bound=AbstractElement)


def bind_reference(element: E, A_i: Real[ArrayLike, "3 3"], A_j: Real[ArrayLike, "3 3"]) -> E:
    """`element.bind_reference(A_i, A_j)` where it has one, else the element itself.

    A_i, A_j: the rotation matrices of the element's two bodies (`element.i`, `element.j`) at
    their build-time orientations, the identity for the ground. Elements that keep a relative
    orientation (`Prismatic`, `Weld`) or measure an angle from it (`RevoluteDriver`,
    `RotationalSpringDamper`) store A_i^T A_j; `Universal` checks its axes are perpendicular;
    the others need nothing. A reference given to the constructor is kept."""
    bind = getattr(element, "bind_reference", None)
    if bind is None or getattr(element, "reference", None) is not None:
        return element  # nothing to bind, or a reference given explicitly
    return bind(A_i, A_j)
