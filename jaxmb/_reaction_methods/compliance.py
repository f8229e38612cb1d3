"""Compliance-resolved reactions: the reactions that the stiffness of the joints selects.

A rigid overconstrained mechanism has infinitely many multiplier solutions of

    C^T lambda = f,   f = F - M qdd                      (seed 001, eq. 10 and 15)

and seed 001 (section 5) notes that the real ones are set by the compliance of the joints. Give
each holonomic row a stiffness k (N/m for a position row, N m/rad for an angle row) and let the
joints deflect by delta = K^-1 lambda. The deflections must be those of some small displacement
dq of the bodies, delta = C dq (compatibility), so

    lambda* = K C dq,   C^T K C dq = f   =>   lambda* = K C (C^T K C)^+ f,

the minimiser of the complementary energy 1/2 lambda^T K^-1 lambda subject to C^T lambda = f
(Menabrea / Castigliano; the displacement method of structural analysis applied to rigid bodies
joined by linear springs). Equivalently lambda* = lambda_p - N (N^T K^-1 N)^-1 N^T K^-1 lambda_p
for any particular solution lambda_p and any basis N of the self-stresses null(C^T): the result
does not depend on N, and it is unit-consistent (K^-1 lambda^2 is an energy for N and N m rows
alike), whereas the minimum-norm multipliers (K = I) add newtons to newton metres. The reactions
of solvable pairs are the same for every K, since every solution of C^T lambda = f has them.

It is computed in the scaled multipliers mu = K^(-1/2) lambda: C^ = K^(1/2) C,
mu = (C^^T)^+ f (the minimum-norm solution of C^^T mu = f), lambda* = K^(1/2) mu;
jaxmb._linalg.dense.pinv is differentiable where the rank is locally constant, so jit, vmap and grad
(geometry and stiffness) work.

Knife edges (Pfaffian rows, seed 001 eq. 30). A knife edge forbids a lateral velocity, not a
position, so its compliance is no stiffness: a rolling tyre carries a lateral force
F = -c_alpha alpha = -(c_alpha / v) v_lat, with alpha = v_lat / v the slip angle, c_alpha the
cornering stiffness and v the rolling speed: a damping d = c_alpha / v (N s/m, lateral force per
slip velocity) on the row's velocity residual g = n^T v_K, lambda = d g. In the compliant model
(springs s K on the holonomic rows, dampers s D on the knife edges) write
lambda = lambda_p + N alpha; compatibility of the spring deflections (differentiated in time)
and of the slip velocities with the bodies' motion, N^T [K^-1 d(lambda_h)/dt; D^-1 lambda_n] = 0,
gives for the self-stress amplitudes alpha(t)

    (N_h^T K^-1 N_h) d(alpha)/dt + (N_n^T D^-1 N_n) alpha = -N_h^T K^-1 d(lambda_p,h)/dt
                                                           - N_n^T D^-1 lambda_p,n,

independent of s: a relaxation with time constants of order d / k (about 1e-4 s for rubber
tyres on steel bearings). Self-stresses without a knife-edge part follow the spring rule above
exactly; in the others the knife edges slip until their part satisfies N_n^T D^-1 lambda_n = 0,
the springs' share decaying as exp(-t k / d). For loads that change slowly against d / k (the
quasi-static limit, which is also the limit of springs s^2 K and dampers s D as s grows) the
reactions are therefore the lexicographic minimiser:

1. lambda_n minimises lambda_n^T D^-1 lambda_n over all solutions of C^T lambda = f
   (the tyres share what they can carry in proportion to their damping, i.e. to the cornering
   stiffness over speed: the classical steady-cornering rule of vehicle dynamics);
2. among those, lambda_h minimises lambda_h^T K^-1 lambda_h.

Only the ratios within each class matter, so one `default` can serve both classes. Stage 1 is
a projection in mu-space, scaled by D alone (K does not enter it): with Pi = I - C^ (C^)^+ the
projector onto the scaled self-stresses, mu1 = mu - Pi (E_n Pi)^+ E_n mu (E_n, E_h select the
knife-edge and the holonomic rows) gives lambda_n. Stage 2 is the holonomic formula above for
the rows C_h and the load they are left with, f - C_n^T lambda_n. Without knife edges (or
without holonomic rows) lambda* = K^(1/2) mu.
"""

