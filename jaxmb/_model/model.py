"""The built mechanism: an equinox Module with the constraint rows derived by autodiff.

C, b and gamma come from one rule for every pair (seed 001, eq. 4-9): with the velocity-level
residual g(q, qd, t) = C(q, t) qd + b(q, t) of each pair,

    C = dg/dqd,   b = g(q, 0, t),   gamma = -(dg/dq qd + dg/dt)   (so that C qdd = gamma).

Each pair is differentiated with respect to the coordinates of its own bodies only, and pairs of
one type are evaluated together by one vmapped kernel (`jaxmb._model.groups`), so the traced program
does not grow with the number of pairs of a type.
"""

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from .._bodies import PLANAR, AbstractBodyKind, quaternion
from .._custom_types import ConstraintMatrix, Coordinates, CoordinatesLike, RowVector, ScalarLike
from .._runtime import errors as _errors
from ..elements import AbstractForceElement, AbstractFriction, AbstractPair
from .blocks import constraint_blocks, velocity_residual
from .groups import evaluate, group_pairs, scatter_rows
from .input_checks import as_states
from .pair_stacks import PairInfo, PairStack, expand, group_store, store_info
from .rows import RowTable, row_table


class KinematicTerms(NamedTuple):
    """Constraint terms at one state: `C` (m + h, n), `g` = C qd + b, `gamma` (C qdd = gamma)
    and `phi` (m + h,): Phi(q, t) in the holonomic rows, 0 in the Pfaffian ones."""

    C: ConstraintMatrix
    g: RowVector
    gamma: RowVector
    phi: RowVector


@eqx.filter_jit  # traced once per model structure: the integrator calls it from several places
def _kinematic_terms(model, q, qd, t):
    pairs, groups = model._groups()
    terms = constraint_blocks(pairs, groups, model.num_rows, model.kind, q, qd, t)
    C = _place_blocks(groups, list(terms.blocks), model.num_rows, model.n, q.dtype, model.kind)
    return KinematicTerms(C, terms.g, terms.gamma, terms.phi)


