"""Sparse SPD block Cholesky with a static pattern of 3x3 blocks, in pure JAX.

The matrix is ``A = M + C^T W C`` of a planar mechanism: one 3x3 block row and
column per body (x, y, phi).  Its block pattern (the body graph) is fixed when
the model is built; only the numbers change.  Work is split in two phases.

Build time (numpy only), :func:`analyse`:
    fill-reducing ordering P, elimination tree, block pattern of L with
    ``P A P^T = L L^T``, and a static schedule: the elimination-tree nodes are
    grouped into *levels* (``level(j) = 1 + max level(children of j)``, leaves
    are level 0).  Columns of one level are independent.  Consecutive levels are
    grouped into at most ``max_segments`` *segments*; inside a segment every
    level is padded to the segment's widest level so that one ``lax.scan`` runs
    the whole segment.  The program is therefore a fixed, short sequence of
    scans whatever the number of bodies, and compile time stays flat.

Run time (pure ``jnp``, jit / vmap / grad, CPU or GPU, no LAPACK calls):
    :func:`assemble` / :func:`assemble_cliques` build ``values`` (the lower
    block triangle of ``P A P^T``), :func:`cholesky` computes L, :func:`solve`
    applies ``A^{-1}``, :func:`matvec` applies ``A``, :func:`spd_solve` and
    :func:`factorize` give solves that are differentiable w.r.t. ``values`` and
    ``b`` by implicit differentiation (``lax.custom_linear_solve``).

Storage.  Block ``s`` of ``values`` / of the factor sits at block position
``(rows[s], cols[s])`` (``rows >= cols``, permuted numbering) of ``P A P^T`` /
of L.  Slots ``0..nb-1`` are the diagonal blocks (slot j = block (j, j)),
slots ``nb..num_a_blocks-1`` the off-diagonal blocks of A, the remaining slots
of the factor are fill-in.  The factor's diagonal slots hold ``L_jj^{-1}``
(lower triangular), so that the solves are block products only.  ``values``
must be symmetric (its diagonal blocks are used whole by :func:`matvec`, by
their lower triangle in :func:`cholesky`).

Non-positive pivots.  The 3x3 Cholesky takes ``1 / sqrt(where(d > 0, d, nan))``,
so a pivot ``d <= 0`` (A not SPD to working precision) or a NaN input makes
that block of the factor, the blocks that depend on it and the solution NaN;
nothing is raised inside jit.  Check with :func:`factor_ok` (or
``Factorization.ok``: all factor entries finite) and raise at the caller.
"""

from __future__ import annotations

import dataclasses
import hashlib
import heapq
from functools import partial

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

ORDERINGS = ("natural", "min_degree", "nested_dissection")


# --------------------------------------------------------------------------
# Build time: orderings (numpy / pure python)
# --------------------------------------------------------------------------


def _adjacency(num_blocks: int, edges: np.ndarray) -> list[set[int]]:
    adj = [set() for _ in range(num_blocks)]
    for i, j in edges.tolist():
        adj[i].add(j)
        adj[j].add(i)
    return adj


def _min_degree(adj: dict[int, set[int]]) -> list[int]:
    """Minimum-degree ordering of the graph ``adj`` (node -> neighbour set).

    Eliminates, on the explicit elimination graph, a node of least current
    degree (ties: smallest index) and joins its neighbours into a clique.
    """
    adj = {v: set(a) for v, a in adj.items()}
    heap = [(len(a), v) for v, a in adj.items()]
    heapq.heapify(heap)
    order = []
    while heap:
        degree, v = heapq.heappop(heap)
        if v not in adj or degree != len(adj[v]):
            continue  # eliminated or stale entry
        nbrs = adj.pop(v)
        order.append(v)
        for u in nbrs:
            a = adj[u]
            a |= nbrs
            a.discard(u)
            a.discard(v)
            heapq.heappush(heap, (len(a), u))
    return order


