"""Drive functions f(t) for drivers and applied loads.

Each is an equinox Module whose parameters are differentiable array leaves; derivatives in t
(needed for the velocity term b and for gamma) come from automatic differentiation.

In the annotations, `*shape` is the shape of the value (() for a driver, (2,) for the force
of `Force`), which parameters of that shape give by broadcasting.
"""

import abc
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Real

from .._custom_types import Scalar, ScalarLike
from .._linalg.dense import solve
from .._runtime.exceptions import JaxmbError
from .geometry import is_concrete


def _f64(x: Any) -> Float[Array, "..."]:
    return jnp.asarray(x, dtype=jnp.float64)


class AbstractDrive(eqx.Module):
    """A function of time t -> value (scalar, or a 2-vector for `Force`).

    `invalid()` lists the checks on its parameters' values as (predicate, problem) pairs: they
    run when the values are concrete (`__check_init__`) and, where they are traced, inside jit
    through the element that holds the drive (`Mechanism.build`), so they hold both ways."""

    @abc.abstractmethod
    def __call__(self, t: ScalarLike) -> Float[Array, " *shape"]:
        """Value at time t."""

    def invalid(self) -> tuple[tuple[Bool[Array, ""], str], ...]:
        """(predicate True when the parameters are invalid, problem) pairs; none by default."""
        return ()

    def __check_init__(self):
        for bad, problem in self.invalid():
            if is_concrete(bad) and bool(np.asarray(bad)):
                raise JaxmbError.about(type(self).__name__, problem)


class Constant(AbstractDrive):
    """f(t) = value."""

    value: Float[Array, " *shape"] = eqx.field(converter=_f64)

    def __call__(self, t: ScalarLike) -> Float[Array, " *shape"]:
        return self.value + 0.0 * t


class Linear(AbstractDrive):
    """f(t) = offset + slope t."""

    slope: Float[Array, " *shape"] = eqx.field(converter=_f64)
    offset: Float[Array, " *shape"] = eqx.field(converter=_f64, default=0.0)

    def __call__(self, t: ScalarLike) -> Float[Array, " *shape"]:
        return self.offset + self.slope * t


class Harmonic(AbstractDrive):
    """f(t) = offset + amplitude cos(omega t + phase)."""

    amplitude: Float[Array, " *shape"] = eqx.field(converter=_f64)
    omega: Float[Array, " *shape"] = eqx.field(converter=_f64)
    phase: Float[Array, " *shape"] = eqx.field(converter=_f64, default=0.0)
    offset: Float[Array, " *shape"] = eqx.field(converter=_f64, default=0.0)

    def __call__(self, t: ScalarLike) -> Float[Array, " *shape"]:
        return self.offset + self.amplitude * jnp.cos(self.omega * t + self.phase)


class Polynomial(AbstractDrive):
    """f(t) = sum_k c_k t^k, coefficients lowest order first."""

    coefficients: Float[Array, " order"] = eqx.field(converter=_f64)

    def __check_init__(self):
        if jnp.ndim(self.coefficients) != 1 or jnp.shape(self.coefficients)[0] == 0:
            raise JaxmbError.about("Polynomial", "coefficients must be a non-empty 1-D sequence")

    def __call__(self, t: ScalarLike) -> Scalar:
        return jnp.polyval(self.coefficients[::-1], t)