def _place_blocks(groups, blocks, num_rows, n, dtype, kind):
    """C (num_rows, n) from the per-pair blocks (group by group, (k, r, w b) each: b bodies of
    w = `kind.nv` velocity coordinates); zeros without pairs.

    C is built as (rows, bodies, w): for each body slot s of a pair, the slot's (rows, w)
    values are put where the row's body-s index equals the body (static masks: one elementwise
    select per slot). Under vmap this is one vectorized loop, about half the cost of a gather
    with static indices and less than a scatter into zeros (design measurement D4)."""
    w = kind.nv
    bodies = n // w
    if not groups:
        return jnp.zeros((num_rows, n), dtype)
    slots = max(b.shape[-1] // w for b in blocks)
    in_row_order = np.argsort(np.concatenate([g.rows.reshape(-1) for g in groups]))
    C = jnp.zeros((num_rows, bodies, w), dtype)
    for s in range(slots):
        values, body = [], []
        for g, b in zip(groups, blocks):
            k, r = g.rows.shape
            if b.shape[-1] > w * s:
                values.append(b[:, :, w * s : w * s + w].reshape(k * r, w))
                body.append(np.repeat(g.bodies[:, s], r))
            else:  # a pair of this group has fewer bodies
                values.append(jnp.zeros((k * r, w), b.dtype))
                body.append(np.full(k * r, -1))
        values = jnp.concatenate(values)[in_row_order]
        hit = np.concatenate(body)[in_row_order][:, None] == np.arange(bodies)[None, :]
        C = C + jnp.where(hit[:, :, None], values[:, None, :], 0.0)
    return C.reshape(num_rows, n)


def _kind(entry):
    return entry.template if isinstance(entry, PairStack) else entry


class Model(eqx.Module):
    """A multibody model in absolute coordinates: per body, the positions of its kind (planar:
    q = (x_k, y_k, phi_k)) and its velocity coordinates (planar: their derivatives), which are
    the columns of C (the body kind of the model's `kind`).

    Rows of C are ordered pair by pair, in the order the pairs were added (seed 001 stacks
    C = [Phi_q; Psi], which is this order when holonomic pairs come first). The pairs are
    stored in that order in `pair_store`, those added by `Mechanism.add_stacked` as one
    `PairStack` each (their parameters kept as whole arrays); `pairs` lists one element per
    pair.

    Shapes in the annotations: `n` velocity coordinates (3 per planar body), `nq` position
    coordinates, `rows` = m + h rows of C, `m` holonomic rows, `bodies`; they are those of one
    model (a model built under `jax.vmap` carries a leading batch axis on its array fields).
    """

    body_names: tuple[str, ...] = eqx.field(static=True)
    masses: Float[Array, " bodies"]
    inertias: Float[Array, " bodies *inertia"]
    q0: Coordinates
    pair_store: tuple[AbstractPair | PairStack, ...]  # the pairs in row order, some stacked
    force_elements: tuple[AbstractForceElement, ...]
    friction: tuple[AbstractFriction, ...] = ()  # friction elements, in the order added
    kind: AbstractBodyKind = eqx.field(static=True, default=PLANAR)  # every body's kind

    # ----- static layout --------------------------------------------------------------------
    @property
    def num_bodies(self) -> int:
        return len(self.body_names)

    @property
    def n(self) -> int:
        """Number of velocity coordinates (the columns of C): 3 per planar body."""
        return self.kind.nv * len(self.body_names)

    @property
    def nq(self) -> int:
        """Number of position coordinates (the length of q): 3 per planar body."""
        return self.kind.nq * len(self.body_names)

    @property
    def dim(self) -> int:
        """2 for a planar model, 3 for a spatial one."""
        return self.kind.dim

    # ----- position arithmetic (the body kind's, `jaxmb._bodies`) ---------------------------
    def qdot(self, q: Coordinates, v: Coordinates) -> Coordinates:
        """qdot = T(q) v: the time derivative of q at the velocities v."""
        return self.kind.stacked_qdot(q, v)

    def retract(self, q: Coordinates, dv: Coordinates) -> Coordinates:
        """q moved by the velocity-space correction dv: the only update of positions that the
        formulations and analyses make (planar: q + dv)."""
        return self.kind.stacked_retract(q, dv)

    def difference(self, q1: Coordinates, q0: Coordinates) -> Coordinates:
        """dv with retract(q0, dv) = q1 (planar: q1 - q0)."""
        return self.kind.stacked_difference(q1, q0)

    def normalize(self, q: Coordinates) -> Coordinates:
        """q with every body's coordinates on their manifold (planar: q itself)."""
        return self.kind.stacked_normalize(q)

    @property
    def pairs(self) -> tuple[AbstractPair, ...]:
        """The constraint pairs (drivers and knife edges included), in row order, one element
        each (a `PairStack` of the store gives one per member)."""
        return expand(self.pair_store)

    @property
    def pair_info(self) -> tuple[PairInfo, ...]:
        """Name, element type, rows, holonomy and bodies of every pair, in row order (static:
        no numbers are read)."""
        return store_info(self.pair_store)

    @property
    def pair_names(self) -> tuple[str, ...]:
        """Names of the constraint pairs (drivers and knife edges included), in row order."""
        return tuple(p.name for p in self.pair_info)

    @property
    def num_rows(self) -> int:
        """m + h, the number of rows of C."""
        return self.row_table.size

    @property
    def m(self) -> int:
        """Number of holonomic constraint equations."""
        return int(np.sum(self.row_table.holonomic))

    @property
    def h(self) -> int:
        """Number of Pfaffian (nonholonomic) constraint equations."""
        return self.num_rows - self.m

    @property
    def row_table(self) -> RowTable:
        """Which rows of C belong to which pair: `slices` (one slice of rows per pair, in pair
        order), `owner` (rows,), the index of the pair of each row, and `holonomic` (rows,), True
        for the rows of holonomic pairs."""
        return row_table(self.pair_info)

    def rows(self, name: str) -> slice:
        """Rows of C (0-based) belonging to pair `name`."""
        if name not in self.pair_names:
            raise KeyError(f"no pair named {name!r}; pairs are {list(self.pair_names)}")
        return self.row_table.slices[self.pair_names.index(name)]

    def pair(self, name: str) -> AbstractPair:
        """The pair called `name`."""
        for entry in self.pair_store:
            names = entry.names if isinstance(entry, PairStack) else (entry.name,)
            if name in names:
                return entry.member(names.index(name)) if isinstance(entry, PairStack) else entry
        raise KeyError(f"no pair named {name!r}; pairs are {list(self.pair_names)}")

    @property
    def holonomic_rows(self) -> Bool[np.ndarray, " rows"]:
        """Boolean mask over the rows of C: True for holonomic rows."""
        return self.row_table.holonomic

    @property
    def row_pair_index(self) -> Int[np.ndarray, " rows"]:
        """For each row of C, the index of its pair in `pairs`."""
        return self.row_table.owner

    # ----- constraints ----------------------------------------------------------------------
    def _groups(self, holonomic_only=False):
        store = tuple(e for e in self.pair_store if not holonomic_only or _kind(e).holonomic)
        return group_store(store)

    def phi(self, q: CoordinatesLike, t: ScalarLike = 0.0) -> Float[Array, " m"]:
        """Holonomic residuals Phi(q, t) (m rows, in pair order)."""
        with _errors.reporting("Model.phi"):
            (q,) = as_states(self, q=q)
        t = jnp.asarray(t, dtype=q.dtype)
        pairs, groups = self._groups(holonomic_only=True)
        values = evaluate(pairs, groups, lambda p, ql: p.residual(ql, t), q)
        return scatter_rows(groups, values, self.m, q.dtype)

    def velocity_residual(
        self, q: CoordinatesLike, qd: CoordinatesLike, t: ScalarLike = 0.0
    ) -> RowVector:
        """g(q, qd, t) = C qd + b for all rows (seed 001, eq. 4)."""
        with _errors.reporting("Model.velocity_residual"):
            q, qd = as_states(self, q=q, qd=qd)
        t = jnp.asarray(t, dtype=q.dtype)
        pairs, groups = self._groups()
        kind = self.kind
        values = evaluate(
            pairs, groups, lambda p, ql, vl: velocity_residual(p, kind)(ql, vl, t), q, qd
        )
        return scatter_rows(groups, values, self.num_rows, q.dtype)

    def C(self, q: CoordinatesLike, t: ScalarLike = 0.0) -> ConstraintMatrix:
        """Constraint matrix C(q, t) = dg/dqd, shape (m + h, n) (seed 001, eq. 5).

        Each pair is differentiated with respect to its own bodies' velocity coordinates only (a
        block of num_rows x nv bodies), pairs of one type together (one vmapped evaluation per
        type)."""
        with _errors.reporting("Model.C"):
            (q,) = as_states(self, q=q)
        t = jnp.asarray(t, dtype=q.dtype)
        pairs, groups = self._groups()
        kind = self.kind

        def block(p, ql):
            zero = jnp.zeros(ql.shape[0] // kind.nq * kind.nv, ql.dtype)
            return jax.jacfwd(lambda v: velocity_residual(p, kind)(ql, v, t))(zero)

        blocks = evaluate(pairs, groups, block, q)
        return _place_blocks(groups, blocks, self.num_rows, self.n, q.dtype, kind)

    def holonomic_C(self, q: CoordinatesLike, t: ScalarLike = 0.0) -> Float[Array, "m n"]:
        """Phi_q(q, t): the holonomic rows of C (m x n), the Jacobian of `phi`."""
        return self.C(q, t)[self.holonomic_rows]

    def kinematic_terms(
        self, q: CoordinatesLike, qd: CoordinatesLike, t: ScalarLike = 0.0
    ) -> KinematicTerms:
        """C, g = C qd + b, gamma and Phi (in the holonomic rows, 0 elsewhere) in one pass.

        Per pair, one batch of forward-mode tangents of g(q, qd, t) gives the columns of C
        (tangents e_k along qd) and -gamma (tangent (qd, 0, 1) along (q, qd, t)), seed 001
        eq. 5-9; this is what the integrator needs at every step."""
        with _errors.reporting("Model.kinematic_terms"):
            q, qd = as_states(self, q=q, qd=qd)
        return _kinematic_terms(self, q, qd, jnp.asarray(t, dtype=q.dtype))

    def b(self, q: CoordinatesLike, t: ScalarLike = 0.0) -> RowVector:
        """Velocity term b(q, t) = g(q, 0, t); -Phi_t for holonomic rows is b's negative."""
        with _errors.reporting("Model.b"):
            (q,) = as_states(self, q=q)
        return self.velocity_residual(q, jnp.zeros(self.n, q.dtype), t)

    def gamma(self, q: CoordinatesLike, qd: CoordinatesLike, t: ScalarLike = 0.0) -> RowVector:
        """Acceleration right-hand side: C qdd = gamma = -(dg/dq qdot + dg/dt) with qdot = T(q)
        qd (seed 001, eq. 8-9)."""
        with _errors.reporting("Model.gamma"):
            q, qd = as_states(self, q=q, qd=qd)
        t = jnp.asarray(t, dtype=q.dtype)
        _, dg = jax.jvp(
            lambda q_, t_: self.velocity_residual(q_, qd, t_),
            (q, t),
            (self.qdot(q, qd), jnp.ones_like(t)),
        )
        return -dg

    # ----- dynamics terms -------------------------------------------------------------------
    def mass_matrix(self) -> Float[Array, "n n"]:
        """M = diag(m_1, m_1, J_1, ..., m_N, m_N, J_N) (centroidal frames, seed 003): constant
        and diagonal in the velocity coordinates (`mass_diagonal`)."""
        return jnp.diag(self.mass_diagonal())

    def mass_diagonal(self) -> Coordinates:
        """Diagonal of M (per planar body (m, m, J))."""
        return self.kind.mass_diagonal(self.masses, self.inertias).reshape(-1)

    def forces(self, q: CoordinatesLike, qd: CoordinatesLike, t: ScalarLike = 0.0) -> Coordinates:
        """Generalized forces F(q, qd, t) over the velocity coordinates: the applied forces
        (each element's force over q, pulled back by T(q)^T) and the body kind's inertia force
        (none in planar centroidal frames)."""
        with _errors.reporting("Model.forces"):
            q, qd = as_states(self, q=q, qd=qd)
        t = jnp.asarray(t, dtype=q.dtype)
        kind = self.kind
        F = jnp.zeros(self.n, q.dtype)
        inertia = kind.inertia_force(self.inertias, qd)
        if inertia is not None:
            F = F + inertia
        local = [f for f in self.force_elements if f.local]
        qdot = self.qdot(q, qd)
        for f in self.force_elements:
            if not f.local:
                F = F + kind.stacked_pull_back(q, f.generalized_force(self, q, qdot, t))
        if not local:
            return F

        def pulled_back(f, ql, vl):
            Q = f.generalized_force(None, ql, kind.stacked_qdot(ql, vl), t)
            return kind.stacked_pull_back(ql, Q)

        groups = group_pairs(local)  # one vmapped evaluation per type, scattered once
        values = evaluate(local, groups, pulled_back, q, qd)
        columns = np.concatenate([g.columns.reshape(-1) for g in groups])
        return F.at[columns].add(jnp.concatenate([v.reshape(-1) for v in values]))

    def rotations(self, q: Coordinates) -> Float[Array, "bodies dim dim"]:
        """Every body's rotation matrix A (body frame -> global) at q."""
        if self.dim == 2:
            phi = q.reshape(-1, 3)[:, 2]
            c, s = jnp.cos(phi), jnp.sin(phi)
            return jnp.stack([jnp.stack([c, -s], -1), jnp.stack([s, c], -1)], -2)
        return quaternion.matrix(q.reshape(-1, 7)[:, 3:])

    def pose(self, q: Coordinates, body_name: str) -> Float[Array, " nq_body"]:
        """The named body's position coordinates (planar: (x, y, phi))."""
        k, w = self.body_names.index(body_name), self.kind.nq
        return q[w * k : w * k + w]
