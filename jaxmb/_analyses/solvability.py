"""Solvability of joint reactions in redundantly constrained systems (seed 001, section 3).

With C = [C_X; C_Y] split into the rows of a pair X and the rest, the generalized reaction
f_X = C_X^T lambda_X is unique iff span(C_X^T) and span(C_Y^T) form a direct sum (section 3.2).
Three numerical tests:

- "qr"  (section 3.3, eq. 21-27): pivoted QR C E = Q R; the last p columns Q~ of Q span the left
  null space of C; B_X = C_X^T Q~_X (rows of Q~ belonging to X); solvable iff B_X = 0.
- "svd": the same criterion with Q~ replaced by the left singular vectors of the zero singular
  values of C (any orthonormal basis of null(C^T) gives the same |B_X|_F).
- "rank": rank(C_X) + rank(C_Y) = rank(C).
- "sparse": the same criterion for large models, from the augmented-Lagrangian matrix's sparse
  factorization: B_X probed through the self-stress projector, the rank from the modes
  (`jaxmb._analyses.sparse_solvability`; cost about that of a few simulation steps, not
  rows x n^2; `b_norm` an estimate, `redundant_rows` not computed).

Everything has fixed shapes: the rank is data and bases are masked, never sliced, so the
analysis runs under jit and vmap over configurations and model parameters.

Rank decisions: a singular value (or |R_kk| of pivoted QR) counts when it exceeds the
threshold `rtol` times the largest one (default 1e-9). The margin says how far the closest
decision is from that threshold: min(smallest kept / threshold, threshold / largest dropped),
the dropped values floored at machine epsilon times the largest (so an exact redundancy gives
about rtol / eps = 4.5e6). A margin under 1e2 (a value kept below 1e-7 or dropped above 1e-11
times the largest) sets `warning`: the configuration is close to a change of rank (singular),
or far from satisfying the constraints, and the decisions are fragile.
B_X is judged zero when |B_X|_F <= `btol` |C_X|_F (default 1e-8).
"""

import contextlib
import functools
import warnings
from collections.abc import Mapping, Sequence
from typing import Literal

import equinox as eqx
import jax
import jax.core
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from .._custom_types import CoordinatesLike, ScalarLike
from .._linalg import native as _native
from .._linalg.dense import (
    RANK_RTOL,
    _vectorized,
    left_null_qr,
    pivoted_qr,
    qr,
    rank_mask,
    singular_values,
    small_product,
    svd,
    svd_full,
)
from .._model.arguments import checked_option
from .._model.input_checks import check_shapes, checked_finite
from .._model.model import Model
from .._runtime import errors as _errors
from .._runtime.exceptions import JaxmbError
from .._runtime.results import RESULTS
from ..elements.geometry import is_concrete
from . import sparse_solvability as _sparse

B_RTOL = 1e-8
MARGIN_WARNING = 1e2
_EPS = float(np.finfo(np.float64).eps)


def _margin(values, mask, rtol):
    """Distance of the closest rank decision from the threshold t = rtol * max:
    min(smallest kept / t, t / largest dropped), dropped floored at eps * max."""
    vmax = jnp.max(values, initial=0.0)
    thr = jnp.maximum(rtol * vmax, 1e-300)
    kept = jnp.min(jnp.where(mask, values, jnp.inf), initial=jnp.inf)
    dropped = jnp.max(jnp.where(mask, -jnp.inf, values), initial=-jnp.inf)
    dropped = jnp.maximum(dropped, jnp.maximum(_EPS * vmax, 1e-300))
    return jnp.where(vmax > 0, jnp.minimum(kept / thr, thr / dropped), jnp.inf)


def _rank_svd(A, rtol):
    s = singular_values(A)
    mask = rank_mask(s, rtol)
    return jnp.sum(mask), s, mask


def _left_null_qr(C, rtol):
    """Q~ of eq. 27 with fixed shape: columns k >= rank of the pivoted-QR Q, others zeroed."""
    Qt, d = left_null_qr(C, rtol)
    kept = rank_mask(d, rtol)
    # pivoted QR orders |R_kk| non-increasingly, so the kept values are a leading block
    return Qt, jnp.sum(kept), _margin(d, kept, rtol)