def _bfs_levels(adj: list[set[int]], start: int, inside: set[int]) -> list[list[int]]:
    """Breadth-first level structure of the subgraph induced by ``inside``."""
    seen = {start}
    levels = [[start]]
    while True:
        nxt = [u for v in levels[-1] for u in adj[v] if u in inside and u not in seen]
        nxt = list(dict.fromkeys(nxt))
        if not nxt:
            return levels
        seen.update(nxt)
        levels.append(nxt)


def _components(adj: list[set[int]], nodes: list[int]) -> list[list[int]]:
    inside, comps = set(nodes), []
    for v in nodes:
        if v in inside:
            comp = [u for level in _bfs_levels(adj, v, inside) for u in level]
            inside.difference_update(comp)
            comps.append(comp)
    return comps


def _bisect(adj: list[set[int]], comp: list[int]):
    """Vertex separator of a connected node set from a BFS level structure.

    Roots the BFS at a pseudo-peripheral node (repeated BFS from a
    minimum-degree node of the last level), takes the smallest level whose
    cumulative count lies in the middle third, and drops from it the nodes with
    no neighbour in the next level (they cannot connect the two halves).
    Returns ``(separator, part_a, part_b)`` or ``None`` if no split exists.
    """
    inside = set(comp)
    levels = _bfs_levels(adj, comp[0], inside)
    for _ in range(8):
        root = min(levels[-1], key=lambda v: len(adj[v]))
        candidate = _bfs_levels(adj, root, inside)
        if len(candidate) <= len(levels):
            break
        levels = candidate
    if len(levels) < 3:
        return None
    sizes = np.array([len(level) for level in levels])
    below = np.cumsum(sizes) - sizes  # nodes in earlier levels
    above = len(comp) - below - sizes
    balanced = (np.minimum(below, above) >= 0.3 * (len(comp) - sizes)) & (below > 0) & (above > 0)
    if not balanced.any():
        balanced = (below > 0) & (above > 0)
    k = int(np.argmin(np.where(balanced, sizes, len(comp) + 1)))
    nxt = set(levels[k + 1])
    separator = [v for v in levels[k] if not adj[v].isdisjoint(nxt)]
    part_a = [v for level in levels[:k] for v in level] + [
        v for v in levels[k] if adj[v].isdisjoint(nxt)
    ]
    part_b = [v for level in levels[k + 1 :] for v in level]
    return separator, part_a, part_b


def _nested_dissection(adj: list[set[int]], leaf_size: int = 16) -> list[int]:
    """Nested dissection: order part A, then part B, then their separator.

    Parts are split recursively (per connected component); pieces of at most
    ``leaf_size`` nodes, or pieces without a balanced split, are ordered by
    minimum degree.
    """
    order = []
    stack = [("split", list(range(len(adj))))]
    while stack:
        task, nodes = stack.pop()
        if task == "emit":
            order.extend(nodes)
            continue
        for comp in _components(adj, nodes):
            split = _bisect(adj, comp) if len(comp) > leaf_size else None
            if split is None:
                inside = set(comp)
                order.extend(_min_degree({v: adj[v] & inside for v in comp}))
            else:
                separator, part_a, part_b = split
                stack += [("emit", separator), ("split", part_b), ("split", part_a)]
    return order


def _ordering(adj: list[set[int]], ordering: str) -> np.ndarray:
    if ordering == "natural":
        order = list(range(len(adj)))
    elif ordering == "min_degree":
        order = _min_degree(dict(enumerate(adj)))
    elif ordering == "nested_dissection":
        order = _nested_dissection(adj)
    else:
        raise ValueError(f"unknown ordering {ordering!r}; use 'auto' or one of {ORDERINGS}")
    return np.asarray(order, dtype=np.int64)


# --------------------------------------------------------------------------
# Build time: symbolic factorization and schedule
# --------------------------------------------------------------------------


