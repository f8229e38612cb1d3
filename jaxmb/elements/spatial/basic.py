"""Haug's basic constraints between two bodies, the rows every spatial joint is made of.

With body-frame vectors a_i (body i), b_j (body j) and the points P_i = r_i + A_i s_i,
P_j = r_j + A_j s_j (Haug, "Computer-Aided Kinematics and Dynamics of Mechanical Systems",
the basic constraints of spatial joints; Nikravesh, "Computer-Aided Analysis of Mechanical
Systems", the same as n1 / n2 constraints):

- d_ij = P_j - P_i, the separation of the two points (zero: the spherical joint);
- dot-1(a_i, b_j) = (A_i a_i) . (A_j b_j) (zero: the two directions stay perpendicular);
- dot-2(a_i, d_ij) = (A_i a_i) . d_ij (zero: d_ij stays perpendicular to a_i).

`JointFrames` rotates all the vectors of a body once (`geometry.point_and_directions`), then
the rows are dot products of global vectors.
"""

from typing import NamedTuple

from ..._custom_types import Coordinates, Scalar
from ..geometry import Body
from .geometry import point_and_directions
from .vectors import Vector3, dot


class JointFrames(NamedTuple):
    """A joint's global vectors: d_ij, body i's directions, body j's directions (in the order
    given to `joint_frames`)."""

    d: Vector3
    on_i: tuple[Vector3, ...]
    on_j: tuple[Vector3, ...]


def joint_frames(
    q: Coordinates,
    i: Body,
    s_i: Vector3,
    j: Body,
    s_j: Vector3,
    on_i: tuple[Vector3, ...] = (),
    on_j: tuple[Vector3, ...] = (),
) -> JointFrames:
    """d_ij = r_j + A_j s_j - r_i - A_i s_i and A_i a for a in on_i, A_j b for b in on_j (one
    rotation per body)."""
    P_i, *a = point_and_directions(q, i, s_i, *on_i)
    P_j, *b = point_and_directions(q, j, s_j, *on_j)
    return JointFrames(P_j - P_i, tuple(a), tuple(b))


def dot1(a: Vector3, b: Vector3) -> Scalar:
    """dot-1: a . b of the global directions a = A_i a_i, b = A_j b_j."""
    return dot(a, b)


def dot2(a: Vector3, d: Vector3) -> Scalar:
    """dot-2: a . d_ij of the global direction a = A_i a_i."""
    return dot(a, d)