def _left_null_svd(C, rtol):
    rows = C.shape[0]
    U, s, _ = svd_full(C)
    s_full = jnp.zeros(rows, C.dtype).at[: s.shape[0]].set(s)
    kept = rank_mask(s_full, rtol)
    return jnp.where(kept[None, :], 0.0, U), jnp.sum(kept), _margin(s_full, kept, rtol)


def _unique_directions(CX, QX, scale, rtol, width):
    """Orthonormal directions e in range(C_X^T), orthogonal to range(B_X): e^T f_X is unique.

    Works in the L-dimensional row space of the set (L = its number of rows): with
    C_X^T = Q_a R_a (thin QR), B_X = C_X^T Q~_X = Q_a (R_a Q~_X), so the SVD of the small
    L x (m + h) matrix R_a Q~_X gives B_X's singular values and left vectors Q_a U, and
    W = C_X^T - Ub Ub^T C_X^T = Q_a (R_a - U U^T R_a) (same singular values as the L x L factor).

    Returns (E, mask) with E of shape (n, width); columns outside the subspace are zero.
    """
    Qa, Ra = qr(CX.T)
    U, sb, _ = svd(small_product(Ra, QX))
    U = jnp.where(rank_mask(sb, jnp.maximum(rtol, B_RTOL), scale)[None, :], U, 0.0)
    Uw, sw, _ = svd(Ra - small_product(U, small_product(U.T, Ra)))
    w_mask = rank_mask(sw, rtol, jnp.maximum(scale, 1e-300))
    E = small_product(Qa, jnp.where(w_mask[None, :], Uw, 0.0))
    pad = width - E.shape[1]
    if pad >= 0:
        return jnp.pad(E, ((0, 0), (0, pad))), jnp.pad(w_mask, (0, pad))
    return E[:, :width], w_mask[:width]


def _per_set(row_sets, fn, col_sets=None):
    """`fn(idx)` for every row set (`fn(idx, cols)` with `col_sets`, a static set of columns
    per row set), sets of one size vmapped together over their static indices (the traced
    program does not grow with the number of pairs); outputs in set order."""
    index_sets = [(idx,) for idx in row_sets] if col_sets is None else list(zip(row_sets, col_sets))
    by_size: dict = {}
    for k, sets in enumerate(index_sets):
        by_size.setdefault(tuple(len(x) for x in sets), []).append(k)
    outs, order = [], []
    for sizes, members in by_size.items():
        args = [
            jnp.asarray(
                np.asarray([index_sets[k][a] for k in members], np.int64).reshape(
                    len(members), size
                )
            )
            for a, size in enumerate(sizes)
        ]
        outs.append(jax.vmap(fn)(*args))
        order += members
    inverse = np.argsort(np.asarray(order))
    return jax.tree.map(lambda *parts: jnp.concatenate(parts)[inverse], *outs)


def _b_norm(CX, QX):
    """|B_X|_F, B_X = C_X^T Q~_X as a sum of the L outer products (L = the set's rows, 1 to
    3): one elementwise fusion under vmap, where a dot of tiny matrices is a kernel call each."""
    return jnp.linalg.norm(jnp.sum(CX[:, :, None] * QX[:, None, :], axis=0))


def _b_norms_jnp(C, Qt, row_sets):
    return _per_set(row_sets, lambda idx: _b_norm(C[idx], Qt[idx]))


@functools.cache
def _b_norms_of(row_sets):
    return _vectorized(
        lambda C, Qt: _b_norms_jnp(C, Qt, row_sets),
        lambda C, Qt: _b_norms_jnp(C, Qt, row_sets),
        native=lambda C, Qt: _native.set_norms(C, Qt, row_sets),
    )


def _b_norms(C, Qt, row_sets):
    """|B_X|_F = |C_X^T Q~_X|_F per row set (seed 001, eq. 27); under vmap one compiled call
    for the batch (`jaxmb._linalg.native.set_norms`: only Q~'s nonzero columns, p of m + h,
    count)."""
    return _b_norms_of(tuple(tuple(int(r) for r in idx) for idx in row_sets))(C, Qt)


