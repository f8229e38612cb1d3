"""Quaternion algebra for spatial bodies, in jaxmb's conventions.

A quaternion is p = (w, x, y, z) = (p0, e), Hamilton product, and A(p) maps body-frame vectors
to the global frame. Every kinematic quantity here uses A(p / |p|), so nothing depends on the
scale of p (the spatial note, section 2: no normalization rows). The velocity coordinates of a
body are (rdot global, omega' body frame); the quaternion rate is pdot = 1/2 p (x) (0, omega')
and, back, omega' = 2 vec(conj(p) (x) pdot) / |p|^2 (Nikravesh, "Computer-Aided Analysis of
Mechanical Systems", ch. 6; Haug, "Computer-Aided Kinematics and Dynamics of Mechanical
Systems", with G(p) pdot for a unit p). Components are written out (no 3 x 3 or
4 x 4 products): under vmap a small matrix product is a batched kernel call of its own on CPU,
the written-out form fuses (as the planar `geometry.rotate`).
"""

import jax
import jax.numpy as jnp
from jaxtyping import Array

from ..._custom_types import Scalar
from .vectors import Matrix3, Quaternion, Vector3, cross, dot


def multiply(p: Quaternion, q: Quaternion) -> Quaternion:
    """Hamilton product p (x) q = (p0 q0 - e.f, p0 f + q0 e + e x f) for p = (p0, e),
    q = (q0, f)."""
    e, f = p[1:], q[1:]
    scalar = p[0] * q[0] - dot(e, f)
    return jnp.concatenate([scalar[None], p[0] * f + q[0] * e + cross(e, f)])


def conjugate(p: Quaternion) -> Quaternion:
    """conj(p) = (p0, -e)."""
    return p * jnp.array([1.0, -1.0, -1.0, -1.0], dtype=p.dtype)


def normalize(p: Quaternion) -> Quaternion:
    """p / |p|: the unit quaternion of the same rotation."""
    return p / jnp.sqrt(dot(p, p))


def rotation_matrix(p: Quaternion) -> Matrix3:
    """A(p / |p|) = [(p0^2 - e.e) I + 2 e e^T + 2 p0 e~] / |p|^2 (Haug; Nikravesh: for a unit
    p), body frame -> global frame; its columns are the body axes in global components."""
    return rotate(p, jnp.eye(3, dtype=p.dtype))


def _column(v: Array, like: Array) -> Array:
    """v (3,) shaped to broadcast against `like`, (3,) or (3, k) (no implicit rank promotion)."""
    return v.reshape((3,) + (1,) * (like.ndim - 1))


def _rotate_values(p: Quaternion, s: Array) -> Array:
    e = _column(p[1:], s)
    scale = p[0] * p[0] - dot(p[1:], p[1:])
    along = jnp.sum(e * s, axis=0, keepdims=True)
    return (scale * s + 2.0 * along * e + 2.0 * p[0] * cross(e, s)) / dot(p, p)


@jax.custom_jvp
def rotate(p: Quaternion, s: Array) -> Array:
    """A(p / |p|) s: the body-frame vector s (3,) in global components, or each column of s
    (3, k) (one call for all the vectors of a body), written out as
    [(p0^2 - e.e) s + 2 (e.s) e + 2 p0 e x s] / |p|^2 (rational in p: no square root).

    Its derivative is d(A s) = A ds + A (w x s) = A ds + w_g x (A s), with the body-frame
    w = 2 vec(conj(p) (x) dp) / |p|^2 and the global w_g = A w = 2 vec(dp (x) conj(p)) / |p|^2
    (the rotated vector itself, turned, instead of the derivatives of the quadratic form: each
    derivative order costs one cross product, as the planar `geometry.rotate`). A constant s
    (a symbolic zero tangent) costs nothing."""
    return _rotate_values(p, s)


def _rotate_jvp(primals, tangents):
    p, s = primals
    dp, ds = tangents
    out = rotate(p, s)
    zero = jax.custom_derivatives.SymbolicZero
    parts = [] if isinstance(dp, zero) else [cross(_column(global_rate(p, dp), out), out)]
    if not isinstance(ds, zero):
        parts.append(rotate(p, ds))
    return out, sum(parts[1:], parts[0]) if parts else jnp.zeros_like(out)


rotate.defjvp(_rotate_jvp, symbolic_zeros=True)


def body_rate(p: Quaternion, pdot: Quaternion) -> Vector3:
    """omega' = 2 vec(conj(p) (x) pdot) / |p|^2 = 2 (p0 edot - p0dot e - e x edot) / |p|^2:
    the angular velocity in the body frame (Nikravesh, ch. 6: 2 G pdot for a unit p). Its
    radial part (pdot along p, a change of scale) gives zero."""
    e, edot = p[1:], pdot[1:]
    return 2.0 * (p[0] * edot - pdot[0] * e - cross(e, edot)) / dot(p, p)


