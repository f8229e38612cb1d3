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

from ..._bodies.quaternion import product as multiply
from ..._custom_types import Scalar
from .vectors import Matrix3, Quaternion, Vector3, cross, dot


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


def angle_between(p: Quaternion, q: Quaternion) -> Scalar:
    """The angle of the rotation that takes A(p) to A(q), 2 acos(|p.q| / (|p| |q|)), blind
    to the sign of either (p and -p are one rotation; the spatial note, section 6)."""
    c = jnp.abs(dot(p, q)) / jnp.sqrt(dot(p, p) * dot(q, q))
    return 2.0 * jnp.arccos(jnp.minimum(c, 1.0))
