"""The `Mechanism` builder: bodies, pairs, drivers and forces, then `build()` -> `Model`."""

import dataclasses
import itertools
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Real

from .._bodies import KINDS, quaternion
from .._custom_types import ScalarLike
from .._runtime import errors as _errors
from .._runtime.exceptions import JaxmbError
from ..elements import AbstractElement, AbstractForceElement, AbstractPair
from ..elements._base import VALUE_PROBLEMS
from ..elements.drive import AbstractDrive
from ..elements.friction import AbstractFriction, check_friction
from ..elements.geometry import GROUND_INDEX, Body, is_concrete, is_real
from ..elements.spatial import bind_reference
from .model import Model
from .pair_stacks import PairStack, stacked_pairs
from .spatial_bodies import check_spatial_bodies, spatial_q

_tokens = itertools.count(1)


class Mechanism:
    """Builder of a planar (`dim=2`, the default) or spatial (`dim=3`) mechanism.

    ```python
    m = Mechanism()
    crank = m.body("crank", mass=1.0, inertia=0.01, q=(0.1, 0.0, 0.0))
    m.add(Revolute("O", m.ground, crank, s_i=(0.0, 0.0), s_j=(-0.1, 0.0)))
    model = m.build()
    ```
    Building is traceable: masses, inertias, q and element parameters may be JAX tracers. Every
    body and element of one mechanism is of its dimension.
    """

    def __init__(self, dim: int = 2) -> None:
        if isinstance(dim, bool) or dim not in KINDS:
            raise ValueError(f"Mechanism: dim must be 2 (planar) or 3 (spatial), got {dim!r}")
        self.kind = KINDS[dim]
        self._token = next(_tokens)
        self.ground = Body("ground", GROUND_INDEX, self._token, self.kind)
        # chunks of bodies: (handles, masses (k,), inertias (k,), q (k, 3))
        self._bodies: list[tuple[tuple[Body, ...], Array, Array, Array]] = []
        self._handles: set[Body] = set()
        self._body_names: set[str] = set()
        self._elements: list[AbstractElement | PairStack] = []
        self._names: set[str] = set()
        self._count = 0  # bodies added so far (the next body's index)

    @property
    def dim(self) -> int:
        """2 (planar) or 3 (spatial)."""
        return self.kind.dim

    def body(
        self,
        name: str,
        mass: ScalarLike,
        inertia: ScalarLike | Sequence[ScalarLike],
        q: Real[ArrayLike, " nq"] | Sequence[ScalarLike] | None = None,
        *,
        r: Real[ArrayLike, "3"] | Sequence[ScalarLike] | None = None,
        rotation: Real[ArrayLike, "..."] | None = None,
    ) -> Body:
        """Add a rigid body; returns its handle.

        Planar: `body(name, mass, inertia, q=(x, y, phi))`, the centroidal frame at q.
        Spatial: `body(name, mass, inertia=(J1, J2, J3), r=(x, y, z), rotation=R)`: the body
        frame is centroidal and principal (J1, J2, J3 its principal moments), at r, rotated by
        R (a unit quaternion (w, x, y, z) or a 3 x 3 rotation matrix, body frame -> global;
        default the identity); or `q=(x, y, z, w, qx, qy, qz)` in one vector."""
        where = f"body {name!r}"
        if self.dim == 2:
            if r is not None or rotation is not None:
                raise JaxmbError.about(
                    where,
                    "r and rotation are for spatial bodies (Mechanism(dim=3)); "
                    "a planar body takes q=(x, y, phi)",
                )
            q = (0.0, 0.0, 0.0) if q is None else q
        else:
            q = spatial_q(where, q, r, rotation)
        values = {"mass": mass, "inertia": inertia, "q": q}
        shapes = {"mass": (), "inertia": self.kind.inertia_shape, "q": (self.kind.nq,)}
        wants = {"mass": "a scalar", "inertia": "a scalar", "q": "(x, y, phi)"}
        if self.dim == 3:
            wants.update(inertia="(J1, J2, J3), the principal moments", q="7 numbers")
        for label, shape in shapes.items():
            if is_real(values[label]):
                values[label] = jnp.asarray(values[label], jnp.float64)
                if values[label].shape != shape:
                    raise JaxmbError.about(
                        where,
                        f"{label} must be {wants[label]}, got shape {values[label].shape}",
                    )
                values[label] = values[label][None]
        return self.add_bodies((name,), values["mass"], values["inertia"], values["q"])[0]

    def add_bodies(
        self,
        names: Sequence[str],
        masses: Real[ArrayLike, " k"],
        inertias: Real[ArrayLike, " k"],
        q: Real[ArrayLike, "k 3"],
    ) -> tuple[Body, ...]:
        """Add k rigid bodies at once from arrays (masses and inertias (k,), q (k, 3)); returns
        their handles. The same bodies as k calls of `body`, but the arrays are kept whole, so
        a traced build of many bodies stays a few operations."""
        names = tuple(names)
        for name in names:
            if not isinstance(name, str) or not name:
                raise ValueError(f"body name must be a non-empty string, got {name!r}")
            if name == "ground" or name in self._body_names:
                raise ValueError(f"body name {name!r} is already used")
        if len(set(names)) != len(names):
            raise ValueError(f"body names must be unique, got {list(names)}")
        first = names[0] if names else ""
        for label, value in (("mass", masses), ("inertia", inertias), ("q", q)):
            if not is_real(value):
                raise JaxmbError.about(
                    f"body {first!r}",
                    f"{label} must be a real number (or numbers), got "
                    f"{value!r} of type {type(value).__name__}",
                )
        k = len(names)
        masses, inertias, q = (jnp.asarray(x, jnp.float64) for x in (masses, inertias, q))
        for label, value, shape in (
            ("mass", masses, (k,)),
            ("inertia", inertias, (k,) + self.kind.inertia_shape),
        ):
            if value.shape != shape:
                raise ValueError(f"bodies: {label}es must have shape {shape}, got {value.shape}")
            if is_concrete(value):
                v = np.asarray(value).reshape(k, -1)
                bad = ~np.all(np.isfinite(v) & (v > 0.0), axis=1)
                if bad.any():
                    m = int(np.argmax(bad))
                    shown = v[m].tolist() if v.shape[1] > 1 else v[m, 0]
                    raise JaxmbError.about(
                        f"body {names[m]!r}", f"{label} = {shown} must be positive and finite"
                    )
        nq, shown = self.kind.nq, ", ".join(self.kind.position_names)
        if q.shape != (k, nq):
            raise ValueError(f"bodies: q must have shape ({k}, {nq}) ({shown}), got {q.shape}")
        if is_concrete(q) and not np.all(np.isfinite(np.asarray(q))):
            m = int(np.argmax(~np.all(np.isfinite(np.asarray(q)), axis=1)))
            raise JaxmbError.about(
                f"body {names[m]!r}", f"q = {np.asarray(q)[m].tolist()} is not finite"
            )
        if self.dim == 3:
            check_spatial_bodies(names, inertias, q)
        handles = tuple(
            Body(name, self._count + m, self._token, self.kind) for m, name in enumerate(names)
        )
        self._count += k
        self._bodies.append((handles, masses, inertias, q))
        self._handles.update(handles)
        self._body_names.update(names)
        return handles

    def _check_handle(self, body, fail) -> None:
        if not isinstance(body, Body):
            fail(
                f"{body!r} is not a body handle; use the handle returned by "
                "Mechanism.body (or Mechanism.ground)"
            )
        if body.owner != self._token:
            fail(f"body {body.name!r} belongs to another Mechanism")
        if not body.is_ground and body not in self._handles:
            fail(
                f"body {body.name!r} is unknown to this Mechanism; its bodies are "
                f"{[b.name for b in self.bodies]}"
            )

    def add(self, element: AbstractElement) -> AbstractElement:
        """Add a constraint pair, driver or force element; names must be unique."""
        if not isinstance(element, AbstractElement):
            raise TypeError(f"can only add jaxmb elements, got {type(element).__name__}")
        if element.name in self._names:
            raise ValueError(f"an element named {element.name!r} was already added")
        if element.dimension() != self.dim:
            kinds = {2: "planar", 3: "spatial"}
            element.fail(
                f"is a {kinds.get(element.dimension(), element.dimension())} element and this is a "
                f"{kinds[self.dim]} mechanism (Mechanism(dim={self.dim})); planar and spatial "
                "bodies and elements are never mixed"
                + ("; spatial joints are in jaxmb.spatial" if self.dim == 3 else "")
            )
        for body in element.bodies():
            self._check_handle(body, element.fail)
        if hasattr(element, "bind_reference"):  # it keeps a build-time relative orientation
            element = bind_reference(element, *(self._rotation(b) for b in _pair_of(element)))
        self._elements.append(element)
        self._names.add(element.name)
        return element

    def _rotation(self, body: Body | None) -> Array:
        """The build-time rotation matrix of `body` (the identity for the ground)."""
        if body is None or body.is_ground:
            return jnp.eye(3)
        for handles, _, _, q in self._bodies:
            if body in handles:
                return quaternion.matrix(q[handles.index(body), 3:])
        raise AssertionError(body)  # checked by _check_handle

    def add_stacked(
        self, kind: type[AbstractPair], names: Sequence[str], **fields: object
    ) -> tuple[str, ...]:
        """Add k pairs of one type at once: every body field a sequence of k handles, every
        other field an array with a leading axis of length k (pair m takes entry m). The model
        is the one k calls of `add(kind(names[m], ...))` build (same rows, in this order), but
        it keeps the arrays whole (one `PairStack` in `Model.pair_store`): a traced build of
        hundreds of joints does not slice them apart and stack them again.

        ```python
        m.add_stacked(Revolute, ["A", "B"], i=[p, q], j=[q, r], s_i=s_i, s_j=s_j)  # (2, 2) each
        ```
        Returns the names."""
        return self._add_stack(stacked_pairs(kind, tuple(names), fields, self._check_handle))

    def _add_stack(self, stack: PairStack) -> tuple[str, ...]:
        taken = [name for name in stack.names if name in self._names]
        if taken or len(set(stack.names)) != len(stack.names):
            raise ValueError(f"element names must be unique; already used: {taken}")
        self._elements.append(stack)
        self._names.update(stack.names)
        return stack.names

    @property
    def bodies(self) -> tuple[Body, ...]:
        return tuple(b for chunk in self._bodies for b in chunk[0])

    def build(self) -> Model:
        """Freeze into a `Model` (an equinox Module whose numbers are array leaves)."""
        if not self._bodies:
            raise ValueError("the mechanism has no bodies")
        names = tuple(b.name for b in self.bodies)
        masses, inertias, q0 = (_joined([chunk[k] for chunk in self._bodies]) for k in (1, 2, 3))
        q0 = q0.reshape(-1)
        elements = checked_elements(self._elements)
        coordinates = [f"body {nm!r}: {c}" for nm in names for c in self.kind.position_names]
        inertia_labels = [f"body {nm!r}: inertia" for nm in names]
        if self.dim == 3:
            inertia_labels = [f"{x} J{c}" for x in inertia_labels for c in (1, 2, 3)]
        model = Model(
            body_names=names,
            masses=_checked_positive(masses, [f"body {nm!r}: mass" for nm in names]),
            inertias=_checked_positive(inertias, inertia_labels),
            q0=_checked_finite(q0, coordinates),
            pair_store=tuple(e for e in elements if isinstance(e, (AbstractPair, PairStack))),
            force_elements=tuple(e for e in elements if isinstance(e, AbstractForceElement)),
            friction=tuple(e for e in elements if isinstance(e, AbstractFriction)),
            kind=self.kind,
        )
        check_friction(model)
        return model


