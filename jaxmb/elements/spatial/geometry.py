"""Spatial body kinematics: where a body's coordinates sit in q, its pose, points, directions.

A spatial body with handle index k holds q[NQ k : NQ k + NQ] = (x, y, z, w, qx, qy, qz): its
centre of mass r (global) and a quaternion p of any non-zero length, A = A(p / |p|). Its NV
velocity coordinates are v = (rdot global, omega' body frame), and qdot = T(q) v
(`coordinate_rate`). The ground (index -1) has no coordinates: its pose is (0, identity) and its
local vectors are global.
"""

import jax.numpy as jnp
from jaxtyping import Array, Float

from ..._bodies import SPATIAL
from ..._custom_types import Coordinates
from ..geometry import Body
from .quaternion import rotate
from .vectors import Quaternion, Vector3

NQ = SPATIAL.nq
"""Coordinates per spatial body in q: (x, y, z, w, qx, qy, qz) (the body kind's)."""

NV = SPATIAL.nv
"""Velocity coordinates per spatial body: (vx, vy, vz) global, (wx, wy, wz) body frame."""

BodyVelocity = Float[Array, "6"]
"""One body's velocity coordinates (rdot, omega')."""

BodyCoordinates = Float[Array, "7"]
"""One body's coordinates (r, p), or their time derivatives."""


def coordinates(body: Body) -> tuple[int, ...]:
    """Indices of (x, y, z, w, qx, qy, qz) of this body in q; empty for ground."""
    if body.is_ground:
        return ()
    return tuple(range(NQ * body.index, NQ * body.index + NQ))


def pose(q: Coordinates, body: Body) -> tuple[Vector3, Quaternion]:
    """Position r and quaternion p of `body` in the stacked coordinates q (ground: the origin
    and the identity (1, 0, 0, 0))."""
    if body.is_ground:
        return jnp.zeros(3, dtype=q.dtype), jnp.array([1.0, 0.0, 0.0, 0.0], dtype=q.dtype)
    k = NQ * body.index
    return q[k : k + 3], q[k + 3 : k + NQ]


def transform(q: Coordinates, body: Body, *vectors: Vector3) -> tuple[Vector3, ...]:
    """A v for each body-frame vector v, with one rotation of all of them (a (3, k) block; the
    ground: the vectors as given)."""
    if body.is_ground or not vectors:
        return vectors
    rotated = rotate(pose(q, body)[1], jnp.stack(vectors, axis=1))
    return tuple(rotated[:, k] for k in range(len(vectors)))


def point(q: Coordinates, body: Body, s: Vector3) -> Vector3:
    """Global position of the body-frame point s: r + A s (ground: s itself)."""
    return pose(q, body)[0] + transform(q, body, s)[0]


def direction(q: Coordinates, body: Body, a: Vector3) -> Vector3:
    """Global components of the body-frame vector a: A a (ground: a itself)."""
    return transform(q, body, a)[0]


def point_and_directions(
    q: Coordinates, body: Body, s: Vector3, *vectors: Vector3
) -> tuple[Vector3, ...]:
    """(r + A s, A v_1, ..., A v_k): a body point and directions, with one rotation."""
    rotated = transform(q, body, s, *vectors)
    return (pose(q, body)[0] + rotated[0], *rotated[1:])
