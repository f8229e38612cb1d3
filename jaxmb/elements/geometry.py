"""Planar kinematics helpers: rotation matrices, body poses, body handles."""

import dataclasses
from typing import Any

import jax
import jax.core
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .._bodies import PLANAR, AbstractBodyKind

GROUND_INDEX = -1


@dataclasses.dataclass(frozen=True)
class Body:
    """Handle of a body in a `Mechanism` (or of its ground).

    Hashable and static: elements keep it as a static field, the numbers live in the model.

    **Fields:** `name`; `index` (the body's place in the model, 0, 1, ...; -1 for ground);
    `owner` (a token identifying the mechanism that issued the handle, so a foreign handle is
    caught at build time; left out of equality and hashing so that identical builds share one
    jit compilation); `kind` (the body kind: where its coordinates lie in q and v).
    """

    name: str
    index: int
    owner: int = dataclasses.field(compare=False)
    kind: AbstractBodyKind = PLANAR

    @property
    def is_ground(self) -> bool:
        return self.index == GROUND_INDEX

    def coordinates(self) -> tuple[int, ...]:
        """Indices of this body's position coordinates in q; empty for ground."""
        return self.kind.position_indices(self.index)

    def columns(self) -> tuple[int, ...]:
        """Indices of this body's velocity coordinates in v (its columns of C); empty for
        ground."""
        return self.kind.velocity_indices(self.index)

    def __repr__(self):
        return f"Body({self.name!r})"


_TURN = np.array([-1.0, 1.0])


def rot90(v):
    """Counter-clockwise rotation by 90 degrees, Omega v with Omega = [[0, -1], [1, 0]]:
    (-v_y, v_x), as the reversed vector times (-1, 1) (two operations, also in every
    derivative, where indexing each component costs four)."""
    return v[::-1] * _TURN.reshape((2,) + (1,) * (jnp.ndim(v) - 1))


def dot2(a, b):
    """a . b of two planar vectors, as the sum of the elementwise product. Under vmap (and
    jacfwd's tangents) a jnp dot of 2-vectors is a batched dot, which XLA:CPU runs as a
    matrix-kernel call per member (design measurement D4); the product and sum fuse."""
    return jnp.sum(a * b, axis=0)


def cross2(a, b):
    """Scalar planar cross product a_x b_y - a_y b_x = (Omega a)^T b ... with sign a x b."""
    return a[0] * b[1] - a[1] * b[0]


def pose(q, body: Body):
    """Position r and angle phi of `body` in the stacked coordinates q (ground: origin, 0)."""
    if body.is_ground:
        return jnp.zeros(2, dtype=q.dtype), jnp.zeros((), dtype=q.dtype)
    k = PLANAR.nq * body.index
    return q[k : k + 2], q[k + 2]


@jax.custom_jvp
def rotate(phi, v):
    """A(phi) v, with the rotation A(phi) = [[cos, -sin], [sin, cos]] (body frame -> global
    frame), written out: (v_x cos phi - v_y sin phi, v_x sin phi + v_y cos phi). Under vmap
    a product with a 2 x 2 matrix is a small batched dot (a kernel call of its own on CPU);
    the written-out form fuses with its neighbours (and ran a batch 8 % faster than
    v cos phi + (Omega v) sin phi).

    Its derivative (`_rotate_jvp`) is d(A v) = A dv + dphi Omega A v (dA/dphi = Omega A):
    the rotated vector itself, turned, instead of the derivatives of cos and sin, which
    recompute both at every order. C and gamma are derivatives of the residuals and a
    gradient differentiates them again, so each order costs a product here, not another pair
    of transcendental functions (design measurement D14)."""
    c, s = jnp.cos(phi), jnp.sin(phi)
    x, y = v[0], v[1]  # each component read once: every derivative order repeats the reads
    return jnp.stack([c * x - s * y, s * x + c * y])


def _rotate_jvp(primals, tangents):
    phi, v = primals
    dphi, dv = tangents
    out = rotate(phi, v)
    zero = jax.custom_derivatives.SymbolicZero
    parts = [] if isinstance(dphi, zero) else [dphi * rot90(out)]
    if not isinstance(dv, zero):
        parts.append(rotate(phi, dv))
    return out, sum(parts[1:], parts[0]) if parts else jnp.zeros_like(out)


rotate.defjvp(_rotate_jvp, symbolic_zeros=True)


def point(q, body: Body, s):
    """Global position of the body-frame point s: r + A(phi) s (seed 001, eq. 40)."""
    r, phi = pose(q, body)
    return r + rotate(phi, s)


def relative_angle(q, i: Body, j: Body):
    """phi_j - phi_i: the angle of body j relative to body i."""
    return pose(q, j)[1] - pose(q, i)[1]


def direction(q, body: Body, v):
    """Global components of the body-frame vector v: A(phi) v."""
    _, phi = pose(q, body)
    return rotate(phi, v)


def is_concrete(x) -> bool:
    """True when x holds values (not a tracer), so build-time value checks can run."""
    if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(x)):
        return False  # asked first: a failed np.asarray of a tracer builds a slow message
    try:
        np.asarray(x)
    except Exception:
        return False
    return True


def as_f64(x: Any) -> Array:
    """Field converter: a float64 array (keeps tracers traced). Text is left as it is, for the
    element's check to refuse naming the element (jnp would parse "1.0" as a number)."""
    if isinstance(x, (str, bytes)):
        return x  # pyright: ignore[reportReturnType]  # refused by the element's check
    return jnp.asarray(x, dtype=jnp.float64)


def is_real(value) -> bool:
    """True for real numbers, arrays (traced ones included) and (nested) sequences of them;
    False for text, booleans and complex numbers (which jnp.asarray would take silently)."""
    leaves = jax.tree.leaves(value)
    for leaf in leaves:
        if isinstance(leaf, (str, bytes, bool, np.bool_)):
            return False
        dtype = getattr(leaf, "dtype", None)
        if dtype is None:
            try:
                dtype = np.asarray(leaf).dtype
            except (TypeError, ValueError):
                return False
        if np.dtype(dtype).kind not in "iuf":
            return False
    return bool(leaves)
