"""Spatial body kinematics: where a body's coordinates sit in q, its pose, points, directions.

A spatial body with handle index k holds q[NQ k : NQ k + NQ] = (x, y, z, w, qx, qy, qz): its
centre of mass r (global) and a quaternion p of any non-zero length, A = A(p / |p|). Its NV
velocity coordinates are v = (rdot global, omega' body frame), and qdot = T(q) v
(`coordinate_rate`). The ground (index -1) has no coordinates: its pose is (0, identity) and its
local vectors are global.
"""

import jax.numpy as jnp
from jaxtyping import Array, Float

from ..._custom_types import Coordinates
from ..geometry import Body
from .quaternion import (
    body_rate,
    conjugate,
    log,
    multiply,
    normalize,
    quaternion_rate,
    retract,
    rotate,
)
from .vectors import Quaternion, Vector3

NQ = 7
"""Coordinates per spatial body in q: (x, y, z, w, qx, qy, qz)."""

NV = 6
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


def coordinate_rate(q_body: BodyCoordinates, v_body: BodyVelocity) -> BodyCoordinates:
    """qdot = T(q) v of one body: rdot unchanged, pdot = 1/2 p (x) (0, omega') (the spatial
    note, section 2); linear in v."""
    return jnp.concatenate([v_body[:3], quaternion_rate(q_body[3:], v_body[3:])])


def body_velocity(q_body: BodyCoordinates, qdot_body: BodyCoordinates) -> BodyVelocity:
    """v = (rdot, omega') of one body from qdot, omega' = 2 vec(conj(p) (x) pdot) / |p|^2: a left
    inverse of `coordinate_rate` (T(q)^+; it drops a change of |p|)."""
    return jnp.concatenate([qdot_body[:3], body_rate(q_body[3:], qdot_body[3:])])


def retract_body(q_body: BodyCoordinates, delta: BodyVelocity) -> BodyCoordinates:
    """q (+) delta: r + dr and p turned by the body-frame rotation vector dtheta,
    normalize(p (x) exp(dtheta)) (the spatial note, section 2: the only way q changes)."""
    return jnp.concatenate([q_body[:3] + delta[:3], retract(q_body[3:], delta[3:])])


def difference_body(q_from: BodyCoordinates, q_to: BodyCoordinates) -> BodyVelocity:
    """delta with retract_body(q_from, delta) = q_to: (r_to - r_from, the body-frame rotation
    vector log(conj(p_from) (x) p_to)), |dtheta| <= pi."""
    turn = multiply(conjugate(q_from[3:]), q_to[3:])
    return jnp.concatenate([q_to[:3] - q_from[:3], log(turn)])


def normalize_body(q_body: BodyCoordinates) -> BodyCoordinates:
    """(r, p / |p|): the same pose with a unit quaternion."""
    return jnp.concatenate([q_body[:3], normalize(q_body[3:])])