def _elimination(adj: list[set[int]]):
    """Column structures and elimination-tree levels of L (permuted numbering).

    ``struct[j] = ({i > j : A_ij != 0} | U_{children c} struct[c]) - {j}`` (sorted),
    ``parent[j] = min struct[j]``.
    """
    n = len(adj)
    struct, children, level = [], [[] for _ in range(n)], np.zeros(n, dtype=np.int64)
    for j in range(n):
        s = {i for i in adj[j] if i > j}
        for c in children[j]:
            s.update(struct[c])
            level[j] = max(level[j], level[c] + 1)
        s.discard(j)
        struct.append(sorted(s))
        if s:
            children[struct[j][0]].append(j)
    return struct, level


def _partition(cost: np.ndarray, max_segments: int) -> list[tuple[int, int]]:
    """Split levels ``0..L-1`` into at most ``max_segments`` contiguous runs.

    ``cost[l]`` holds level l's widths (columns, off-diagonal blocks, updates);
    a run costs ``len(run) * sum(max widths over the run)`` (its padded work).
    Exact dynamic programme, minimising the total padded work.
    """
    n = len(cost)
    k_max = min(max_segments, n)
    best = np.full((k_max + 1, n + 1), np.inf)
    best[0, 0] = 0.0
    start = np.zeros((k_max + 1, n + 1), dtype=np.int64)
    for e in range(1, n + 1):
        run_max = np.maximum.accumulate(cost[e - 1 :: -1], axis=0)[
            ::-1
        ]  # run_max[s] = max cost[s:e]
        run_cost = (e - np.arange(e)) * run_max.sum(axis=1)
        for k in range(1, k_max + 1):
            total = best[k - 1, :e] + run_cost
            start[k, e] = np.argmin(total)
            best[k, e] = total[start[k, e]]
    k = 1 + int(np.argmin(best[1:, n]))
    runs, e = [], n
    while e > 0:
        runs.append((int(start[k, e]), e))
        e, k = start[k, e], k - 1
    return runs[::-1]


@dataclasses.dataclass(frozen=True, eq=False)
class _Segment:
    """Padded index arrays for a run of ``n`` consecutive levels.

    Per level (leading axis): ``diag`` / ``node`` (n, C): factor slot of each
    column's diagonal block / its (permuted) node; ``off`` (n, O): factor slot
    of each sub-diagonal block of those columns, ``col`` its column (local
    index into the level's columns), ``row`` its row node; ``pair_a``,
    ``pair_b``, ``target`` (n, P): Schur update ``L[target] -= L_a L_b^T`` with
    a, b local indices into ``off``.  Padding: the last column and the last
    off-diagonal entry of every level are padding (column -> identity slot and
    trash node, off-diagonal -> zero slot); padded updates add 0 to the zero
    slot.  Padding thus only ever reads and writes padding.
    """

    diag: np.ndarray
    node: np.ndarray
    off: np.ndarray
    col: np.ndarray
    row: np.ndarray
    pair_a: np.ndarray
    pair_b: np.ndarray
    target: np.ndarray

    def xs(self, *names: str) -> dict[str, jax.Array]:
        return {name: jnp.asarray(getattr(self, name)) for name in names}


def _pad_stack(rows: list[np.ndarray], width: int, fill: int) -> np.ndarray:
    out = np.full((len(rows), width), fill, dtype=np.int32)
    for k, r in enumerate(rows):
        out[k, : len(r)] = r
    return out