def global_rate(p: Quaternion, pdot: Quaternion) -> Vector3:
    """omega = 2 vec(pdot (x) conj(p)) / |p|^2 = 2 (p0 edot - p0dot e + e x edot) / |p|^2:
    the angular velocity in the global frame, A(p / |p|) omega' (Nikravesh, ch. 6: 2 E pdot)."""
    e, edot = p[1:], pdot[1:]
    return 2.0 * (p[0] * edot - pdot[0] * e + cross(e, edot)) / dot(p, p)


def quaternion_rate(p: Quaternion, omega_body: Vector3) -> Quaternion:
    """pdot = 1/2 p (x) (0, omega'): the quaternion rate of the body-frame angular velocity
    omega' (keeps |p| constant; `body_rate` inverts it)."""
    zero = jnp.zeros((1,), dtype=omega_body.dtype)
    return 0.5 * multiply(p, jnp.concatenate([zero, omega_body]))


def exp(rotation_vector: Vector3) -> Quaternion:
    """The unit quaternion of the rotation by |theta| about theta / |theta|:
    (cos(|theta| / 2), sin(|theta| / 2) theta / |theta|), i.e. exp of the pure quaternion
    (0, theta / 2); smooth at theta = 0 (a series below |theta|^2 = 1e-8, where its error is
    below the rounding)."""
    theta = rotation_vector
    angle2 = dot(theta, theta)
    small = angle2 < 1e-8
    angle = jnp.sqrt(jnp.where(small, 1.0, angle2))
    half_sin = jnp.where(small, 0.5 - angle2 / 48.0, jnp.sin(0.5 * angle) / angle)
    half_cos = jnp.where(small, 1.0 - angle2 / 8.0, jnp.cos(0.5 * angle))
    return jnp.concatenate([half_cos[None], half_sin * theta])


def retract(p: Quaternion, rotation_vector: Vector3) -> Quaternion:
    """normalize(p (x) exp(theta)): p turned by the body-frame rotation vector theta (the only
    way an orientation changes in a step; the spatial note, section 2)."""
    return normalize(multiply(p, exp(rotation_vector)))


def log(p: Quaternion) -> Vector3:
    """The rotation vector theta of p's rotation, |theta| <= pi (the inverse of `exp` there):
    2 atan2(|e|, p0) e / |e| after turning p to p0 >= 0 (p and -p are one rotation; the choice
    jumps only at a half turn); any scale of p; a series below |e| / |p| = 1e-6."""
    p = jnp.where(p[0] < 0.0, -p, p) / jnp.sqrt(dot(p, p))
    e = p[1:]
    n2 = dot(e, e)
    small = n2 < 1e-12
    n = jnp.sqrt(jnp.where(small, 1.0, n2))
    factor = jnp.where(
        small, 2.0 / p[0] * (1.0 - n2 / (3.0 * p[0] * p[0])), 2.0 * jnp.arctan2(n, p[0]) / n
    )
    return factor * e


def from_matrix(matrix: Matrix3) -> Quaternion:
    """The unit quaternion (w >= 0) of a rotation matrix, by Shepperd's method (J. Guidance and
    Control 1(3), 1978): of the four forms 4 w^2 = 1 + tr A, 4 x^2 = 1 + 2 A_00 - tr A, ... the
    one with the largest square is taken (at least 1/4, so its division is well conditioned
    for every rotation), the other three components from the off-diagonal sums and
    differences."""
    a = matrix
    trace = a[0, 0] + a[1, 1] + a[2, 2]
    diff = jnp.stack([a[2, 1] - a[1, 2], a[0, 2] - a[2, 0], a[1, 0] - a[0, 1]])
    xy, xz, yz = a[0, 1] + a[1, 0], a[0, 2] + a[2, 0], a[1, 2] + a[2, 1]
    squares = jnp.stack([1.0 + trace, *(1.0 + 2.0 * a[k, k] - trace for k in range(3))])
    roots = jnp.sqrt(jnp.maximum(squares, 1e-300))
    candidates = jnp.stack(
        [
            jnp.stack([squares[0], *diff]) / roots[0],
            jnp.stack([diff[0], squares[1], xy, xz]) / roots[1],
            jnp.stack([diff[1], xy, squares[2], yz]) / roots[2],
            jnp.stack([diff[2], xz, yz, squares[3]]) / roots[3],
        ]
    )
    p = 0.5 * candidates[jnp.argmax(squares)]
    return jnp.where(p[0] < 0.0, -p, p)


def angle_between(p: Quaternion, q: Quaternion) -> Scalar:
    """The angle of the rotation that takes A(p) to A(q), 2 acos(|p.q| / (|p| |q|)), blind
    to the sign of either (p and -p are one rotation; the spatial note, section 6)."""
    c = jnp.abs(dot(p, q)) / jnp.sqrt(dot(p, p) * dot(q, q))
    return 2.0 * jnp.arccos(jnp.minimum(c, 1.0))