def _direction_width(n, row_sets):
    """The width of the unique directions: a set has at most as many unique directions as rows
    (range(C_X^T) has dimension <= L), and at most n."""
    return min(n, max((len(idx) for idx in row_sets), default=0))


def _no_sets(C):
    """The results of `_analyse_sets` for no row sets: every array with zero sets (and unique
    directions of width 0)."""
    return (
        jnp.zeros(0, bool),
        jnp.zeros(0, C.dtype),
        jnp.zeros(0, C.dtype),
        jnp.zeros((0, C.shape[1], 0), C.dtype),
        jnp.zeros(0, jnp.int32),
    )


def _analyse_sets(C, Qt, rank, row_sets, method, rtol, btol):
    """Verdict, |B_X|_F, |B_X|_F / |C_X|_F, unique directions and their count for each row set
    (a pair or a group). Sets with the same number of rows are gathered with static indices and
    vmapped together: B_X = C_X^T Q~_X costs L n (m + h), not n (m + h)^2 as with masks."""
    n, rows = C.shape[1], C.shape[0]
    if not row_sets:
        return _no_sets(C)
    width = _direction_width(n, row_sets)
    scale = jnp.max(jnp.abs(C), initial=0.0)
    b_norm = _b_norms(C, Qt, row_sets)
    member = np.zeros((len(row_sets), rows))  # |C_X|_F^2 = sum of the set's squared row norms
    for k, idx in enumerate(row_sets):
        member[k, idx] = 1.0
    b_rel = b_norm / jnp.maximum(jnp.sqrt(member @ jnp.sum(C * C, axis=1)), 1e-300)

    def rank_test(idx):  # rank(C_X) + rank(C_Y) = rank(C)
        mask = jnp.zeros(rows, bool).at[idx].set(True)
        r_x, _, _ = _rank_svd(C[idx], rtol)
        r_y, _, _ = _rank_svd(jnp.where(mask[:, None], 0.0, C), rtol)
        return r_x + r_y == rank

    def directions(idx):
        E, e_mask = _unique_directions(C[idx], Qt[idx], scale, rtol, width)
        return E, jnp.sum(e_mask)

    ok = _per_set(row_sets, rank_test) if method == "rank" else b_rel <= btol
    E, count = _per_set(row_sets, directions)
    return ok, b_norm, b_rel, E, count


def _set_columns(model, row_sets):
    """Static coordinates of every row set: the union of its pairs' bodies' coordinates (C_X
    is zero elsewhere)."""
    _, groups = model._groups()
    columns = {}
    for g in groups:
        for rows, coords in zip(g.rows, g.columns):
            for r in rows:
                columns[int(r)] = coords
    return [
        np.unique(np.concatenate([columns[int(r)] for r in idx] or [np.zeros(0, np.int64)]))
        for idx in row_sets
    ]


def _analyse_local_sets(model, C, Qt, row_sets, rtol, btol):
    """`_analyse_sets` on C_X restricted to its pair's coordinates (L x nv b instead of L x n):
    the sparse report's cost then grows with the pairs, not pairs x n."""
    n = C.shape[1]
    if not row_sets:
        return _no_sets(C)
    width = _direction_width(n, row_sets)
    scale = jnp.max(jnp.abs(C), initial=0.0)

    def one(idx, cols):
        CX, QX = C[idx[:, None], cols[None, :]], Qt[idx]
        b = _b_norm(CX, QX)
        E, e_mask = _unique_directions(CX, QX, scale, rtol, width)
        full = jnp.zeros((n, width), C.dtype).at[cols].set(E[:, :width])
        return b, b / jnp.maximum(jnp.linalg.norm(CX), 1e-300), full, jnp.sum(e_mask)

    b_norm, b_rel, E, count = _per_set(row_sets, one, _set_columns(model, row_sets))
    return b_rel <= btol, b_norm, b_rel, E, count


