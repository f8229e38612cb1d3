"""Abstract spatial element types: the planar bases with `dim = 3` and checks of 3-vectors.

A spatial pair defines only its residual, as a planar one does (`jaxmb.elements._base`): on the
coordinates q of its own bodies (NQ = 7 per body, `geometry`) and their time derivative qdot.
The model evaluates it with qdot = T(q) v and takes C = dg/dv.
"""

import dataclasses
from typing import Any, ClassVar

import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Real

from .._base import (
    AbstractElement,
    AbstractForceElement,
    AbstractHolonomicPair,
    AbstractNonholonomicPair,
)
from ..geometry import Body, as_f64, is_concrete
from .vectors import Matrix3


class AbstractSpatialElement(AbstractElement):
    """Anything added to a spatial `Mechanism` (`dim = 3`): its local vectors are 3-vectors in
    the body frames (global for the ground)."""

    dim: ClassVar[int] = 3

    def check_point_pair3(
        self, i: Body, j: Body, s_i: Real[ArrayLike, "3"], s_j: Real[ArrayLike, "3"]
    ) -> None:
        """Build-time checks of an element between the point s_i of body i and the point s_j of
        body j: distinct body handles, finite 3-vectors."""
        self.check_distinct(i, j)
        self.check_vector(s_i, "s_i", size=3)
        self.check_vector(s_j, "s_j", size=3)

    def check_axis(self, value: Real[ArrayLike, "3"], label: str) -> None:
        """Build-time check of a direction: a finite 3-vector of non-zero length (the class
        lists it in `nonzero` too, so a traced one is checked by `Mechanism.build`)."""
        self.check_vector(value, label, size=3)
        if is_concrete(value) and not np.sum(np.square(value)) > 0.0:
            self.fail(f"{label} has zero length; a direction must be non-zero")

    def check_free_body(self, body: Body, label: str, what: str) -> None:
        """Build-time check that `body` is a body handle and not the ground."""
        self.check_body(body, label)
        if body.is_ground:
            self.fail(f"cannot {what} the ground")


class AbstractSpatialHolonomicPair(AbstractHolonomicPair, AbstractSpatialElement):
    """Holonomic spatial pair: Phi(q, t) = 0 with q the NQ-per-body coordinates."""

    dim: ClassVar[int] = 3  # here too: first in the MRO, before a planar base's dim


class AbstractSpatialPfaffianPair(AbstractNonholonomicPair, AbstractSpatialElement):
    """Pfaffian spatial pair: g(q, qdot, t) = Psi(q) qdot + b(t), linear in qdot (the time
    derivative of q: pdot, not omega)."""

    dim: ClassVar[int] = 3  # here too: first in the MRO, before a planar base's dim


class AbstractSpatialForceElement(AbstractForceElement, AbstractSpatialElement):
    """Spatial force element: its generalized force is in q-space (NQ entries per body), a VJP
    of a position or orientation; the model pulls it back to v-space with T(q)^T."""

    dim: ClassVar[int] = 3  # here too: first in the MRO, before a planar base's dim


def relative_rotation(A_i: Real[ArrayLike, "3 3"], A_j: Real[ArrayLike, "3 3"]) -> Matrix3:
    """A_i^T A_j: body j's frame in body i's components."""
    A_i, A_j = jnp.asarray(A_i, jnp.float64), jnp.asarray(A_j, jnp.float64)
    return jnp.einsum("ki,kj->ij", A_i, A_j)


def check_reference_field(element: AbstractSpatialElement, reference: Any) -> None:
    """Build-time check of a `reference` field: None (unbound) or a finite 3 x 3 array."""
    if reference is None:
        return
    if jnp.shape(reference) != (3, 3):
        element.fail(f"reference must be a 3 x 3 matrix, got shape {jnp.shape(reference)}")
    if is_concrete(reference) and not np.all(np.isfinite(np.asarray(reference))):
        element.fail("reference is not finite")


def with_reference(
    element: AbstractSpatialElement, A_i: Real[ArrayLike, "3 3"], A_j: Real[ArrayLike, "3 3"]
) -> Any:
    """A copy of `element` whose `reference` is A_i^T A_j (checked: two 3 x 3 matrices)."""
    for label, value in (("A_i", A_i), ("A_j", A_j)):
        if jnp.shape(value) != (3, 3):
            element.fail(f"bind_reference: {label} must be a 3 x 3 rotation matrix")
    return dataclasses.replace(element, reference=relative_rotation(A_i, A_j))  # pyright: ignore


def require_reference(element: AbstractSpatialElement, reference: Any) -> Matrix3:
    """The bound reference, or a clear error where the element was never bound."""
    if reference is None:
        element.fail(
            "its reference orientation is not bound: it measures the relative orientation from "
            "the bodies' build-time orientations, which `Mechanism.add` supplies through "
            "bind_reference(A_i, A_j); call that (A_i, A_j: the bodies' rotation matrices, "
            "identity for the ground) before evaluating it"
        )
    return reference


def as_optional_f64(value: Any) -> Any:
    """Field converter of an optional array: None stays None, anything else as `as_f64`."""
    return None if value is None else as_f64(value)
