"""The built mechanism: an equinox Module with the constraint rows derived by autodiff.

C, b and gamma come from one rule for every pair (seed 001, eq. 4-9): with the velocity-level
residual g(q, qd, t) = C(q, t) qd + b(q, t) of each pair,

    C = dg/dqd,   b = g(q, 0, t),   gamma = -(dg/dq qd + dg/dt)   (so that C qdd = gamma).

Each pair is differentiated with respect to the coordinates of its own bodies only, so the cost
of C grows linearly with the number of pairs.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .elements import AbstractForceElement, AbstractPair


def _pair_coordinates(pair: AbstractPair) -> np.ndarray:
    coords = sorted({c for body in pair.bodies() for c in body.coordinates()})
    return np.asarray(coords, dtype=np.int64)


class Model(eqx.Module):
    """A planar multibody model in absolute coordinates q = (x_k, y_k, phi_k) per body.

    Rows of C are ordered pair by pair, in the order the pairs were added (seed 001 stacks
    C = [Phi_q; Psi], which is this order when holonomic pairs come first).
    """

    body_names: tuple[str, ...] = eqx.field(static=True)
    masses: jnp.ndarray
    inertias: jnp.ndarray
    q0: jnp.ndarray
    pairs: tuple[AbstractPair, ...]
    force_elements: tuple[AbstractForceElement, ...]

    # ----- static layout --------------------------------------------------------------------
    @property
    def num_bodies(self) -> int:
        return len(self.body_names)

    @property
    def n(self) -> int:
        """Number of coordinates, 3 per body."""
        return 3 * len(self.body_names)

    @property
    def pair_names(self) -> tuple[str, ...]:
        """Names of the constraint pairs (drivers and knife edges included), in row order."""
        return tuple(p.name for p in self.pairs)

    @property
    def num_rows(self) -> int:
        """m + h, the number of rows of C."""
        return sum(p.num_rows for p in self.pairs)

    @property
    def m(self) -> int:
        """Number of holonomic constraint equations."""
        return sum(p.num_rows for p in self.pairs if p.holonomic)

    @property
    def h(self) -> int:
        """Number of Pfaffian (nonholonomic) constraint equations."""
        return sum(p.num_rows for p in self.pairs if not p.holonomic)

    def rows(self, name: str) -> slice:
        """Rows of C (0-based) belonging to pair `name`."""
        start = 0
        for p in self.pairs:
            if p.name == name:
                return slice(start, start + p.num_rows)
            start += p.num_rows
        raise KeyError(f"no pair named {name!r}; pairs are {list(self.pair_names)}")

    def pair(self, name: str) -> AbstractPair:
        """The pair called `name`."""
        for p in self.pairs:
            if p.name == name:
                return p
        raise KeyError(f"no pair named {name!r}; pairs are {list(self.pair_names)}")

    @property
    def holonomic_rows(self) -> np.ndarray:
        """Boolean mask over the rows of C: True for holonomic rows."""
        return np.concatenate(
            [np.full(p.num_rows, p.holonomic) for p in self.pairs] or [np.zeros(0, bool)]
        )

    @property
    def row_pair_index(self) -> np.ndarray:
        """For each row of C, the index of its pair in `pairs`."""
        return np.concatenate(
            [np.full(p.num_rows, k) for k, p in enumerate(self.pairs)] or [np.zeros(0, int)]
        ).astype(np.int64)

    # ----- constraints ----------------------------------------------------------------------
    def phi(self, q, t=0.0):
        """Holonomic residuals Phi(q, t) (m rows, in pair order)."""
        t = jnp.asarray(t, dtype=q.dtype)
        parts = [p.residual(q, t) for p in self.pairs if p.holonomic]
        return jnp.concatenate(parts) if parts else jnp.zeros(0, q.dtype)

    def velocity_residual(self, q, qd, t=0.0):
        """g(q, qd, t) = C qd + b for all rows (seed 001, eq. 4)."""
        t = jnp.asarray(t, dtype=q.dtype)
        parts = [p.velocity_residual(q, qd, t) for p in self.pairs]
        return jnp.concatenate(parts) if parts else jnp.zeros(0, q.dtype)

    def C(self, q, t=0.0):
        """Constraint matrix C(q, t) = dg/dqd, shape (m + h, n) (seed 001, eq. 5)."""
        t = jnp.asarray(t, dtype=q.dtype)
        out = jnp.zeros((self.num_rows, self.n), q.dtype)
        start = 0
        for p in self.pairs:
            idx = _pair_coordinates(p)
            zeros = jnp.zeros_like(q)

            def g_local(v, p=p, idx=idx, zeros=zeros):
                return p.velocity_residual(q, zeros.at[idx].set(v), t)

            block = jax.jacfwd(g_local)(jnp.zeros(len(idx), q.dtype))
            rows = np.arange(start, start + p.num_rows)
            out = out.at[np.ix_(rows, idx)].set(block)
            start += p.num_rows
        return out

    def b(self, q, t=0.0):
        """Velocity term b(q, t) = g(q, 0, t); -Phi_t for holonomic rows is b's negative."""
        return self.velocity_residual(q, jnp.zeros_like(q), t)

    def gamma(self, q, qd, t=0.0):
        """Acceleration right-hand side: C qdd = gamma = -(dg/dq qd + dg/dt) (seed 001, eq. 8-9)."""
        t = jnp.asarray(t, dtype=q.dtype)
        _, dg = jax.jvp(
            lambda q_, t_: self.velocity_residual(q_, qd, t_), (q, t), (qd, jnp.ones_like(t))
        )
        return -dg

    # ----- dynamics terms -------------------------------------------------------------------
    def mass_matrix(self):
        """M = diag(m_1, m_1, J_1, ..., m_N, m_N, J_N) (centroidal frames, seed 003)."""
        diag = jnp.stack([self.masses, self.masses, self.inertias], axis=1).reshape(-1)
        return jnp.diag(diag)

    def mass_diagonal(self):
        """Diagonal of M."""
        return jnp.stack([self.masses, self.masses, self.inertias], axis=1).reshape(-1)

    def forces(self, q, qd, t=0.0):
        """Applied generalized forces F(q, qd, t) (no velocity-dependent inertia terms arise in
        planar absolute coordinates with centroidal frames)."""
        t = jnp.asarray(t, dtype=q.dtype)
        F = jnp.zeros(self.n, q.dtype)
        for f in self.force_elements:
            F = F + f.generalized_force(self, q, qd, t)
        return F

    def pose(self, q, body_name: str):
        """(x, y, phi) of the named body."""
        k = self.body_names.index(body_name)
        return q[3 * k : 3 * k + 3]