@dataclasses.dataclass(frozen=True, eq=False)
class SymbolicCholesky:
    """Static (build-time) analysis of a block pattern; hashable by content.

    Use as an ``equinox`` static field: two analyses of the same pattern with
    the same options compare equal and hash alike, so jit reuses programs.
    ``perm[new] = old`` is the ordering P, ``iperm`` its inverse; ``rows``,
    ``cols`` the block positions of the factor slots (see module docstring).
    """

    num_blocks: int
    ordering: str
    perm: np.ndarray
    iperm: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    num_a_blocks: int
    edge_slot: np.ndarray
    edge_transposed: np.ndarray
    segments: tuple[_Segment, ...]
    digest: str

    def __hash__(self) -> int:
        return hash(self.digest)

    def __eq__(self, other) -> bool:
        return isinstance(other, SymbolicCholesky) and self.digest == other.digest

    @property
    def num_l_blocks(self) -> int:
        """Number of stored blocks of L (diagonal + off-diagonal + fill)."""
        return len(self.rows)

    @property
    def num_levels(self) -> int:
        return sum(len(s.diag) for s in self.segments)

    def slot(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Slots of A's blocks at permuted positions (rows >= cols)."""
        key = np.asarray(rows, np.int64) * self.num_blocks + np.asarray(cols, np.int64)
        a_key = self.rows[: self.num_a_blocks] * self.num_blocks + self.cols[: self.num_a_blocks]
        order = np.argsort(a_key)
        pos = np.minimum(np.searchsorted(a_key[order], key), len(order) - 1)
        slot = order[pos]
        if not np.array_equal(a_key[slot], key):
            raise ValueError("block position not in the analysed pattern")
        return slot


# Estimated run time of one level (its fixed op overhead) in units of the time
# of one padded block entry (column, off-diagonal block or Schur update) of the
# level schedule; least-squares fit of jitted factor+solve times on CPU
# (bench_sparse_cholesky.py).  Used by ordering="auto".
LEVEL_COST = 75.0


@dataclasses.dataclass(frozen=True)
class _Plan:
    """An ordering with its elimination structure and level partition."""

    ordering: str
    perm: np.ndarray
    iperm: np.ndarray
    struct: list[list[int]]
    level: np.ndarray
    runs: list[tuple[int, int]]
    cost: float  # LEVEL_COST * levels + padded block entries


def _plan(num_blocks: int, edges: np.ndarray, ordering: str, max_segments: int) -> _Plan:
    perm = _ordering(_adjacency(num_blocks, edges), ordering)
    iperm = np.empty_like(perm)
    iperm[perm] = np.arange(num_blocks)
    struct, level = _elimination(_adjacency(num_blocks, iperm[edges]))
    size = np.array([len(s) for s in struct], float)
    widths = np.stack(
        [np.bincount(level, weights=w) for w in (np.ones_like(size), size, size * (size + 1) / 2)],
        1,
    )
    runs = _partition(widths, max_segments)
    padded = sum((e - s) * (widths[s:e].max(axis=0) + [1, 1, 0]).sum() for s, e in runs)
    return _Plan(ordering, perm, iperm, struct, level, runs, LEVEL_COST * len(widths) + padded)


def analyse(
    num_blocks: int, edges, ordering: str = "auto", max_segments: int = 4
) -> SymbolicCholesky:
    """Build-time analysis of the symmetric block pattern (numpy only).

    Args:
      num_blocks: number of 3x3 block rows (bodies), ``nb``.
      edges: (E, 2) ints, off-diagonal block positions ``(i, j)``, ``i != j``,
        either order; duplicates are merged (their blocks summed by
        :func:`assemble`).
      ordering: "natural", "min_degree", "nested_dissection", or "auto": the
        one of "min_degree" / "nested_dissection" with the smaller estimated
        run time ``LEVEL_COST * levels + padded block entries``.
      max_segments: number of ``lax.scan`` segments of the schedule (compile
        time grows with it, padding waste shrinks with it).
    """
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if num_blocks < 1 or (edges.size and (edges.min() < 0 or edges.max() >= num_blocks)):
        raise ValueError("edges must index blocks 0..num_blocks-1")
    if np.any(edges[:, 0] == edges[:, 1]):
        raise ValueError("edges must be off-diagonal (i != j)")
    candidates = ("min_degree", "nested_dissection") if ordering == "auto" else (ordering,)
    plan = min(
        (_plan(num_blocks, edges, o, max_segments) for o in candidates), key=lambda p: p.cost
    )
    struct, level = plan.struct, plan.level

    # Slots: diagonal, then A's off-diagonal blocks, then fill (permuted numbering).
    pe = plan.iperm[edges]
    a_key, edge_slot = np.unique(pe.max(axis=1) * num_blocks + pe.min(axis=1), return_inverse=True)
    l_rows = np.concatenate([np.asarray(s, np.int64) for s in struct] + [np.zeros(0, np.int64)])
    l_cols = np.repeat(np.arange(num_blocks), [len(s) for s in struct])
    fill_key = np.setdiff1d(l_rows * num_blocks + l_cols, a_key)
    keys = np.concatenate([np.arange(num_blocks) * (num_blocks + 1), a_key, fill_key])
    key_order = np.argsort(keys)
    sorted_keys = keys[key_order]

    def slot_of(r, c):
        return key_order[np.searchsorted(sorted_keys, r * num_blocks + c)]

    # Per level: columns, off-diagonal entries, Schur-update pairs.
    levels = []
    for columns in np.split(np.argsort(level, kind="stable"), np.cumsum(np.bincount(level))[:-1]):
        sizes = [len(struct[j]) for j in columns]
        row = np.concatenate(
            [np.asarray(struct[j], np.int64) for j in columns] + [np.zeros(0, np.int64)]
        )
        col = np.repeat(np.arange(len(columns)), sizes)
        starts = np.cumsum([0] + sizes)
        tril = [np.tril_indices(m) for m in sizes]
        pa = np.concatenate(
            [start + a for start, (a, _) in zip(starts, tril)] + [np.zeros(0, np.int64)]
        )
        pb = np.concatenate(
            [start + b for start, (_, b) in zip(starts, tril)] + [np.zeros(0, np.int64)]
        )
        levels.append(
            dict(
                diag=columns,
                node=columns,
                off=slot_of(row, columns[col]),
                col=col,
                row=row,
                pair_a=pa,
                pair_b=pb,
                target=slot_of(row[pa], row[pb]),
            )
        )

    # Segments: padded stacks of consecutive levels.
    identity_slot, zero_slot = len(keys), len(keys) + 1
    segments = []
    for s, e in plan.runs:
        run = levels[s:e]
        c = 1 + max(len(lv["diag"]) for lv in run)  # +1: a padding column exists
        o = 1 + max(len(lv["off"]) for lv in run)  # +1: a padding entry exists
        p = max(1, max(len(lv["pair_a"]) for lv in run))

        def stack(name, width, fill, run=run):
            return _pad_stack([lv[name] for lv in run], width, fill)

        segments.append(
            _Segment(
                diag=stack("diag", c, identity_slot),
                node=stack("node", c, num_blocks),
                off=stack("off", o, zero_slot),
                col=stack("col", o, c - 1),
                row=stack("row", o, num_blocks),
                pair_a=stack("pair_a", p, o - 1),
                pair_b=stack("pair_b", p, o - 1),
                target=stack("target", p, zero_slot),
            )
        )

    digest = hashlib.sha1()
    for x in (np.array([num_blocks, max_segments]), plan.perm, keys, edges):
        digest.update(np.ascontiguousarray(x, np.int64).tobytes())
        digest.update(b"|")
    return SymbolicCholesky(
        num_blocks=num_blocks,
        ordering=plan.ordering,
        perm=plan.perm,
        iperm=plan.iperm,
        rows=keys // num_blocks,
        cols=keys % num_blocks,
        num_a_blocks=num_blocks + len(a_key),
        edge_slot=num_blocks + edge_slot.reshape(-1),
        edge_transposed=pe[:, 0] < pe[:, 1],
        segments=tuple(segments),
        digest=digest.hexdigest(),
    )


def clique_edges(bodies) -> np.ndarray:
    """Edges ``(u, v)`` of every pair of distinct bodies within each clique row
    of ``bodies`` (k, b); entries -1 (ground) are skipped.  Feed to :func:`analyse`."""
    bodies = np.asarray(bodies, np.int64).reshape(len(bodies), -1)
    r, s = np.triu_indices(bodies.shape[1], k=1)
    e = np.stack([bodies[:, r].ravel(), bodies[:, s].ravel()], axis=1)
    return e[(e >= 0).all(axis=1) & (e[:, 0] != e[:, 1])]


# --------------------------------------------------------------------------
# Run time: 3x3 block kernels (batched over leading axes, element by element)
# --------------------------------------------------------------------------


def _t(x: jax.Array) -> jax.Array:
    return jnp.swapaxes(x, -1, -2)


def _inverse_cholesky3(a: jax.Array) -> jax.Array:
    """``L^{-1}`` for the lower Cholesky factor L of symmetric 3x3 blocks
    (``a = L L^T``, lower triangle read), element by element:
    ``l_kk = sqrt(a_kk - sum_{m<k} l_km^2)``, ``l_ik = (a_ik - sum_{m<k} l_im l_km) / l_kk``,
    then the triangular inverse.  A pivot ``<= 0`` (or NaN) gives NaN."""

    def inv_sqrt(d):
        return 1.0 / jnp.sqrt(jnp.where(d > 0, d, jnp.nan))

    i00 = inv_sqrt(a[..., 0, 0])
    l10, l20 = a[..., 1, 0] * i00, a[..., 2, 0] * i00
    i11 = inv_sqrt(a[..., 1, 1] - l10 * l10)
    l21 = (a[..., 2, 1] - l20 * l10) * i11
    i22 = inv_sqrt(a[..., 2, 2] - l20 * l20 - l21 * l21)
    i10 = -l10 * i00 * i11
    i21 = -l21 * i11 * i22
    i20 = -(l20 * i00 + l21 * i10) * i22
    z = jnp.zeros_like(i00)
    return jnp.stack(
        [
            jnp.stack([i00, z, z], -1),
            jnp.stack([i10, i11, z], -1),
            jnp.stack([i20, i21, i22], -1),
        ],
        -2,
    )


# --------------------------------------------------------------------------
# Run time: assembly, factorization, solves
# --------------------------------------------------------------------------


def assemble(symbolic: SymbolicCholesky, diag_blocks=None, edge_blocks=None) -> jax.Array:
    """Lower block storage ``values`` (num_a_blocks, 3, 3) of ``P A P^T``.

    ``diag_blocks[i] = A_ii`` (nb, 3, 3), symmetric; ``edge_blocks[e] =
    A[edges[e, 0], edges[e, 1]]`` (E, 3, 3) for the edges given to
    :func:`analyse`, original numbering; duplicated edges are summed, the
    transpose ``A_ji = A_ij^T`` is implied.  Either may be None.  The result is
    linear in the inputs: contributions from several calls may be added.
    """
    values = jnp.zeros((symbolic.num_a_blocks, 3, 3))
    if diag_blocks is not None:
        values = values.at[: symbolic.num_blocks].add(jnp.asarray(diag_blocks)[symbolic.perm])
    if edge_blocks is not None:
        edge_blocks = jnp.asarray(edge_blocks)
        if edge_blocks.shape != (len(symbolic.edge_slot), 3, 3):
            raise ValueError(f"edge_blocks must have shape {(len(symbolic.edge_slot), 3, 3)}")
        lower = jnp.where(symbolic.edge_transposed[:, None, None], _t(edge_blocks), edge_blocks)
        values = values.at[symbolic.edge_slot].add(lower)
    return values


def assemble_cliques(symbolic: SymbolicCholesky, blocks, bodies) -> jax.Array:
    """``values`` of ``A = sum_c S_c^T blocks[c] S_c`` for dense clique blocks.

    ``blocks`` (k, 3b, 3b) symmetric, e.g. ``B_c^T W_c B_c`` of a constraint
    joining b bodies; ``bodies`` (k, b) static numpy ints, -1 = ground (row and
    column dropped).  ``S_c`` selects the 3x3 block rows of the bodies of c.
    Every body pair must be in the analysed pattern (see :func:`clique_edges`).
    """
    bodies = np.asarray(bodies, np.int64)
    k, b = bodies.shape
    c, r, s = (
        x.ravel() for x in np.meshgrid(np.arange(k), np.arange(b), np.arange(b), indexing="ij")
    )
    u, v = bodies[c, r], bodies[c, s]
    keep = (u >= 0) & (v >= 0)
    p, q = symbolic.iperm[np.maximum(u, 0)], symbolic.iperm[np.maximum(v, 0)]
    keep &= p >= q  # block (p, q) with p < q is the transpose of the kept (q, p)
    sub = (
        jnp.asarray(blocks)
        .reshape(k, b, 3, b, 3)
        .transpose(0, 1, 3, 2, 4)[c[keep], r[keep], s[keep]]
    )
    values = jnp.zeros((symbolic.num_a_blocks, 3, 3))
    return values.at[symbolic.slot(p[keep], q[keep])].add(sub)


def _factor_level(blocks: jax.Array, lv: dict[str, jax.Array]):
    """One level of right-looking block Cholesky on the slot array ``blocks``.

    For every column j of the level (all its updates already applied):
      ``L_jj = chol(A_jj)`` (stored as ``L_jj^{-1}``), ``L_ij = A_ij L_jj^{-T}``
      (i in struct j), ``A_ik -= L_ij L_kj^T`` for i >= k in struct j.
    Together: ``L_jj L_jj^T = A_jj - sum_k L_jk L_jk^T`` and
    ``L_ij = (A_ij - sum_k L_ik L_jk^T) L_jj^{-T}``.
    """
    inv = _inverse_cholesky3(blocks[lv["diag"]])
    blocks = blocks.at[lv["diag"]].set(inv)
    off = blocks[lv["off"]] @ _t(inv[lv["col"]])
    blocks = blocks.at[lv["off"]].set(off)
    update = off[lv["pair_a"]] @ _t(off[lv["pair_b"]])
    return blocks.at[lv["target"]].add(-update), None


def cholesky(symbolic: SymbolicCholesky, values: jax.Array) -> jax.Array:
    """Block Cholesky ``P A P^T = L L^T`` of symmetric ``values``.

    Returns the factor (num_l_blocks, 3, 3) in slot order (``symbolic.rows``,
    ``symbolic.cols``): off-diagonal slots hold ``L_ij``, diagonal slots hold
    ``L_jj^{-1}`` (so that the solves are products only).  NaN if A is not SPD.
    """
    n_fill = symbolic.num_l_blocks - symbolic.num_a_blocks
    blocks = jnp.concatenate(
        [values, jnp.zeros((n_fill, 3, 3)), jnp.eye(3)[None], jnp.zeros((1, 3, 3))]
    )
    for seg in symbolic.segments:
        blocks, _ = lax.scan(
            _factor_level, blocks, seg.xs("diag", "off", "col", "pair_a", "pair_b", "target")
        )
    return blocks[: symbolic.num_l_blocks]


def factor_ok(factor: jax.Array) -> jax.Array:
    """True iff the factorization succeeded (all pivots positive and finite)."""
    return jnp.all(jnp.isfinite(factor))


def _permuted_blocks(symbolic: SymbolicCholesky, b: jax.Array) -> jax.Array:
    """b (3 nb, ...) in original numbering -> (nb, 3, m) in permuted numbering."""
    return b.reshape(symbolic.num_blocks, 3, -1)[symbolic.perm]


def _original_vector(symbolic: SymbolicCholesky, y: jax.Array, shape) -> jax.Array:
    return y[symbolic.iperm].reshape(shape)


def _forward_level(blocks, y, lv):
    """``y_j = L_jj^{-1} y_j`` for the level's columns, then ``y_i -= L_ij y_j``."""
    yj = blocks[lv["diag"]] @ y[lv["node"]]
    y = y.at[lv["node"]].set(yj)
    return y.at[lv["row"]].add(-(blocks[lv["off"]] @ yj[lv["col"]])), None


def _backward_level(blocks, x, lv):
    """``x_j = L_jj^{-T} (x_j - sum_i L_ij^T x_i)`` for the level's columns."""
    ncol = lv["node"].shape[0]
    rhs = x[lv["node"]] - jax.ops.segment_sum(_t(blocks[lv["off"]]) @ x[lv["row"]], lv["col"], ncol)
    return x.at[lv["node"]].set(_t(blocks[lv["diag"]]) @ rhs), None


def solve(symbolic: SymbolicCholesky, factor: jax.Array, b: jax.Array) -> jax.Array:
    """``A^{-1} b`` from the factor: ``L y = P b`` by levels (forward),
    ``L^T z = y`` in reverse level order (backward), ``x = P^T z``.
    b is (3 nb,) or (3 nb, k), original numbering.  For gradients use
    :func:`spd_solve` / :class:`Factorization` (implicit differentiation)
    rather than differentiating through :func:`cholesky` and this function."""
    blocks = jnp.concatenate([factor, jnp.eye(3)[None], jnp.zeros((1, 3, 3))])
    y = _permuted_blocks(symbolic, b)
    y = jnp.concatenate([y, jnp.zeros((1,) + y.shape[1:], y.dtype)])  # trash row for padding
    for seg in symbolic.segments:
        y, _ = lax.scan(
            partial(_forward_level, blocks), y, seg.xs("diag", "node", "off", "col", "row")
        )
    for seg in reversed(symbolic.segments):
        y, _ = lax.scan(
            partial(_backward_level, blocks),
            y,
            seg.xs("diag", "node", "off", "col", "row"),
            reverse=True,
        )
    return _original_vector(symbolic, y[:-1], b.shape)


def matvec(symbolic: SymbolicCholesky, values: jax.Array, x: jax.Array) -> jax.Array:
    """``A x`` from ``values``; x is (3 nb,) or (3 nb, k), original numbering."""
    nb = symbolic.num_blocks
    xp = _permuted_blocks(symbolic, x)
    rows, cols = (
        symbolic.rows[nb : symbolic.num_a_blocks],
        symbolic.cols[nb : symbolic.num_a_blocks],
    )
    off = values[nb:]
    y = values[:nb] @ xp
    y = y.at[rows].add(off @ xp[cols])
    y = y.at[cols].add(_t(off) @ xp[rows])
    return _original_vector(symbolic, y, x.shape)


class Factorization(eqx.Module):
    """Factor once, solve many right-hand sides, differentiably.

    ``solve(b)`` is ``lax.custom_linear_solve(A x, b, L^{-T} L^{-1}, symmetric=True)``:
    the factor is a constant (no gradient through the factorization), the
    derivatives come from implicit differentiation, ``dx = A^{-1} (db - dA x)``,
    with ``dA`` through :func:`matvec` on ``values``.
    """

    symbolic: SymbolicCholesky = eqx.field(static=True)
    values: jax.Array
    factor: jax.Array

    @property
    def ok(self) -> jax.Array:
        return factor_ok(self.factor)

    def solve(self, b: jax.Array) -> jax.Array:
        return lax.custom_linear_solve(
            partial(matvec, self.symbolic, self.values),
            b,
            lambda _, r: solve(self.symbolic, self.factor, r),
            symmetric=True,
        )


def factorize(symbolic: SymbolicCholesky, values: jax.Array) -> Factorization:
    """:class:`Factorization` of ``values`` (factor computed under stop_gradient)."""
    return Factorization(symbolic, values, cholesky(symbolic, lax.stop_gradient(values)))


def spd_solve(symbolic: SymbolicCholesky, values: jax.Array, b: jax.Array) -> jax.Array:
    """Differentiable ``A^{-1} b`` (w.r.t. ``values`` and ``b``)."""
    return factorize(symbolic, values).solve(b)


def to_dense(symbolic: SymbolicCholesky, values: jax.Array) -> jax.Array:
    """Dense A (3 nb, 3 nb) in original numbering (tests, debugging)."""
    nb, na = symbolic.num_blocks, symbolic.num_a_blocks
    rows, cols = symbolic.perm[symbolic.rows[:na]], symbolic.perm[symbolic.cols[:na]]
    dense = jnp.zeros((nb, nb, 3, 3)).at[rows, cols].add(values)
    dense = dense.at[cols[nb:], rows[nb:]].add(_t(values[nb:]))
    return dense.transpose(0, 2, 1, 3).reshape(3 * nb, 3 * nb)