import difflib
from collections.abc import Mapping
from typing import ClassVar

import equinox as eqx
import jax
import jax.core
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Real

from .._custom_types import ConstraintMatrix, Coordinates, RowVector, Scalar, ScalarLike
from .._formulations import augmented_lagrangian as al
from .._linalg.dense import RANK_RTOL, pinv
from .._model.blocks import mass_row_norms, multiply, multiply_transposed
from .._model.model import Model
from .._model.terms import EquationTerms
from .._runtime import errors as _errors
from .._runtime.exceptions import JaxmbError
from ..elements.geometry import is_concrete, is_real
from ._base import AbstractReactionMethod, Solution
from ._common import unique_accelerations


def _pinv(A, floor=None):
    """Pseudo-inverse with singular values below RANK_RTOL max(s_max, floor) treated as zero
    (the one pseudo-inverse of this module; jaxmb._linalg.dense.pinv's derivative rule holds where
    the rank is locally constant). `floor` puts the cut-off on an absolute scale: a matrix of
    round-off entries is then treated as zero instead of inverted."""
    if floor is None:
        return pinv(A, RANK_RTOL)
    a, b = A.shape
    padded = jnp.zeros((a + 1, b + 1), A.dtype).at[:a, :b].set(A).at[a, b].set(floor)
    return pinv(padded, RANK_RTOL)[:b, :a]


def compliance_multipliers(
    C: ConstraintMatrix,
    f: Coordinates,
    k: RowVector,
    holonomic: Bool[np.ndarray, " rows"],
) -> RowVector:
    """The compliance-resolved multipliers (module docstring) of C^T lambda = f.

    **Arguments:** `C` (rows, n); `f` (n,), in range(C^T); `k` (rows,) positive: the stiffness
    of each holonomic row and the damping of each knife-edge row; `holonomic` (rows,) a static
    boolean mask.

    **Returns:** lambda (rows,).
    """
    holonomic = np.asarray(holonomic, bool)
    rows = C.shape[0]
    if rows == 0:
        return jnp.zeros(0, C.dtype)
    # each class scaled by its largest value: the result depends only on ratios within a
    # class (so the scale carries no derivative), and the pseudo-inverses stay well scaled
    scale = jnp.ones_like(k)
    for mask in (holonomic, ~holonomic):
        if mask.any():
            scale = jnp.where(mask, jax.lax.stop_gradient(jnp.max(k[mask])), scale)
    root = jnp.sqrt(k / scale)
    if holonomic.all() or not holonomic.any():
        return root * (_pinv((C * root[:, None]).T) @ f)  # C^ = K^(1/2) C, (C^^T)^+ f
    knife, held = ~holonomic, holonomic
    # stage 1 does not depend on K: the holonomic rows weighted 1, so that their stiffness
    # ratios do not enter its rank decisions (with them, the round-off of Pi grew with
    # cond(C^) until the robot's reactions were wrong from a ratio of 1e6 on)
    root = jnp.where(held, 1.0, root)
    Cs = C * root[:, None]
    P = _pinv(Cs.T)
    mu = P @ f
    Pi = jnp.eye(rows, dtype=C.dtype) - Cs @ P.T  # onto the scaled self-stresses
    Bp = _pinv(Pi[knife], floor=1.0)  # (E_n Pi)^+; Pi has norm 1: round-off entries are zero
    knife_part = root[knife] * (mu[knife] - Pi[knife] @ (Bp @ mu[knife]))
    # stage 2: the holonomic rows carry the rest, f - C_n^T lambda_n, by K alone
    rest = f - C[knife].T @ knife_part
    held_part = compliance_multipliers(C[held], rest, k[held], np.ones(int(held.sum()), bool))
    return jnp.zeros(rows, C.dtype).at[knife].set(knife_part).at[held].set(held_part)


SMALLEST_STIFFNESS = float(np.finfo(np.float64).tiny)
"""The smallest stiffness accepted (2.2e-308): subnormal numbers are flushed to zero by XLA, so
k / max(k) would be 0 / 0."""

