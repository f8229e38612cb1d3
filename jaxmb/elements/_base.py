"""Abstract element types: holonomic and Pfaffian constraint pairs, force elements.

A constraint pair defines only a residual. The model obtains everything else by
forward-mode automatic differentiation (see `jaxmb._model.model`):

- holonomic pair: Phi(q, t); its velocity residual is g = d/dt Phi = Phi_q qd + Phi_t;
- Pfaffian pair: the velocity residual g = Psi(q) qd directly (seed 001, eq. 3).

Both then give C = dg/dqd, b = g(q, 0, t) and gamma = -(dg/dq qd + dg/dt) (seed 001, eq. 4-9).
"""

import abc
import dataclasses
from typing import Any, ClassVar, NoReturn

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Real

from .._custom_types import Coordinates, PairRowVector, Scalar, ScalarLike, Vector2
from .._runtime.exceptions import JaxmbError
from .drive import AbstractDrive, as_drive
from .geometry import Body, is_concrete, point
from .model_view import ModelView


def drive_field(value: Any) -> AbstractDrive:
    """Field converter for drive functions: a constant of any shape becomes `Constant`, so that
    `check_drive` reports a wrong shape naming the element (text is left for it to refuse)."""
    if isinstance(value, (str, bytes)):
        return value  # pyright: ignore[reportReturnType]  # refused by check_drive
    if isinstance(value, AbstractDrive):
        return value
    return as_drive(value, shape=() if callable(value) else np.shape(value))


def _describe(element) -> str:
    return f"{type(element).__name__} {element.name!r}"


VALUE_TESTS = {
    "nonnegative": lambda v: not np.all(v >= 0.0),
    "positive": lambda v: not np.all(v > 0.0),
    "nonzero": lambda v: not np.sum(v * v) > 0.0,
}
"""Whether a concrete value fails the declared check (nan fails every one)."""

VALUE_PROBLEMS = {
    "nonnegative": "must be non-negative",
    "positive": "must be positive",
    "nonzero": "has zero length; a direction must be non-zero",
}


class AbstractElement(eqx.Module):
    """Anything added to a `Mechanism`: a constraint pair, a driver or a force element.

    `nonnegative` names the fields whose entries must all be >= 0, `positive` those whose
    entries must be > 0 and `nonzero` the vectors that must have non-zero length. These are the
    only checks on a field's values: made here when the values are concrete, and inside jit by
    `Mechanism.build` where they are traced, so every check holds both ways."""

    name: eqx.AbstractVar[str]
    dim: ClassVar[int] = 2  # planar (2) or spatial (3): a mechanism takes elements of its own
    nonnegative: ClassVar[tuple[str, ...]] = ()
    positive: ClassVar[tuple[str, ...]] = ()
    nonzero: ClassVar[tuple[str, ...]] = ()

    def __check_init__(self):
        """Every element: a non-empty string name (model files and messages key on it), and no
        text where numbers belong (fields annotated `str` hold names) (a string would otherwise be
        parsed as a number silently)."""
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(
                f"{type(self).__name__}: name must be a non-empty string, got "
                f"{self.name!r} of type {type(self.name).__name__}"
            )
        for field in dataclasses.fields(self):
            if field.name != "name" and field.type is not str:  # names (of itself, a pair)
                self.check_not_text(getattr(self, field.name, None), field.name)
        for kind in VALUE_TESTS:
            for label in getattr(self, kind):
                value = getattr(self, label)
                if is_concrete(value) and VALUE_TESTS[kind](np.asarray(value, np.float64)):
                    shown = "" if kind == "nonzero" else f" = {np.asarray(value).tolist()}"
                    self.fail(f"{label}{shown} {VALUE_PROBLEMS[kind]}")

    def dimension(self) -> int:
        """2 (a planar element) or 3 (spatial): its class's `dim` (gravity: its vector's)."""
        return self.dim

    @abc.abstractmethod
    def bodies(self) -> tuple[Body, ...]:
        """The bodies this element acts on (ground included where it takes part)."""

    def fail(self, problem: str) -> NoReturn:
        """Raise a JaxmbError (a ValueError) naming this element and the problem."""
        name = self.name if isinstance(self.name, str) else None
        raise JaxmbError.about(_describe(self), problem, element=name)

    def check_not_text(self, value: Any, label: str) -> None:
        """Build-time check that a numeric field was not given as text."""
        if isinstance(value, (str, bytes)):
            self.fail(
                f"{label} must be a number (or numbers), got {value!r} of type "
                f"{type(value).__name__}"
            )

    def check_vector(self, value: Real[ArrayLike, " size"], label: str, size: int = 2) -> None:
        """Build-time check of a local vector of `size` entries (2: planar, 3: spatial): shape
        and finiteness (non-zero length: declare the field in `nonzero`)."""
        self.check_not_text(value, label)
        if jnp.shape(value) != (size,):
            self.fail(f"{label} must be a {size}-vector, got shape {jnp.shape(value)}")
        if is_concrete(value):
            arr = np.asarray(value)
            if not np.all(np.isfinite(arr)):
                self.fail(f"{label} = {arr.tolist()} is not finite")

    def check_scalar(self, value: ScalarLike, label: str) -> None:
        """Build-time check of a scalar parameter: shape and finiteness (signs: declare the
        field in `nonnegative` or `positive`)."""
        self.check_not_text(value, label)
        if jnp.shape(value) != ():
            self.fail(f"{label} must be a scalar, got shape {jnp.shape(value)}")
        if is_concrete(value):
            v = float(np.asarray(value))
            if not np.isfinite(v):
                self.fail(f"{label} = {v} is not finite")

    def check_body(self, body: Body, label: str) -> None:
        """Build-time check that `body` is a body handle."""
        if not isinstance(body, Body):
            self.fail(
                f"{label} must be a body handle returned by Mechanism.body (or "
                f"Mechanism.ground), got {body!r} of type {type(body).__name__}"
            )

    def check_point_pair(
        self, i: Body, j: Body, s_i: Real[ArrayLike, "2"], s_j: Real[ArrayLike, "2"]
    ) -> None:
        """Build-time checks of an element between the point s_i of body i and the point s_j of
        body j: distinct body handles (`check_distinct`), 2-vectors (`check_vector`)."""
        self.check_distinct(i, j)
        self.check_vector(s_i, "s_i")
        self.check_vector(s_j, "s_j")

    def check_distinct(self, *bodies: Body) -> None:
        """Build-time check of body handles; a pair must not join a body to itself."""
        for ordinal, body in zip(("first", "second", "third"), bodies):
            self.check_body(body, f"its {ordinal} body")
        if len(set(bodies)) != len(bodies):
            self.fail(f"joins body {bodies[0].name!r} to itself; the bodies must differ")

    def check_drive(self, f: AbstractDrive, label: str, shape: tuple[int, ...] = ()) -> None:
        """Build-time check of a drive function: f(t) has `shape` (found abstractly, so traced
        parameters are fine) and its concrete parameters are finite."""
        self.check_not_text(f, label)
        out = jax.eval_shape(f, jnp.zeros((), jnp.float64))
        if out.shape != shape:
            want = "a scalar" if shape == () else f"shape {shape}"
            self.fail(
                f"{label} is a {type(f).__name__} returning shape {out.shape}; "
                f"it must return {want}"
            )
        for leaf in jax.tree_util.tree_leaves(f):
            if eqx.is_inexact_array(leaf) and is_concrete(leaf):
                values = np.asarray(leaf)
                if not np.all(np.isfinite(values)):
                    self.fail(
                        f"{label} ({type(f).__name__}) has a non-finite parameter {values.tolist()}"
                    )