class SolvabilityReport(eqx.Module):
    """Result of `solvability`. Array fields carry a leading batch axis under vmap.

    **Fields:** `method`; `rank`, `rank_holonomic`, `rank_nonholonomic`, `redundancy` (p = m + h
    - r), `dof` (n - r); `pair_names` and `solvable`, `b_norm` (|B_X|_F per pair, independent of
    the null-space basis), `b_relative` (|B_X|_F / |C_X|_F); `margin` and `warning`;
    `row_order` (pivot order of the rows of C from pivoted QR of C^T: the first `rank` rows are
    independent, the others redundant; None for method "sparse"); `unique_directions` /
    `unique_count` per pair (directions in generalized-force space along which an unsolvable
    pair's reaction is still unique); the
    same per group in `group_names`, `group_solvable`, `group_b_norm`, ... (None when no
    groups were given); `block_saturated` (method "sparse": its block of modes was not
    resolved, so the rank is not; eager calls repeat with a larger block, traced ones raise);
    `undecided` / `group_undecided` (method "sparse": verdicts it cannot decide, reported not
    solvable, with an `UndecidedSolvabilityWarning` eagerly; None for the dense methods).

    Shapes: `pairs`, `groups`, `rows` = m + h rows of C, `n` coordinates, `width` = min(n,
    the most rows of a pair) (a pair has at most as many unique directions as rows;
    zero-padded); `*batch` is empty for one configuration and the vmapped axes otherwise.
    """

    method: str = eqx.field(static=True)
    pair_names: tuple[str, ...] = eqx.field(static=True)
    group_names: tuple[str, ...] = eqx.field(static=True)
    group_members: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    n: int = eqx.field(static=True)
    num_rows: int = eqx.field(static=True)
    rank: Int[Array, " *batch"]
    rank_holonomic: Int[Array, " *batch"]
    rank_nonholonomic: Int[Array, " *batch"]
    solvable: Bool[Array, "*batch pairs"]
    b_norm: Float[Array, "*batch pairs"]
    b_relative: Float[Array, "*batch pairs"]
    unique_directions: Float[Array, "*batch pairs n width"]
    unique_count: Int[Array, "*batch pairs"]
    group_solvable: Bool[Array, "*batch groups"] | None
    group_b_norm: Float[Array, "*batch groups"] | None
    group_unique_count: Int[Array, "*batch groups"] | None
    margin: Float[Array, " *batch"]
    warning: Bool[Array, " *batch"]
    row_order: Int[Array, "*batch rows"] | None
    block_saturated: Bool[Array, " *batch"] | None = None
    undecided: Bool[Array, "*batch pairs"] | None = None
    group_undecided: Bool[Array, "*batch groups"] | None = None

    @property
    def redundancy(self) -> Int[Array, " *batch"]:
        """p = m + h - r (seed 001, eq. 7)."""
        return self.num_rows - self.rank

    @property
    def dof(self) -> Int[Array, " *batch"]:
        """n - r: degrees of freedom of the velocities."""
        return self.n - self.rank

    @property
    def redundant_rows(self) -> tuple[int, ...]:
        """A set of p rows of C whose removal leaves an independent set (from pivoted QR of C^T)."""
        if self.row_order is None:
            raise ValueError(
                f"redundant_rows needs the pivoted QR of C^T, which method "
                f"{self.method!r} does not compute: use mb.solvability(model, q, "
                "t, method='qr')"
            )
        order = np.asarray(self.row_order)
        if order.ndim != 1:
            raise ValueError("redundant_rows is defined for a single configuration, not a batch")
        return tuple(sorted(int(k) for k in order[int(self.rank) :]))

    def solvable_dict(self) -> dict[str, bool]:
        """Pair name -> solvable."""
        return {nm: bool(v) for nm, v in zip(self.pair_names, np.asarray(self.solvable))}

    def to_dict(self) -> dict[str, object]:
        """Plain-Python summary (single configuration)."""
        out = {
            "method": self.method,
            "rank": int(self.rank),
            "rank_holonomic": int(self.rank_holonomic),
            "rank_nonholonomic": int(self.rank_nonholonomic),
            "redundancy": int(self.redundancy),
            "dof": int(self.dof),
            "margin": float(self.margin),
            "warning": bool(self.warning),
            "redundant_rows": (None if self.row_order is None else list(self.redundant_rows)),
            "pairs": {
                nm: {
                    "solvable": bool(s),
                    "b_norm": float(b),
                    "unique_components": int(u),
                }
                for nm, s, b, u in zip(
                    self.pair_names,
                    np.asarray(self.solvable),
                    np.asarray(self.b_norm),
                    np.asarray(self.unique_count),
                )
            },
        }
        if self.undecided is not None:
            for nm, u in zip(self.pair_names, np.asarray(self.undecided)):
                out["pairs"][nm]["undecided"] = bool(u)  # pyright: ignore[reportIndexIssue]
        if self.group_names:
            out["groups"] = {
                nm: {"members": list(mem), "solvable": bool(s), "b_norm": float(b)}
                for nm, mem, s, b in zip(
                    self.group_names,
                    self.group_members,
                    np.asarray(self.group_solvable),
                    np.asarray(self.group_b_norm),
                )
            }
        return out

    def __str__(self):
        from .report import format_report

        return format_report(self)