SPARSE_PENALTY = 1e8
"""alpha of the sparse solve (`sparse_compliance_multipliers`): the largest weight of
S = M + C^T W C, W = alpha K / max_i(k_i C_i M^-1 C_i^T), dimensionless as in
`jaxmb._formulations.augmented_lagrangian`."""

SPARSE_ITERATIONS = 64
"""The most iterations of `sparse_compliance_multipliers`. Each reduces the error of a
self-stress-free direction by 1 / (1 + mu), mu its eigenvalue of M^-1 C^T W C (alpha times its
share of the stiffest row's): 12 leave round-off down to mu = 20 (a direction 5e6 times softer
than the stiffest row), but the soft deformations of a large rotating-squares grid reach mu =
1 (30 x 30 plates: 24 iterations). The iteration stops earlier where the residual reaches
SPARSE_TOL or stops decreasing (round-off)."""

SPARSE_TOL = 1e-14
"""Residual |f - C^T W C y| relative to |f| at which `sparse_compliance_multipliers` stops."""


def sparse_compliance_multipliers(
    model: Model, C: ConstraintMatrix, f: Float[Array, " n *k"], k: RowVector
) -> Float[Array, " rows *k"]:
    """`compliance_multipliers` of a large holonomic model without a pseudo-inverse or a rank
    decision: lambda* = W C y with any y solving C^T W C y = f (W = beta K: only ratios of K
    matter), y by the iterated Tikhonov (proximal-point) iteration

        y_{j+1} = y_j + S^-1 (f - C^T W C y_j),    S = M + C^T W C,

    whose S has the pattern of the body graph (`jaxmb._linalg.sparse_cholesky`, factorized
    once). The part of y in null(C) never reaches lambda; on range(C^T), where f lies, the
    error contracts by 1 / (1 + mu) per iteration, until the residual reaches SPARSE_TOL or
    round-off (at most SPARSE_ITERATIONS). The residual uses W with its derivative (S is a
    preconditioner without one), so jax.grad in the geometry and the stiffness is that of the
    fixed point, the solves differentiated implicitly. `f` may hold several loads as columns
    (n, k): one factorization, one stopping decision for all."""
    _, groups, _, _ = al.pattern(model)
    rows, n = C.shape
    mass = model.mass_diagonal()
    blocks = al.blocks_of(model, C)
    frozen = [jax.lax.stop_gradient(b) for b in blocks]
    norms = mass_row_norms(groups, frozen, 1.0 / mass, rows)
    beta = jax.lax.stop_gradient(SPARSE_PENALTY / jnp.max(k * norms))
    W = beta * k
    s = al.system(model, mass, blocks, 1.0, scale=jnp.sqrt(W))
    columns = f.reshape(n, -1)

    def each(fn, X):
        return jax.vmap(fn, in_axes=1, out_axes=1)(X)

    def residual(y):
        return columns - each(
            lambda v: multiply_transposed(groups, blocks, W * multiply(groups, blocks, v, rows), n),
            y,
        )

    size_f = jax.lax.stop_gradient(jnp.linalg.norm(columns))

    def step(carry, _):
        y, previous, done = carry
        r = residual(y)
        size = jax.lax.stop_gradient(jnp.linalg.norm(r))
        done = done | (size <= SPARSE_TOL * size_f) | (size >= previous)
        y = jax.lax.cond(done, lambda: y, lambda: y + each(s.S.solve, r))
        return (y, size, done), None

    start = (jnp.zeros_like(columns), jnp.asarray(jnp.inf, f.dtype), jnp.asarray(False))
    (y, _, _), _ = jax.lax.scan(step, start, None, length=SPARSE_ITERATIONS)
    lam = W[:, None] * each(lambda v: multiply(groups, blocks, v, rows), y)
    return lam.reshape((rows,) + f.shape[1:])


