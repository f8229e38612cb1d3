"""The arguments of a spatial body (`Mechanism(dim=3).body`): its position and rotation, and
the checks that name the body: a unit quaternion, a proper rotation matrix, principal moments
that a rigid body can have."""

import jax.numpy as jnp
import numpy as np

from .._bodies import quaternion as quat
from .._runtime.exceptions import JaxmbError
from ..elements.geometry import is_concrete, is_real

UNIT_TOL = 1e-6
"""How far |p| of a given quaternion, or A^T A of a given matrix, may be from 1 / I: above
rounding of a typed value (0.70710678 has |p| - 1 ~ 1e-9), below a typing mistake."""


def spatial_q(where, q, r, rotation):
    """q = (r, p) from r and `rotation` (a unit quaternion or a rotation matrix), or q itself."""
    if q is not None:
        if r is not None or rotation is not None:
            raise JaxmbError.about(where, "give either q or r and rotation, not both")
        return q
    r = (0.0, 0.0, 0.0) if r is None else r
    for label, value in (("r", r), ("rotation", rotation)):
        if value is not None and not is_real(value):
            raise JaxmbError.about(
                where,
                f"{label} must be real numbers, got {value!r} of type {type(value).__name__}",
            )
    r = jnp.asarray(r, jnp.float64)
    if r.shape != (3,):
        raise JaxmbError.about(where, f"r must be a 3-vector (x, y, z), got shape {r.shape}")
    p = jnp.array([1.0, 0.0, 0.0, 0.0]) if rotation is None else _quaternion(where, rotation)
    return jnp.concatenate([r, p])


def _quaternion(where, rotation):
    R = jnp.asarray(rotation, jnp.float64)
    if R.shape == (4,):
        if is_concrete(R):
            size = float(np.linalg.norm(np.asarray(R)))
            if not abs(size - 1.0) <= UNIT_TOL:
                raise JaxmbError.about(
                    where,
                    f"rotation {np.asarray(R).tolist()} is not a unit quaternion (|p| = "
                    f"{size:.9g}); give (w, x, y, z) with w^2 + x^2 + y^2 + z^2 = 1",
                )
        return R
    if R.shape == (3, 3):
        if is_concrete(R):
            A = np.asarray(R)
            off = float(np.max(np.abs(A.T @ A - np.eye(3)))) if np.all(np.isfinite(A)) else np.inf
            if not (off <= UNIT_TOL and np.linalg.det(A) > 0.0):
                raise JaxmbError.about(
                    where,
                    f"rotation {A.tolist()} is not a rotation matrix (|A^T A - I| = {off:.3g}, "
                    f"det = {np.linalg.det(A):.6g}); give an orthonormal matrix with det +1 "
                    "whose columns are the body axes in the global frame",
                )
        return quat.from_matrix(R)
    raise JaxmbError.about(
        where,
        f"rotation must be a unit quaternion (w, x, y, z) or a 3 x 3 rotation matrix, got "
        f"shape {R.shape}",
    )


def check_spatial_bodies(names, inertias, q):
    """Concrete checks: principal moments satisfy the triangle inequality J_a + J_b >= J_c (a
    rigid body's mass distribution cannot violate it), and each quaternion is a unit one."""
    if is_concrete(inertias):
        J = np.asarray(inertias)
        s = np.sum(J, axis=1, keepdims=True)
        bad = np.any(s - J < J * (1.0 - 1e-12), axis=1)  # J_a + J_b >= J_c, within rounding
        if bad.any():
            m = int(np.argmax(bad))
            raise JaxmbError.about(
                f"body {names[m]!r}",
                f"principal moments of inertia {J[m].tolist()} violate the triangle inequality "
                "J1 + J2 >= J3 (and its permutations) that every rigid body satisfies",
            )
    if is_concrete(q):
        size = np.linalg.norm(np.asarray(q)[:, 3:], axis=1)
        bad = ~(np.abs(size - 1.0) <= UNIT_TOL)
        if bad.any():
            m = int(np.argmax(bad))
            raise JaxmbError.about(
                f"body {names[m]!r}",
                f"its quaternion {np.asarray(q)[m, 3:].tolist()} is not a unit quaternion "
                f"(|p| = {size[m]:.9g}); give (w, x, y, z) with w^2 + x^2 + y^2 + z^2 = 1",
            )
