"""Array annotations used across jaxmb, each named once.

jaxtyping dtypes and shapes, documentation only (nothing checks them at run time). The
dimension names are those of docs/code_layout.md: `n` coordinates (3 per body), `rows` the
rows of C (m + h), `pair_rows` the rows of one pair. An input (`...Like`) takes any real
numbers (lists, NumPy arrays) and is converted to float64; a result is a float64 array.
This module imports nothing of jaxmb, so every layer may use it.
"""

from collections.abc import Sequence

from jaxtyping import Array, ArrayLike, Float, Real

Scalar = Float[Array, ""]
"""A float64 number (a time, a tolerance, a norm)."""

ScalarLike = Real[ArrayLike, ""]
"""A real number given by the user."""

Coordinates = Float[Array, " n"]
"""A vector over the coordinates: q, qd, qdd or a generalized force."""

CoordinatesLike = Real[ArrayLike, " n"] | Sequence[float]
"""q, qd or qdd given by the user (a list, a NumPy or JAX array)."""

RowVector = Float[Array, " rows"]
"""A vector over the rows of C: g = C qd + b, gamma, lambda."""

ConstraintMatrix = Float[Array, "rows n"]
"""C(q, t), the constraint matrix."""

MassMatrix = Float[Array, "n n"]
"""M, the mass matrix."""

PairRowVector = Float[Array, " pair_rows"]
"""A vector over the rows of one pair (its residual, its multipliers)."""

Vector2 = Float[Array, "2"]
"""A planar vector (an attachment point, a direction, a force)."""

Vector2Like = Real[ArrayLike, "2"] | Sequence[float]
"""A planar vector given by the user, e.g. (0.0, -9.81)."""