class Spline(AbstractDrive):
    """Natural C2 cubic spline through (t_k, values_k); constant outside the knots.

    The second derivatives at the knots solve the tridiagonal system
    h_{k-1} M_{k-1} + 2 (h_{k-1} + h_k) M_k + h_k M_{k+1} = 6 (d_k - d_{k-1}), M_0 = M_N = 0,
    with h_k = t_{k+1} - t_k and d_k = (y_{k+1} - y_k) / h_k, so the spline is differentiable in
    the knot values (and knot times).
    """

    t: Float[Array, " knots"] = eqx.field(converter=_f64)
    values: Float[Array, " knots"] = eqx.field(converter=_f64)

    def __check_init__(self):
        if jnp.ndim(self.t) != 1 or jnp.shape(self.t)[0] < 2:
            raise JaxmbError.about("Spline", "t must be a 1-D sequence of at least 2 knots")
        if jnp.shape(self.values) != jnp.shape(self.t):
            raise JaxmbError.about(
                "Spline", f"values has shape {jnp.shape(self.values)}, t has {jnp.shape(self.t)}"
            )

    def invalid(self) -> tuple[tuple[Bool[Array, ""], str], ...]:
        return ((~jnp.all(jnp.diff(self.t) > 0.0), "knot times t must be strictly increasing"),)

    def _second_derivatives(self):
        t, y = self.t, self.values
        n = t.shape[0]
        h = jnp.diff(t)
        d = jnp.diff(y) / h
        if n == 2:
            return jnp.zeros_like(y)
        main = 2.0 * (h[:-1] + h[1:])
        rhs = 6.0 * jnp.diff(d)
        A = jnp.diag(main) + jnp.diag(h[1:-1], 1) + jnp.diag(h[1:-1], -1)
        inner = solve(A, rhs)
        return jnp.concatenate([jnp.zeros(1), inner, jnp.zeros(1)])

    def __call__(self, t: ScalarLike) -> Scalar:
        knots, y = self.t, self.values
        M = self._second_derivatives()
        tc = jnp.clip(t, knots[0], knots[-1])
        k = jnp.clip(jnp.searchsorted(knots, tc, side="right") - 1, 0, knots.shape[0] - 2)
        h = knots[k + 1] - knots[k]
        a = (knots[k + 1] - tc) / h
        b = (tc - knots[k]) / h
        return a * y[k] + b * y[k + 1] + ((a**3 - a) * M[k] + (b**3 - b) * M[k + 1]) * h**2 / 6.0


class SmoothSteps(AbstractDrive):
    """Piecewise-constant levels joined by C2 quintic transitions (zero rate and acceleration at
    both ends of every transition):

        f(t) = initial + sum_k (levels_k - levels_{k-1}) S((t - starts_k) / (ends_k - starts_k)),
        S(x) = 10 x^3 - 15 x^4 + 6 x^5 on [0, 1], 0 before, 1 after.
    """

    starts: Float[Array, " steps"] = eqx.field(converter=_f64)
    ends: Float[Array, " steps"] = eqx.field(converter=_f64)
    levels: Float[Array, " steps"] = eqx.field(converter=_f64)
    initial: Scalar = eqx.field(converter=_f64, default=0.0)

    def __check_init__(self):
        shapes = {jnp.shape(self.starts), jnp.shape(self.ends), jnp.shape(self.levels)}
        if len(shapes) != 1 or jnp.ndim(self.starts) != 1:
            raise JaxmbError.about(
                "SmoothSteps", "starts, ends and levels must be 1-D of equal length"
            )

    def invalid(self) -> tuple[tuple[Bool[Array, ""], str], ...]:
        return ((~jnp.all(self.ends > self.starts), "every transition must end after it starts"),)

    def __call__(self, t: ScalarLike) -> Scalar:
        x = jnp.clip((t - self.starts) / (self.ends - self.starts), 0.0, 1.0)
        S = x**3 * (10.0 - 15.0 * x + 6.0 * x**2)
        jumps = jnp.diff(jnp.concatenate([jnp.reshape(self.initial, (1,)), self.levels]))
        return self.initial + jnp.sum(jumps * S)


class Offset(AbstractDrive):
    """f(t) = base + delta(t): a drive function (or constant) `delta` shifted by a constant.

    E.g. a driver distance that starts at its assembled value d0 and then follows a steering
    profile: `Offset(d0, SmoothSteps(...))` (the mobile robot of seed 001, section 4.3).
    """

    base: Float[Array, " *shape"] = eqx.field(converter=_f64)
    delta: AbstractDrive = eqx.field(converter=lambda f: as_drive(f))

    def __call__(self, t: ScalarLike) -> Float[Array, " *shape"]:
        return self.base + self.delta(t)

    def invalid(self) -> tuple[tuple[Bool[Array, ""], str], ...]:
        return self.delta.invalid()


def as_drive(
    value: AbstractDrive | Real[ArrayLike, " *shape"], *, shape: tuple[int, ...] = ()
) -> AbstractDrive:
    """A drive function from a constant or an `AbstractDrive`."""
    if isinstance(value, AbstractDrive):
        return value
    if callable(value):
        raise TypeError(
            "drive functions must be jaxmb.drive modules (Constant, Linear, Harmonic, Polynomial, "
            "Spline, or a subclass of AbstractDrive), not plain callables"
        )
    value = _f64(value)
    if value.shape != shape:
        raise ValueError(f"a constant drive must have shape {shape}, got {value.shape}")
    return Constant(value)
