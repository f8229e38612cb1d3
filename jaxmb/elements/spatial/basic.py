"""Haug's basic constraints between two bodies, the rows every spatial joint is made of.

With body-frame vectors a_i (body i), b_j (body j) and the points P_i = r_i + A_i s_i,
P_j = r_j + A_j s_j (Haug, "Computer-Aided Kinematics and Dynamics of Mechanical Systems",
sec. 9.2; Nikravesh, "Computer-Aided Analysis of Mechanical Systems", sec. 7.2):

- d_ij = P_j - P_i, the separation of the two points (zero: the spherical joint);
- dot-1(a_i, b_j) = (A_i a_i) . (A_j b_j) (zero: the two directions stay perpendicular);
- dot-2(a_i, d_ij) = (A_i a_i) . d_ij (zero: d_ij stays perpendicular to a_i).
"""

from ..._custom_types import Coordinates, Scalar
from ..geometry import Body
from .geometry import direction, point
from .vectors import Vector3, dot


def separation(q: Coordinates, i: Body, s_i: Vector3, j: Body, s_j: Vector3) -> Vector3:
    """d_ij = r_j + A_j s_j - r_i - A_i s_i."""
    return point(q, j, s_j) - point(q, i, s_i)


def dot1(q: Coordinates, i: Body, a_i: Vector3, j: Body, b_j: Vector3) -> Scalar:
    """dot-1(a_i, b_j) = (A_i a_i) . (A_j b_j)."""
    return dot(direction(q, i, a_i), direction(q, j, b_j))


def dot2(q: Coordinates, i: Body, a_i: Vector3, d: Vector3) -> Scalar:
    """dot-2(a_i, d) = (A_i a_i) . d."""
    return dot(direction(q, i, a_i), d)
