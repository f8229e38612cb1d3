"""The relative angle about a revolute axis, measured from the build-time orientations."""

import jax.numpy as jnp
import numpy as np

from ..._custom_types import Coordinates, Scalar
from ..geometry import Body, is_concrete
from ._base import AbstractSpatialElement
from .basic import dot1
from .geometry import transform
from .vectors import Matrix3, Vector3, axis_frame, dot, unit

DEGENERATE_TOL = 1e-6
"""Smallest length of body i's zero-angle vector f_i, carried to body j, across axis_j."""


def zero_angle_vectors(
    axis_i: Vector3, axis_j: Vector3, reference: Matrix3
) -> tuple[Vector3, Vector3, Vector3]:
    """(f_i, g_i, f_j): f_i, g_i perpendicular to axis_i (`vectors.axis_frame`) and f_j the
    body-j vector that coincided with f_i at the build-time orientations (R0^T f_i,
    R0 = A_i^T A_j = `reference`), made perpendicular to axis_j and of unit length. The angle
    theta of body j about axis_i is then zero at build time, and with the axes aligned
    A_j f_j = cos(theta) A_i f_i + sin(theta) A_i g_i."""
    f_i, g_i, _ = axis_frame(axis_i)
    h_j = unit(axis_j)
    carried = jnp.einsum("kj,k->j", reference, f_i)
    return f_i, g_i, unit(carried - dot(carried, h_j) * h_j)


def check_zero_angle(
    element: AbstractSpatialElement, axis_i: Vector3, axis_j: Vector3, reference: Matrix3
) -> None:
    """Bind-time check that f_i, carried to body j, is not along axis_j (the axes of a
    revolute are aligned: then it is perpendicular to axis_j)."""
    f_i, _, _ = axis_frame(axis_i)
    carried = jnp.einsum("kj,k->j", reference, f_i)
    across = carried - dot(carried, unit(axis_j)) * unit(axis_j)
    length = jnp.sqrt(dot(across, across))
    if is_concrete(length) and not float(np.asarray(length)) > DEGENERATE_TOL:
        element.fail(
            "axis_i and axis_j are far from aligned at the build-time orientations: the angle "
            "about the axis has no zero direction; give the axes of the revolute it drives"
        )


def cos_sin(
    q: Coordinates, i: Body, j: Body, vectors: tuple[Vector3, Vector3, Vector3]
) -> tuple[Scalar, Scalar]:
    """(A_i f_i . A_j f_j, A_i g_i . A_j f_j) = (cos theta, sin theta) where the axes are
    aligned: two dot-1 products, smooth in q."""
    f, g = transform(q, i, *vectors[:2])
    (h,) = transform(q, j, vectors[2])
    return dot1(f, h), dot1(g, h)
