"""The `Mechanism` builder: bodies, pairs, drivers and forces, then `build()` -> `Model`."""

import itertools

import jax.numpy as jnp
import numpy as np

from ._geometry import GROUND_INDEX, Body, is_concrete
from ._model import Model
from .elements import AbstractElement, AbstractForceElement, AbstractPair

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

    def __init__(self):
        self._token = next(_tokens)
        self.ground = Body("ground", GROUND_INDEX, self._token)
        self._bodies: list[tuple[Body, object, object, tuple]] = []
        self._elements: list[AbstractElement] = []

    def body(self, name: str, mass, inertia, q=(0.0, 0.0, 0.0)) -> Body:
        """Add a rigid body with centroidal frame at q = (x, y, phi); returns its handle."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"body name must be a non-empty string, got {name!r}")
        if name == "ground" or any(b.name == name for b, *_ in self._bodies):
            raise ValueError(f"body name {name!r} is already used")
        for label, value in (("mass", mass), ("inertia", inertia)):
            if jnp.shape(value) != ():
                raise ValueError(f"body {name!r}: {label} must be a scalar")
            if is_concrete(value):
                v = float(np.asarray(value))
                if not np.isfinite(v) or v <= 0.0:
                    raise ValueError(f"body {name!r}: {label} = {v} must be positive and finite")
        q = jnp.asarray(q, dtype=jnp.float64)
        if q.shape != (3,):
            raise ValueError(f"body {name!r}: q must be (x, y, phi), got shape {q.shape}")
        if is_concrete(q) and not np.all(np.isfinite(np.asarray(q))):
            raise ValueError(f"body {name!r}: q = {np.asarray(q).tolist()} is not finite")
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
            if body.owner != self._token:
                element.fail(f"body {body.name!r} belongs to another Mechanism")
        self._elements.append(element)
        return element

    @property
    def bodies(self) -> tuple[Body, ...]:
        return tuple(b for b, *_ in self._bodies)

    def build(self) -> Model:
        """Freeze into a `Model` (an equinox Module whose numbers are array leaves)."""
        if not self._bodies:
            raise ValueError("the mechanism has no bodies")
        masses = jnp.stack([jnp.asarray(m, jnp.float64) for _, m, _, _ in self._bodies])
        inertias = jnp.stack([jnp.asarray(j, jnp.float64) for _, _, j, _ in self._bodies])
        q0 = jnp.concatenate([q for *_, q in self._bodies])
        return Model(
            body_names=tuple(b.name for b, *_ in self._bodies),
            masses=masses,
            inertias=inertias,
            q0=q0,
            pairs=tuple(e for e in self._elements if isinstance(e, AbstractPair)),
            force_elements=tuple(e for e in self._elements if isinstance(e, AbstractForceElement)),
        )