def _row_sets(model, names_per_set):
    """Static row indices of C for each set of pair names."""
    owner = model.row_pair_index
    index = {nm: k for k, nm in enumerate(model.pair_names)}
    sets = []
    for names in names_per_set:
        for nm in names:
            if nm not in index:
                raise KeyError(f"solvability: no pair named {nm!r}; pairs: {list(index)}")
        sets.append(np.flatnonzero(np.isin(owner, [index[nm] for nm in names])))
    return sets


def solvability(
    model: Model,
    q: CoordinatesLike,
    t: ScalarLike = 0.0,
    method: Literal["qr", "svd", "rank", "sparse"] = "qr",
    *,
    groups: Mapping[str, Sequence[str]] | None = None,
    rtol: float = RANK_RTOL,
    btol: float = B_RTOL,
) -> SolvabilityReport:
    """Which pairs' reactions are uniquely determined at (q, t) (seed 001, section 3).

    **Arguments:**
    - `model`, `q`, `t`: the configuration.
    - `method`: "qr" (pivoted QR, eq. 21-27), "svd" or "rank" (the three tests of seed 001), or
      "sparse" (the same verdicts for models of hundreds of bodies, without a dense
      factorization; the docs' Solvability of reactions page).
    - `groups`: optional {name: (pair names)}; a group's combined reaction is tested against the
      rest (direct sum of the group's rows against all other rows).
    - `rtol`: relative rank tolerance; `btol`: B_X is zero when |B_X|_F <= btol |C_X|_F.

    **Returns:** a `SolvabilityReport`. jit and vmap work (over q or over model parameters).

    ```python
    report = mb.solvability(model, model.q0)
    print(report)
    ```
    """
    if method not in METHODS:
        raise ValueError(
            f"solvability: method must be 'qr', 'svd', 'rank' or 'sparse', got {method!r}"
        )
    if method == "sparse" and model.dim != 2:
        raise ValueError(
            "solvability: method='sparse' serves planar models for now (its factorization's "
            "nodes are planar bodies); use method='qr', 'svd' or 'rank' on a spatial model"
        )
    named = tuple((name, tuple(members)) for name, members in dict(groups or {}).items())
    for name, members in named:
        if not members:
            raise ValueError(
                f"solvability: group {name!r} has no pairs; give it the names of "
                "the pairs whose combined reaction to test"
            )
    q = jnp.asarray(q, jnp.float64)
    t = jnp.asarray(t, jnp.float64)
    with _errors.reporting("solvability"):
        check_shapes(model, q=q)
        for label, value in (("rtol", rtol), ("btol", btol)):
            q = checked_option(q, value, label, below_one=True)
        if method != "sparse":
            return _solvability_compiled(model, q, t, method, named, rtol, btol)
        strict = any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves((model, q, t)))
        block = _sparse.block_size(model)
        while True:  # eagerly, an unresolved block of modes is repeated with a larger one
            report = _solvability_compiled(model, q, t, method, named, rtol, btol, block, strict)
            if strict or not bool(np.any(report.block_saturated)) or block >= model.n:
                break
            block = min(model.n, 4 * block)
    if not strict:
        warn_undecided(report.undecided, model.pair_names, "solvability(method='sparse')")
    return report


METHODS = ("qr", "svd", "rank", "sparse")