class AbstractPair(AbstractElement):
    """A kinematic pair (or driver): `num_rows` scalar constraint equations.

    In the annotations `n` is the length of the q handed to the pair (the model evaluates a
    pair on its own bodies' coordinates) and `pair_rows` its `num_rows`."""

    num_rows: eqx.AbstractClassVar[int]
    holonomic: eqx.AbstractClassVar[bool]

    @abc.abstractmethod
    def velocity_residual(self, q: Coordinates, qd: Coordinates, t: Scalar) -> PairRowVector:
        """g(q, qd, t) = C(q, t) qd + b(q, t), shape (num_rows,)."""


class AbstractHolonomicPair(AbstractPair):
    """Holonomic (possibly rheonomic) pair: Phi(q, t) = 0 (seed 001, eq. 1)."""

    holonomic: ClassVar[bool] = True

    @abc.abstractmethod
    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        """Phi(q, t), shape (num_rows,)."""

    def velocity_residual(self, q: Coordinates, qd: Coordinates, t: Scalar) -> PairRowVector:
        """g = Phi_q qd + Phi_t (seed 001, eq. 2), by a JVP along (qd, 1)."""
        t = jnp.asarray(t, dtype=q.dtype)
        return jax.jvp(self.residual, (q, t), (qd, jnp.ones_like(t)))[1]


class AbstractNonholonomicPair(AbstractPair):
    """Pfaffian pair: Psi(q) qd = 0, linear in the velocities (seed 001, eq. 3)."""

    holonomic: ClassVar[bool] = False


class AbstractForceElement(AbstractElement):
    """An applied force; contributes its generalized force to F(q, qd, t).

    `local`: its generalized force reads only its own bodies' coordinates and not the model,
    so the model evaluates elements of one type together on their bodies' coordinates (one
    vmapped kernel per type, as the pairs) with `model=None`."""

    local: ClassVar[bool] = False

    @abc.abstractmethod
    def generalized_force(
        self, model: ModelView, q: Coordinates, qd: Coordinates, t: Scalar
    ) -> Coordinates:
        """Generalized force vector Q (shape (n,)) with Q^T delta q the virtual work."""


def point_force(q: Coordinates, body: Body, s: Vector2, f: Vector2) -> Coordinates:
    """Generalized force of the global force f applied at body point s: (dr_P/dq)^T f."""
    _, vjp = jax.vjp(lambda q_: point(q_, body, s), q)
    return vjp(f)[0]