def _pair_of(element) -> tuple[Body | None, Body | None]:
    """(i, j) of an element with two bodies, else (None, None)."""
    return getattr(element, "i", None), getattr(element, "j", None)


def _joined(chunks):
    """The chunks' arrays end to end. Concrete ones are joined by NumPy: one jnp.concatenate
    of thousands of operands (a model file adds its bodies one at a time) compiles a program
    whose time grows faster than the count (2,000 bodies: 5 s)."""
    if all(is_concrete(c) for c in chunks):
        return jnp.asarray(np.concatenate([np.asarray(c) for c in chunks]))
    return jnp.concatenate(chunks)


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


_FAILING = {  # per row of a (rows, size) array: whether the row fails the check
    "finite": lambda x: ~jnp.all(jnp.isfinite(x), axis=1),
    "nonnegative": lambda x: ~jnp.all(x >= 0.0, axis=1),
    "positive": lambda x: ~jnp.all(x > 0.0, axis=1),
    "nonzero": lambda x: ~(jnp.sum(x * x, axis=1) > 0.0),
}


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
    extra_preds, extra_messages = [], []  # the drives' own checks, and those of the stacks
    stacked_leaves = set()  # indices of leaves of a PairStack: checked row by row
    for element in elements:
        if isinstance(element, PairStack):
            kinds = type(element.template)
            what = [f"{kinds.__name__} {name!r}" for name in element.names]
            for path, leaf in jax.tree_util.tree_flatten_with_path(element.template)[0]:
                if not traced(leaf):
                    continue
                field = jax.tree_util.keystr(path).lstrip(".")
                stacked_leaves.add(len(leaves))
                leaves.append(leaf)
                rows = leaf.reshape(len(element), -1)
                extra_preds.append(_FAILING["finite"](rows))
                extra_messages += [f"{w}: {field} is not finite (traced value)" for w in what]
                for kind in ("nonnegative", "positive", "nonzero"):
                    if field in getattr(kinds, kind):
                        extra_preds.append(_FAILING[kind](rows))
                        extra_messages += [
                            f"{w}: {field} {VALUE_PROBLEMS[kind]} (traced value)" for w in what
                        ]
            continue
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
        if k in stacked_leaves:
            continue
        by_shape.setdefault(jnp.shape(leaf), []).append(k)
    where = {}  # leaf -> (group, row)
    stacked = []
    for g, members in enumerate(by_shape.values()):
        stacked.append(jnp.stack([leaves[k] for k in members]).reshape(len(members), -1))
        where.update({k: (g, row) for row, k in enumerate(members)})
    selected: dict = {}  # (group, kind) -> [(row, message)]
    for k, kind, message in tests:
        g, row = where[k]
        selected.setdefault((g, kind), []).append((row, message))
    preds, messages = [], []
    for (g, kind), entries in selected.items():
        rows = np.asarray([row for row, _ in entries], np.int64)
        preds.append(_FAILING[kind](stacked[g])[rows])
        messages += [message for _, message in entries]
    pred = jnp.concatenate(preds + extra_preds)
    messages += extra_messages
    checked = iter(_errors.branched_error_if(leaves, jnp.any(pred), jnp.argmax(pred), messages))
    return tuple(
        jax.tree.map(lambda leaf: next(checked) if traced(leaf) else leaf, e) for e in elements
    )
