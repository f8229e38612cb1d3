"""Build-time checks of a body's given orientation (the `rotation=` of `Mechanism.body`)."""

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Real

from ..._runtime.exceptions import JaxmbError
from ..geometry import is_concrete
from .quaternion import from_matrix

UNIT_TOL = 1e-6
"""Largest | |p| - 1 | accepted for a given unit quaternion (it is then normalised)."""

_from_matrix = jax.jit(from_matrix)

ORTHONORMAL_TOL = 1e-6
"""Largest entry of |A^T A - I| accepted for a given rotation matrix."""


def check_unit_quaternion(value: Real[ArrayLike, "4"], body: str) -> np.ndarray:
    """A finite quaternion (w, x, y, z) of unit length (within UNIT_TOL), returned normalised;
    a JaxmbError naming `body` otherwise."""
    p = _finite(value, body, (4,), "a unit quaternion (w, x, y, z)")
    norm = float(np.linalg.norm(p))
    if not abs(norm - 1.0) <= UNIT_TOL:
        raise JaxmbError.about(
            f"body {body!r}",
            f"rotation {p.tolist()} is not a unit quaternion (|p| = {norm:.6g}); give "
            "(w, x, y, z) with w^2 + x^2 + y^2 + z^2 = 1, or a 3 x 3 rotation matrix",
        )
    return p / norm


def check_rotation_matrix(value: Real[ArrayLike, "3 3"], body: str) -> np.ndarray:
    """A finite 3 x 3 rotation matrix: orthonormal (within ORTHONORMAL_TOL) and det = +1 (not a
    reflection); a JaxmbError naming `body` otherwise."""
    a = _finite(value, body, (3, 3), "a 3 x 3 rotation matrix")
    error = float(np.max(np.abs(a.T @ a - np.eye(3))))
    if not error <= ORTHONORMAL_TOL:
        raise JaxmbError.about(
            f"body {body!r}",
            f"rotation matrix is not orthonormal (largest entry of |A^T A - I| = {error:.3g}); "
            "its columns must be the body axes in global components, unit and perpendicular",
        )
    if not np.linalg.det(a) > 0.0:
        raise JaxmbError.about(
            f"body {body!r}",
            "rotation matrix has determinant -1: it is a reflection, not a rotation (swap two "
            "columns or negate one)",
        )
    return a


def check_rotation(value: Real[ArrayLike, "..."], body: str) -> np.ndarray:
    """A given orientation, a unit quaternion (4,) or a rotation matrix (3, 3), checked (as
    above) and returned as a unit quaternion (w >= 0 for a matrix, by Shepperd's method)."""
    shape = np.shape(value) if not isinstance(value, (str, bytes)) else None
    if shape == (3, 3):
        return np.asarray(_from_matrix(jnp.asarray(check_rotation_matrix(value, body))))
    if shape == (4,):
        return check_unit_quaternion(value, body)
    raise JaxmbError.about(
        f"body {body!r}",
        f"rotation must be a unit quaternion (w, x, y, z) or a 3 x 3 rotation matrix, got "
        f"{value!r}",
    )


def _finite(value, body: str, shape: tuple[int, ...], what: str) -> np.ndarray:
    if isinstance(value, (str, bytes)) or np.shape(value) != shape:
        raise JaxmbError.about(f"body {body!r}", f"rotation must be {what}, got {value!r}")
    if not is_concrete(value):
        raise JaxmbError.about(f"body {body!r}", "rotation must be given as numbers, not traced")
    a = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        raise JaxmbError.about(f"body {body!r}", f"rotation {a.tolist()} is not finite")
    return a
