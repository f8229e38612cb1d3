"""Three-vectors: annotations, dot and cross products, and the frame of a joint axis."""

from collections.abc import Sequence

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Real

Vector3 = Float[Array, "3"]
"""A spatial vector (an attachment point, an axis, a force)."""

Vector3Like = Real[ArrayLike, "3"] | Sequence[float]
"""A spatial vector given by the user, e.g. (0.0, 0.0, -9.81)."""

Quaternion = Float[Array, "4"]
"""An orientation (w, x, y, z), of any non-zero length, or its time derivative."""

Matrix3 = Float[Array, "3 3"]
"""A 3 x 3 matrix (a rotation matrix)."""


def dot(a: Array, b: Array) -> Array:
    """a . b as the sum of the elementwise product (fuses under vmap, where a jnp dot of small
    vectors is a batched kernel call; the planar `geometry.dot2`)."""
    return jnp.sum(a * b, axis=0)


def cross(a: Vector3, b: Vector3) -> Vector3:
    """a x b, written out."""
    return jnp.stack(
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    )


def unit(a: Vector3) -> Vector3:
    """a / |a| (a non-zero: the elements declare their axes `nonzero`)."""
    return a / jnp.sqrt(dot(a, a))


def axis_frame(axis: Vector3) -> tuple[Vector3, Vector3, Vector3]:
    """A right-handed orthonormal frame (f, g, h) with h = axis / |axis|: the two unit vectors
    f, g perpendicular to the axis that Haug's dot-1 and dot-2 constraints use (Haug,
    "Computer-Aided Kinematics and Dynamics of Mechanical Systems").

    Built by the branch-free construction of Duff et al. ("Building an orthonormal basis,
    revisited", JCGT 6(1), 2017): with sigma = sign(h_z) (+1 at 0) and a = -1 / (sigma + h_z),
    b = h_x h_y a, f = (1 + sigma h_x^2 a, sigma b, -sigma h_x) and g = (b, sigma + h_y^2 a,
    -h_y). The only division is by |sigma + h_z| >= 1, so every axis direction is handled to
    rounding (no near-parallel reference vector to lose). `tests/oracle/spatial.py` repeats it."""
    h = unit(axis)
    sigma = jnp.where(h[2] < 0.0, -1.0, 1.0)
    a = -1.0 / (sigma + h[2])
    b = h[0] * h[1] * a
    f = jnp.stack([1.0 + sigma * h[0] * h[0] * a, sigma * b, -sigma * h[0]])
    g = jnp.stack([b, sigma + h[1] * h[1] * a, -h[1]])
    return f, g, h
