"""The `Mechanism` builder: bodies, pairs, drivers and forces, then `build()` -> `Model`."""

import dataclasses
import itertools
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Real

from .._custom_types import ScalarLike
from .._runtime import errors as _errors
from .._runtime.exceptions import JaxmbError
from ..elements import AbstractElement, AbstractForceElement, AbstractPair
from ..elements._base import VALUE_PROBLEMS
from ..elements.drive import AbstractDrive
from ..elements.friction import AbstractFriction, check_friction
from ..elements.geometry import GROUND_INDEX, Body, is_concrete, is_real
from .model import Model

_tokens = itertools.count(1)


class Mechanism:
    """Builder of a planar mechanism.

    ```python
    m = Mechanism()
    crank = m.body("crank", mass=1.0, inertia=0.01, q=(0.1, 0.0, 0.0))
    m.add(Revolute("O", m.ground, crank, s_i=(0.0, 0.0), s_j=(-0.1, 0.0)))
    model = m.build()
    ```
    Building is traceable: masses, inertias, q and element parameters may be JAX tracers.
    """

    def __init__(self) -> None:
        self._token = next(_tokens)
        self.ground = Body("ground", GROUND_INDEX, self._token)
        self._bodies: list[tuple[Body, ArrayLike, ArrayLike, Array]] = []
        self._elements: list[AbstractElement] = []

    def body(
        self,
        name: str,
        mass: ScalarLike,
        inertia: ScalarLike,
        q: Real[ArrayLike, "3"] | Sequence[ScalarLike] = (0.0, 0.0, 0.0),
    ) -> Body:
        """Add a rigid body with centroidal frame at q = (x, y, phi); returns its handle."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"body name must be a non-empty string, got {name!r}")
        if name == "ground" or any(b.name == name for b, *_ in self._bodies):
            raise ValueError(f"body name {name!r} is already used")
        for label, value in (("mass", mass), ("inertia", inertia), ("q", q)):
            if not is_real(value):
                raise JaxmbError.about(
                    f"body {name!r}",
                    f"{label} must be a real number (or numbers), got "
                    f"{value!r} of type {type(value).__name__}",
                )
        for label, value in (("mass", mass), ("inertia", inertia)):
            if jnp.shape(value) != ():
                raise JaxmbError.about(f"body {name!r}", f"{label} must be a scalar")
            if is_concrete(value):
                v = float(np.asarray(value))
                if not np.isfinite(v) or v <= 0.0:
                    raise JaxmbError.about(
                        f"body {name!r}", f"{label} = {v} must be positive and finite"
                    )
        q = jnp.asarray(q, dtype=jnp.float64)
        if q.shape != (3,):
            raise JaxmbError.about(f"body {name!r}", f"q must be (x, y, phi), got shape {q.shape}")
        if is_concrete(q) and not np.all(np.isfinite(np.asarray(q))):
            raise JaxmbError.about(f"body {name!r}", f"q = {np.asarray(q).tolist()} is not finite")
        handle = Body(name, len(self._bodies), self._token)
        self._bodies.append((handle, mass, inertia, q))
        return handle

    def add(self, element: AbstractElement) -> AbstractElement:
        """Add a constraint pair, driver or force element; names must be unique."""
        if not isinstance(element, AbstractElement):
            raise TypeError(f"can only add jaxmb elements, got {type(element).__name__}")
        if any(e.name == element.name for e in self._elements):
            raise ValueError(f"an element named {element.name!r} was already added")
        for body in element.bodies():
            if not isinstance(body, Body):
                element.fail(
                    f"{body!r} is not a body handle; use the handle returned by "
                    "Mechanism.body (or Mechanism.ground)"
                )
            if body.owner != self._token:
                element.fail(f"body {body.name!r} belongs to another Mechanism")
            if not body.is_ground and body not in self.bodies:
                element.fail(
                    f"body {body.name!r} is unknown to this Mechanism; its bodies are "
                    f"{[b.name for b in self.bodies]}"
                )
        self._elements.append(element)
        return element

    @property
    def bodies(self) -> tuple[Body, ...]:
        return tuple(b for b, *_ in self._bodies)

    def build(self) -> Model:
        """Freeze into a `Model` (an equinox Module whose numbers are array leaves)."""
        if not self._bodies:
            raise ValueError("the mechanism has no bodies")
        names = tuple(b.name for b, *_ in self._bodies)
        masses = jnp.stack([jnp.asarray(m, jnp.float64) for _, m, _, _ in self._bodies])
        inertias = jnp.stack([jnp.asarray(j, jnp.float64) for _, _, j, _ in self._bodies])
        q0 = jnp.concatenate([q for *_, q in self._bodies])
        elements = checked_elements(self._elements)
        coordinates = [f"body {nm!r}: {c}" for nm in names for c in ("x", "y", "phi")]
        model = Model(
            body_names=names,
            masses=_checked_positive(masses, [f"body {nm!r}: mass" for nm in names]),
            inertias=_checked_positive(inertias, [f"body {nm!r}: inertia" for nm in names]),
            q0=_checked_finite(q0, coordinates),
            pairs=tuple(e for e in elements if isinstance(e, AbstractPair)),
            force_elements=tuple(e for e in elements if isinstance(e, AbstractForceElement)),
            friction=tuple(e for e in elements if isinstance(e, AbstractFriction)),
        )
        check_friction(model)
        return model


def _checked_finite(x, labels):
    """Runtime check (inside jit, where the values are traced) that every entry of x is finite;
    the error names the first bad entry by its label. Concrete values were checked at once."""
    if is_concrete(x):
        return x
    bad = ~jnp.isfinite(x)
    messages = tuple(f"{label} is not finite (traced value)" for label in labels)
    return _errors.branched_error_if(x, jnp.any(bad), jnp.argmax(bad), messages)


def _checked_positive(x, labels):
    """As `_checked_finite`, also requiring every entry to be positive (masses, inertias)."""
    if is_concrete(x):
        return x
    bad = ~(x > 0.0) | ~jnp.isfinite(x)
    messages = tuple(f"{label} must be positive and finite (traced value)" for label in labels)
    return _errors.branched_error_if(x, jnp.any(bad), jnp.argmax(bad), messages)


def checked_elements(elements):
    """`elements` with one runtime check over all their traced array leaves (their concrete
    leaves were checked when they were constructed): finite; non-negative, positive or of
    non-zero length where the element declares it (`AbstractElement.nonnegative`, `positive`,
    `nonzero`); and the checks of their drive functions (`AbstractDrive.invalid`). The error
    names the element and the field. One check for the whole model, so a traced build of
    hundreds of elements traces one error branch, not hundreds."""

    def traced(leaf):
        return eqx.is_inexact_array(leaf) and not is_concrete(leaf)

    leaves, tests = [], []  # tests: (leaf index, kind, message)
    extra_preds, extra_messages = [], []  # the drives' own checks
    for element in elements:
        what = f"{type(element).__name__} {element.name!r}"
        for path, leaf in jax.tree_util.tree_flatten_with_path(element)[0]:
            if not traced(leaf):
                continue
            field = jax.tree_util.keystr(path).lstrip(".")
            k = len(leaves)
            leaves.append(leaf)
            tests.append((k, "finite", f"{what}: {field} is not finite (traced value)"))
            for kind in ("nonnegative", "positive", "nonzero"):
                if field in getattr(element, kind):
                    tests.append(
                        (k, kind, f"{what}: {field} {VALUE_PROBLEMS[kind]} (traced value)")
                    )
        for field in dataclasses.fields(element):
            drive = getattr(element, field.name, None)
            if isinstance(drive, AbstractDrive) and any(map(traced, jax.tree.leaves(drive))):
                for bad, problem in drive.invalid():
                    extra_preds.append(jnp.reshape(bad, (1,)))
                    extra_messages.append(
                        f"{what}: {field.name} ({type(drive).__name__}): {problem} (traced value)"
                    )
    if not leaves:
        return tuple(elements)
    # leaves of one shape stacked, so the checks are a few array operations however many
    # elements the model has (not three per leaf: thousands for a grid of hundreds of hinges)
    by_shape: dict = {}
    for k, leaf in enumerate(leaves):
        by_shape.setdefault(jnp.shape(leaf), []).append(k)
    where = {}  # leaf -> (group, row)
    stacked = []
    for g, members in enumerate(by_shape.values()):
        stacked.append(jnp.stack([leaves[k] for k in members]).reshape(len(members), -1))
        where.update({k: (g, row) for row, k in enumerate(members)})
    failing = {
        "finite": lambda x: ~jnp.all(jnp.isfinite(x), axis=1),
        "nonnegative": lambda x: ~jnp.all(x >= 0.0, axis=1),
        "positive": lambda x: ~jnp.all(x > 0.0, axis=1),
        "nonzero": lambda x: ~(jnp.sum(x * x, axis=1) > 0.0),
    }
    selected: dict = {}  # (group, kind) -> [(row, message)]
    for k, kind, message in tests:
        g, row = where[k]
        selected.setdefault((g, kind), []).append((row, message))
    preds, messages = [], []
    for (g, kind), entries in selected.items():
        rows = np.asarray([row for row, _ in entries], np.int64)
        preds.append(failing[kind](stacked[g])[rows])
        messages += [message for _, message in entries]
    pred = jnp.concatenate(preds + extra_preds)
    messages += extra_messages
    checked = iter(_errors.branched_error_if(leaves, jnp.any(pred), jnp.argmax(pred), messages))
    return tuple(
        jax.tree.map(lambda leaf: next(checked) if traced(leaf) else leaf, e) for e in elements
    )
