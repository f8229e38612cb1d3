"""The body-kind contract: one place that owns the coordinate layout of a body.

A model's bodies are all of one kind. A body holds `nq` position coordinates and `nv` velocity
coordinates (the columns of C); the velocities v map to the time derivative of q by

    qdot = T(q) v                                   (the spatial note, section 2),

and a correction dv computed in velocity space (a Newton or projection step) moves q only by
the kind's retraction `retract(q, dv)`. The integrator, the solves and the analyses never do
arithmetic on q themselves: they ask the kind (through `jaxmb._bodies.layout`). The mass
matrix is diagonal and constant in velocity space (centroidal, principal body frames), and a
kind may add a velocity-dependent inertia force (the gyroscopic term of a spatial body).

Every method works on one body's coordinates along the last axis (q: (..., nq), v: (..., nv)),
so the layout functions apply them to all bodies at once by a reshape.
"""

import abc
from typing import ClassVar

from jax import Array


class AbstractBodyKind(abc.ABC):
    """A kind of rigid body: its coordinate widths, names and position arithmetic.

    Kinds are stateless, field-free frozen dataclasses: equal when of the same type, so a
    model's static structure (and its compiled programs, and the program store's keys) does not
    depend on which instance it holds."""

    dim: ClassVar[int]  # 2 (planar) or 3 (spatial)
    nq: ClassVar[int]  # position coordinates per body
    nv: ClassVar[int]  # velocity coordinates per body (columns of C)
    nodes: ClassVar[tuple[int, ...]]  # sizes of the blocks of nv in the sparse factorization
    position_names: ClassVar[tuple[str, ...]]  # the nq position coordinates, e.g. (x, y, phi)
    velocity_names: ClassVar[tuple[str, ...]]  # the nv velocity coordinates
    force_names: ClassVar[tuple[str, ...]]  # the nv generalized-force components

    @abc.abstractmethod
    def qdot(self, q, v) -> Array:
        """qdot = T(q) v of one body (q: (..., nq), v: (..., nv))."""

    @abc.abstractmethod
    def pull_back(self, q, Q) -> Array:
        """T(q)^T Q: a generalized force Q over q (..., nq) as one over v (..., nv), so that
        (T^T Q) . v = Q . qdot (the same virtual power)."""

    @abc.abstractmethod
    def retract(self, q, dv) -> Array:
        """q moved by the velocity-space step dv (..., nv): the only position update."""

    @abc.abstractmethod
    def difference(self, q1, q0) -> Array:
        """dv with retract(q0, dv) = q1: the retraction's inverse (..., nv)."""

    @abc.abstractmethod
    def normalize(self, q) -> Array:
        """q with its redundant parts (a quaternion's scale) put back on their manifold."""

    @abc.abstractmethod
    def mass_diagonal(self, mass, inertia) -> Array:
        """The nv diagonal entries of M for one body (mass: (...), inertia: (..., k))."""

    @abc.abstractmethod
    def inertia_force(self, inertias, v) -> Array | None:
        """The velocity-dependent inertia force in F over every body's velocity coordinates
        (inertias: (bodies, ...), v: (bodies nv,)), or None where there is none."""

    # ----- whole vectors: every body of a model at once (q: (..., bodies nq)) ----------------
    def _bodies(self, x, width):
        return x.reshape(x.shape[:-1] + (-1, width))

    def stacked_qdot(self, q, v) -> Array:
        """qdot = T(q) v of every body."""
        return self.qdot(self._bodies(q, self.nq), self._bodies(v, self.nv)).reshape(q.shape)

    def stacked_pull_back(self, q, Q) -> Array:
        """T(q)^T Q of every body."""
        out = self.pull_back(self._bodies(q, self.nq), self._bodies(Q, self.nq))
        return out.reshape(Q.shape[:-1] + (-1,))

    def stacked_retract(self, q, dv) -> Array:
        """Every body of q moved by its part of dv."""
        return self.retract(self._bodies(q, self.nq), self._bodies(dv, self.nv)).reshape(q.shape)

    def stacked_difference(self, q1, q0) -> Array:
        """dv with retract(q0, dv) = q1 for every body."""
        out = self.difference(self._bodies(q1, self.nq), self._bodies(q0, self.nq))
        return out.reshape(q1.shape[:-1] + (-1,))

    def stacked_normalize(self, q) -> Array:
        """Every body of q normalized."""
        return self.normalize(self._bodies(q, self.nq)).reshape(q.shape)

    def position_indices(self, index: int) -> tuple[int, ...]:
        """Indices in q of the body with handle index `index` (empty for the ground, -1)."""
        return () if index < 0 else tuple(range(self.nq * index, self.nq * (index + 1)))

    def velocity_indices(self, index: int) -> tuple[int, ...]:
        """Indices in v (columns of C) of the body with handle index `index`."""
        return () if index < 0 else tuple(range(self.nv * index, self.nv * (index + 1)))

    @property
    def inertia_shape(self) -> tuple[int, ...]:
        """Shape of one body's inertia: () planar, (3,) spatial (the principal moments)."""
        return () if self.dim == 2 else (3,)