# eager calls run compiled (design measurement D6), inlined in an outer jit; the check is
# returned as data (jaxmb._runtime.errors): no host callback, so the persistent cache stores the
# program
@_errors.checked_jit
def _solvability_compiled(model, q, t, method, groups, rtol, btol, block=None, strict=True):
    groups = dict(groups)  # (name, members) pairs: a dict argument would come back key-sorted
    q = checked_finite(model, q, "q")  # nan would read as rank 0, nothing unique
    C = model.C(q, t)
    hol = np.asarray(model.holonomic_rows)
    pair_sets = _row_sets(model, [(nm,) for nm in model.pair_names])
    group_sets = _row_sets(model, list(groups.values()))
    if method == "sparse":
        return _sparse_report(
            model, C, hol, groups, pair_sets, group_sets, rtol, btol, block, strict
        )

    rank_h, _, _ = _rank_svd(C[hol], rtol) if hol.any() else (jnp.asarray(0), None, None)
    rank_n, _, _ = _rank_svd(C[~hol], rtol) if (~hol).any() else (jnp.asarray(0), None, None)
    if method == "qr":
        Qt, rank, margin = _left_null_qr(C, rtol)
    else:
        Qt, rank, margin = _left_null_svd(C, rtol)

    pairs = _analyse_sets(C, Qt, rank, pair_sets, method, rtol, btol)
    # without groups the group fields are None, not size-0 arrays: jax.lax.map(...,
    # batch_size=k) cannot reshape size-0 outputs (ZeroDivisionError), so chunked maps failed
    g_ok = g_b = g_count = None
    if groups:
        g_ok, g_b, _, _, g_count = _analyse_sets(C, Qt, rank, group_sets, method, rtol, btol)
    _, _, row_order = pivoted_qr(C.T)
    ranks = (rank, rank_h, rank_n)
    return _report(model, method, groups, ranks, pairs, (g_ok, g_b, g_count), margin, row_order)


def _report(model, method, groups, ranks, pairs, group_results, margin, row_order, **extra):
    """`SolvabilityReport` from the ranks (C, holonomic rows, Pfaffian rows), the pairs'
    (solvable, |B_X|, relative |B_X|, unique directions, their count) and the groups'
    (solvable, |B_X|, count)."""
    rank, rank_h, rank_n = ranks
    ok, b_norm, b_rel, E, e_count = pairs
    g_ok, g_b, g_count = group_results
    return SolvabilityReport(
        method=method,
        pair_names=model.pair_names,
        group_names=tuple(groups),
        group_members=tuple(tuple(v) for v in groups.values()),
        n=model.n,
        num_rows=model.num_rows,
        rank=rank,
        rank_holonomic=rank_h,
        rank_nonholonomic=rank_n,
        solvable=ok,
        b_norm=b_norm,
        b_relative=b_rel,
        unique_directions=E,
        unique_count=e_count,
        group_solvable=g_ok,
        group_b_norm=g_b,
        group_unique_count=g_count,
        margin=margin,
        warning=margin < MARGIN_WARNING,
        row_order=row_order,
        **extra,
    )