class Compliance(AbstractReactionMethod):
    """Reactions set by the compliance of the joints (seed 001, section 5).

    lambda* = K C (C^T K C)^+ (F - M qdd): the multipliers of least complementary energy
    1/2 lambda^T K^-1 lambda, i.e. the rigid limit of the mechanism with its pairs replaced by
    linear springs of stiffness K (the bushing forces of such a model converge to lambda* as
    the stiffness grows, with error O(1/stiffness)). Unit-consistent, independent of any
    null-space basis, equal to the unique reactions for solvable pairs whatever K is.

    **Arguments:**
    - `stiffness`: dict pair name -> one number for all rows of the pair, or one per row, in the
      rows' own units: N/m for position rows (a revolute's x and y), N m/rad for angle rows
      (a weld's or a translational pair's angle, an angle driver). For a knife edge the number
      is its lateral damping d (N s/m: lateral force per slip velocity, a tyre's cornering
      stiffness over its rolling speed); knife-edge reactions follow a quasi-static rule
      (the knife edges share the load by D first, then the springs by K).
    - `default`: the number for every pair not in `stiffness` (None: every pair must be
      listed). Only ratios within the holonomic rows, and within the knife edges, matter.

    All numbers are differentiable parameters (jit, vmap, grad).

    ```python
    rx = mb.reactions(model, q, qd, method=mb.Compliance({"B": 2e7, "C": 2e7}, default=1e8))
    ```
    """

    pairs: tuple[str, ...] = eqx.field(static=True)
    values: tuple[Float[Array, " *pair_rows"], ...]  # per pair: one number, or one per row
    default: Scalar | None
    # the number of every row, packed by `bind` when all numbers are known: one array enters
    # the compiled program instead of one value per pair
    row_values: Float[Array, " rows"] | None
    physical: ClassVar[bool] = True

    def __init__(
        self,
        stiffness: Mapping[str, Real[ArrayLike, " *pair_rows"]] | None = None,
        default: ScalarLike | None = None,
    ):
        if stiffness is not None and not isinstance(stiffness, Mapping):
            raise JaxmbError.about(
                "Compliance",
                "stiffness must be a mapping pair name -> number (or one per row), e.g. "
                f"{{'O1': 1e8}}, got {stiffness!r} of type {type(stiffness).__name__}",
            )
        stiffness = {} if stiffness is None else dict(stiffness)
        for name in stiffness:
            if not isinstance(name, str):
                raise JaxmbError.about(
                    "Compliance", f"stiffness keys must be pair names, got {name!r}"
                )
        self.pairs = tuple(stiffness)
        self.values = tuple(_checked(v, f"stiffness of pair {n!r}") for n, v in stiffness.items())
        self.default = None if default is None else _checked(default, "default", scalar=True)
        self.row_values = None

    @property
    def stiffness(self) -> dict[str, Float[Array, " *pair_rows"]]:
        """Pair name -> the number(s) given for it."""
        return dict(zip(self.pairs, self.values))

    @property
    def name(self) -> str:
        listed = ", ".join(self.pairs)
        rest = "default" if self.default is not None else ""
        return f"Compliance({', '.join(x for x in (listed, rest) if x)})"

    def bind(self, model: Model) -> AbstractReactionMethod:
        rows = {p.name: p.num_rows for p in model.pair_info}  # one pass: O(pairs), not pairs^2
        unknown = [n for n in self.pairs if n not in rows]
        if unknown:
            close = difflib.get_close_matches(unknown[0], list(rows), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise _errors.wrong_argument(
                f"Compliance names unknown pair(s) {unknown}{hint}; the pairs are {list(rows)}"
            )
        for name, value in self.stiffness.items():
            if jnp.shape(value) not in ((), (rows[name],)):
                raise _errors.wrong_argument(
                    f"Compliance stiffness of pair {name!r} has shape "
                    f"{jnp.shape(value)}; give one number or one per row "
                    f"({rows[name]})"
                )
        given = set(self.pairs)
        missing = [n for n in rows if n not in given]
        if missing and self.default is None:
            raise _errors.wrong_argument(
                f"Compliance has no stiffness for pair(s) {missing} and "
                "no default; list them or pass default=..."
            )
        k = self._known_row_stiffness(rows)
        if rows and k is not None:  # else checked at run time
            self._check_known(k, model)
            if not self._differentiated():
                return eqx.tree_at(lambda c: c.row_values, self, jnp.asarray(k), is_leaf=_none)
        return self

    def _differentiated(self) -> bool:
        """Whether a number is a tracer (of an eager jax.grad or jvp: its value is known, but
        packing that value as a constant would drop its derivative)."""
        return any(isinstance(v, jax.core.Tracer) for v in (*self.values, self.default))

    def _known_row_stiffness(self, rows):
        """The number of every row (numpy) when all numbers are concrete, else None; `rows`:
        pair name -> its number of rows, in row order."""
        known = [_errors.concrete(v) for v in (*self.values, self.default) if v is not None]
        if not rows or any(v is None for v in known):
            return None
        values = dict(zip(self.pairs, known))
        default = None if self.default is None else known[-1]
        return np.concatenate(
            [
                # every pair without a default has a value (checked by bind)
                np.broadcast_to(values.get(name, default), (count,))  # pyright: ignore[reportCallIssue, reportArgumentType]
                for name, count in rows.items()
            ]
        ).astype(np.float64)

    @staticmethod
    def _check_known(k, model):
        """Refuse known row numbers `k` (those of an eager jax.grad were not checked at
        construction) that are not positive and finite, or whose ratio within a class
        (`_ratio_limits`) exceeds its limit, naming the pairs."""
        pair_of_row = np.asarray(model.row_pair_index)
        bad = ~(k >= SMALLEST_STIFFNESS) | ~np.isfinite(k)
        if bad.any():
            name = model.pair_names[pair_of_row[int(np.argmax(bad))]]
            raise _errors.wrong_argument(
                f"Compliance: the stiffness of pair {name!r} = {k[np.argmax(bad)]:g} must be "
                "positive, finite and at least the smallest normal float64"
            )
        for mask, limit, what in _ratio_limits(model):
            rows = np.flatnonzero(mask)
            kc = k[rows]
            if kc.size and kc.max() > limit * kc.min():
                stiff, soft = (
                    model.pair_names[pair_of_row[rows[i]]] for i in (kc.argmax(), kc.argmin())
                )
                raise _errors.wrong_argument(
                    f"Compliance {what} ratio {kc.max() / kc.min():.3g} (pair {stiff!r}: "
                    f"{kc.max():g}, pair {soft!r}: {kc.min():g}) exceeds {limit:g}: "
                    f"{_ratio_reason(limit)}"
                )

    def row_stiffness(self, model: Model) -> RowVector:
        """The number of every row of C (row order), checked positive and finite at run time
        (the error names the pair)."""
        if self.row_values is not None and self.row_values.shape == (model.num_rows,):
            return self.row_values  # packed by `bind` (checked there)
        known = self._known_row_stiffness({p.name: p.num_rows for p in model.pair_info})
        if known is not None and not self._differentiated():  # one constant, not one
            # operation per pair in a traced program
            return jnp.asarray(known)
        given = self.stiffness
        parts = [
            jnp.broadcast_to(given.get(p.name, self.default), (p.num_rows,))  # pyright: ignore[reportArgumentType]
            for p in model.pair_info  # (every pair without a default has a value: bind checked it)
        ]
        k = jnp.concatenate(parts) if parts else jnp.zeros(0)
        messages = tuple(
            f"Compliance: the stiffness of pair {p.name!r} must be positive, "
            "finite and at least the smallest normal float64 (traced value)"
            for p in model.pair_info
            for _ in range(p.num_rows)
        )
        if not messages or is_concrete(k):
            return k
        bad = ~(k >= SMALLEST_STIFFNESS) | ~jnp.isfinite(k)
        k = _errors.branched_error_if(k, jnp.any(bad), jnp.argmax(bad), messages)
        for mask, limit, what in _ratio_limits(model):
            if mask.any():
                kc = k[np.flatnonzero(mask)]
                k = _errors.error_if(  # after the check above (under jit in any order)
                    k,
                    ~jnp.any(bad) & (jnp.max(kc) > limit * jnp.min(kc)),
                    f"Compliance: the ratio of the largest to the smallest {what} exceeds "
                    f"{limit:g} (traced value): {_ratio_reason(limit)}",
                )
        return k

    def multipliers(self, model: Model, terms: EquationTerms, qdd: Coordinates | None) -> Solution:
        qdd = unique_accelerations(model, terms, qdd)
        C, f = terms.C, terms.F - terms.M @ qdd
        k = self.row_stiffness(model)
        # large holonomic models: the sparse path; small ones, and knife edges (whose
        # quasi-static rule the dense formula implements): the pseudo-inverse
        if model.h == 0 and model.num_rows and not al.is_dense(model):
            return qdd, sparse_compliance_multipliers(model, C, f, k)
        return qdd, compliance_multipliers(C, f, k, model.holonomic_rows)


MAX_STIFFNESS_RATIO = 1e12
"""Largest ratio of two holonomic rows' stiffness that `Compliance` accepts. Measured against an
exact null-space reference (lambda_p - N (N^T K^-1 N)^-1 N^T K^-1 lambda_p, the p x p solve in
rational arithmetic) on the redundant built-in models, one pair stiffer or softer than all the
others by the ratio r: the largest error relative to the largest reaction grows as about
1e-17 r (the parallelogram with a soft motor: 1.1e-6 at 1e12, 2.7e-5 at 3e12, 8e-5 at 1e13,
8e-4 at 1e14, 2e-2 at 1e15, wrong beyond 3e15; the N-four-bar with a rigid coupler (N = 3):
4.4e-6, 1.4e-5, 4.2e-5, 5.8e-4, 3.5e-3, wrong beyond 3e16; the mobile robot's pairs: below 1e-8
up to 1e12). It is the conditioning of the data: C is known to 1e-16, and a row that is soft
among stiff ones takes an r times larger share of its round-off. The limit keeps that error
below 1e-5 (tests/test_compliance.py::test_stiffness_ratio_limit)."""

MAX_DAMPING_RATIO = 1e11
"""Largest ratio of two knife edges' damping that `Compliance` accepts: on the mobile robot,
one knife edge 3e11 times more damped than the others gives the reactions to 1e-9, 1e12 wrong
ones (the quasi-static rule's rank decision takes round-off, which grows as the square root of
the ratio, for a self-stress). The ratio of a knife edge's damping to a pair's stiffness does not
matter (they are other units, and the rule weighs the classes separately)."""


def _ratio_limits(model):
    """(row mask, limit, what) of the rows whose ratios are limited: the holonomic rows'
    stiffness and the knife edges' damping."""
    holonomic = np.asarray(model.holonomic_rows, bool)
    return (
        (holonomic, MAX_STIFFNESS_RATIO, "stiffness"),
        (~holonomic, MAX_DAMPING_RATIO, "knife-edge damping"),
    )


def _ratio_reason(limit):
    """Why numbers `limit` apart are refused, and what to do instead."""
    cause = (
        "the knife edges' rule takes round-off for a self-stress"
        if limit == MAX_DAMPING_RATIO
        else "float64 resolves the compliant reactions only to about 1e-17 times the ratio of "
        "the largest reaction"
    )
    return (
        f"{cause}. Only ratios matter: a pair this far above the others acts as rigid, so give "
        f"it at most {limit:g} times the smallest number, or leave the soft pairs out of the model"
    )


def _none(x):
    return x is None


def _checked(value, label, scalar=False):
    """value as float64; concrete values must be positive and finite (one number, or one per
    row unless `scalar`)."""
    if value is None or isinstance(value, (str, bytes, bool)) or not is_real(value):
        raise JaxmbError.about(
            "Compliance",
            f"{label} must be a positive number (N/m, or N m/rad for "
            f"angle rows), or one per row, got {value!r}",
        )
    x = jnp.asarray(value, jnp.float64)
    if x.ndim > (0 if scalar else 1):
        want = "one number" if scalar else "one number or one per row"
        raise JaxmbError.about("Compliance", f"{label} must be {want}, got shape {x.shape}")
    if is_concrete(x):
        v = np.asarray(x)
        if not np.all(np.isfinite(v) & (v > 0.0)):
            raise JaxmbError.about(
                "Compliance", f"{label} = {v.tolist()} must be positive and finite"
            )
        if np.any(v < SMALLEST_STIFFNESS):
            raise JaxmbError.about(
                "Compliance",
                f"{label} = {v.tolist()} is below {SMALLEST_STIFFNESS:g}, the "
                "smallest normal float64: XLA flushes such numbers to zero. Only ratios of "
                "the stiffnesses matter: scale them all up",
            )
    return x