def _sparse_report(model, C, hol, groups, pair_sets, group_sets, rtol, btol, block, strict):
    """The report of method "sparse" (`jaxmb._analyses.sparse_solvability`): verdicts that
    the sparse path cannot decide are `undecided` (and not solvable) instead of guessed."""
    found = _sparse.modes(model, C, rtol, block=block)
    unresolved = found.saturated
    rank_h, rank_n = None, jnp.asarray(0)
    if not hol.all():
        rank_n, _, _ = _rank_svd(C[~hol], rtol)  # h rows: a small dense SVD
        rank_h = jnp.asarray(0)
        if hol.any():
            held = _sparse.modes(model, C, rtol, hol, found.sigma.shape[0] + model.h)
            rank_h = model.n - held.count
            unresolved = unresolved | held.saturated
    if strict:
        unresolved = _errors.error_if(
            unresolved,
            unresolved,
            f"solvability(method='sparse'): the model has at least {found.sigma.shape[0]} "
            "independent motions, or nearly independent ones (a singular position is close), "
            "at this configuration, more than the sparse rank test resolves inside jit; call "
            "it eagerly (it enlarges its block) or use method='qr'",
        )
    modes = model.n - found.count
    rank = jnp.minimum(modes, model.num_rows)  # a resolved block never needs the cap
    rank_h = rank if rank_h is None else rank_h
    values = jnp.concatenate([found.sigma, found.sigma_max[None]])
    kept = jnp.concatenate([found.sigma > rtol * found.sigma_max, jnp.ones(1, bool)])
    margin = _margin(values, kept, rtol)
    Qt, converged = _sparse.self_stress_probes(model, C, found, rtol)
    unknown = (
        unresolved | (margin < _sparse.MARGIN_UNDECIDED) | ~converged | (modes > model.num_rows)
    )
    pairs, undecided = _undecided_sets(
        _analyse_local_sets(model, C, Qt, pair_sets, rtol, btol), unknown, btol
    )
    g_ok = g_b = g_count = g_undecided = None
    if groups:
        g_sets, g_undecided = _undecided_sets(
            _analyse_local_sets(model, C, Qt, group_sets, rtol, btol), unknown, btol
        )
        g_ok, g_b, _, _, g_count = g_sets
    ranks = (rank, rank_h, rank_n)
    return _report(
        model,
        "sparse",
        groups,
        ranks,
        pairs,
        (g_ok, g_b, g_count),
        margin,
        None,
        block_saturated=unresolved,
        undecided=undecided,
        group_undecided=g_undecided,
    )


def _undecided_sets(results, unknown, btol):
    """(results with `solvable` False where undecided, undecided): a set is undecided where
    the whole report is (`unknown`) or its estimate |B_X|_F / |C_X|_F is within the probes'
    spread B_SPREAD of btol."""
    ok, b_norm, b_rel, E, count = results
    near = (b_rel > btol / _sparse.B_SPREAD) & (b_rel <= btol * _sparse.B_SPREAD)
    undecided = unknown | near
    return (ok & ~undecided, b_norm, b_rel, E, count), undecided


class UndecidedSolvabilityWarning(UserWarning):
    """Method "sparse" could not decide some verdicts (`SolvabilityReport.undecided`): they
    are reported not solvable; method "qr" decides them."""


def warn_undecided(undecided, names, where, stacklevel=3):
    """Eagerly: warn when some of the per-pair flags `undecided` (any leading axes) are set."""
    known = _errors.concrete(undecided)
    if known is None or not np.any(known):
        return
    flags = np.reshape(np.asarray(known), (-1, len(names))).any(axis=0)
    listed = [nm for nm, bad in zip(names, np.asarray(flags, bool).tolist()) if bad]
    shown = ", ".join(listed[:8]) + (f" and {len(listed) - 8} more" if len(listed) > 8 else "")
    warnings.warn(
        f"{where}: the sparse solvability test cannot decide whether the reactions of {shown} "
        "are unique (a singular position is close, or a verdict is within the probes' spread "
        "of btol); they are marked undecided, not unique. "
        "mb.solvability(model, q, t, method='qr') decides them",
        UndecidedSolvabilityWarning,
        stacklevel=stacklevel,
    )


def reaction_flags(model, q, t, method):
    """The report behind `Reactions.solvable` (method "qr" or "sparse", the defaults' tolerances),
    never refused: a sparse block that does not resolve the modes (traced, it cannot grow)
    leaves every verdict undecided instead of raising."""
    return _solvability_compiled(model, q, t, method, (), RANK_RTOL, B_RTOL, None, False)


@contextlib.contextmanager
def suggesting_rows(model, q, t, where="here"):
    """Eagerly, when `check_removable` fails, add the rows that would work at (q, t)
    (`redundant_rows` of the solvability report; `where` says which state that is)."""
    try:
        yield
    except JaxmbError as err:
        if not is_concrete(q) or err.cause is None or not err.cause == RESULTS.not_removable:
            raise
        rows = solvability(model, q, t).redundant_rows
        hint = (
            f"Rows that form a removable set {where}: {rows}"
            if rows
            else f"No row is redundant {where} (p = 0): eliminate none, use method='min_norm'"
        )
        raise err.extended(hint) from None
