"""Pairs of one type evaluated together: one vmapped kernel per group instead of a Python loop.

Two pairs fall in the same group when they are the same element type with the same static
layout once their bodies are renamed to local slots (body 0, body 1, ...; ground stays ground)
and their names dropped: e.g. all body-to-body revolutes of a model form one group, all
revolutes to ground another. A group stacks the array leaves of its pairs along a new leading
axis and evaluates the pair's own residual on the local coordinates

    q_local[k] = q[coords[k]]    (coords[k]: the coordinates of each non-ground body of pair k)

under `jax.vmap`. The traced program then has one copy of each pair type's residual instead of
one per pair, so compile time stops growing with the number of pairs (../shared/STYLE.md,
MuJoCo XLA). Rows keep the declaration order of the pairs: `rows[k]` are the rows of C of the
k-th pair of the group.
"""

import collections
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._runtime.tracing import PerTraceMemo
from ..elements.geometry import Body


@dataclasses.dataclass(frozen=True)
class PairGroup:
    """Static description of one group.

    **Fields:** `members` (indices of the pairs in `model.pairs`), `coords` (k, nq b) int array
    of the position coordinates of each pair's b bodies in q, `rows` (k, r) int array of rows
    of C per pair, `columns` (k, nv b) the same bodies' velocity coordinates in v (the columns
    of C; the array `coords` itself where a body's q and v share a layout, planar), `bodies`
    (k, b) the bodies' indices, `stack` (the index of the `PairStack` in the model's store that
    holds the group, or None: `jaxmb._model.pair_stacks`).
    """

    members: tuple[int, ...]
    coords: np.ndarray
    rows: np.ndarray
    columns: np.ndarray
    bodies: np.ndarray
    stack: int | None = None


def pair_group(members, bodies_per_pair, rows, stack=None) -> PairGroup:
    """The `PairGroup` of `members` whose pairs act on `bodies_per_pair` (per pair, its
    non-ground body handles in slot order)."""
    k = len(members)

    def table(read):
        values = [[c for b in bodies for c in read(b)] for bodies in bodies_per_pair]
        return np.array(values, dtype=np.int64).reshape(k, -1)

    coords, columns = table(Body.coordinates), table(Body.columns)
    if np.array_equal(coords, columns):
        columns = coords
    return PairGroup(tuple(members), coords, rows, columns, table(lambda b: (b.index,)), stack)


def local_bodies(pair) -> tuple[Body, ...]:
    return tuple(b for b in dict.fromkeys(pair.bodies()) if not b.is_ground)


def relabelled(pair, body, name: str):
    """`pair` with every body b of its fields (also in tuples of bodies) replaced by body(b)
    and its name by `name` (same leaves, no checks run)."""

    def relabel(value):
        if isinstance(value, Body):
            return body(value)
        if isinstance(value, tuple) and value and all(isinstance(v, Body) for v in value):
            return tuple(body(v) for v in value)
        return value

    new = object.__new__(type(pair))
    for field in dataclasses.fields(pair):
        value = name if field.name == "name" else relabel(getattr(pair, field.name))
        object.__setattr__(new, field.name, value)
    return new


def canonical(pair):
    """`pair` with its bodies renamed to local slots and its name dropped (same leaves)."""
    slots = {b: Body("", k, 0, b.kind) for k, b in enumerate(local_bodies(pair))}
    return relabelled(pair, lambda b: slots.get(b, b), "")


def _is_array_like(x) -> bool:
    return isinstance(x, (jax.Array, np.ndarray, np.generic, bool, int, float, complex))


def _key(template, k):
    """Grouping key: tree structure plus leaf shapes and dtypes. A pair with a leaf that is not
    an array (say a Python function held by a custom drive) cannot be stacked: it gets a key of
    its own and is evaluated alone."""
    leaves, treedef = jax.tree_util.tree_flatten(template)
    if not all(_is_array_like(x) for x in leaves):
        return ("alone", k)
    return treedef, tuple((jnp.shape(x), jnp.result_type(x)) for x in leaves)


_GROUPINGS: collections.OrderedDict = collections.OrderedDict()
_GROUPINGS_KEPT = 128


def group_pairs(pairs, row_starts=None) -> list[PairGroup]:
    """Partition `pairs` into groups of identical canonical structure (first-seen order);
    without `row_starts` (elements without rows: forces) the groups' `rows` are empty.

    The grouping depends on the pairs' static structure only (their tree structures, which
    hold the element types, body handles and static options, and the row layout), so it is
    kept per structure: a model traced again, or read in several places of one trace, is
    grouped once (grouping costs a canonical copy of every pair)."""
    starts = None if row_starts is None else tuple(row_starts)
    signature = (tuple(jax.tree_util.tree_structure(p) for p in pairs), starts)
    groups = _GROUPINGS.get(signature)
    if groups is None:
        groups = _GROUPINGS[signature] = _group(pairs, row_starts)
        while len(_GROUPINGS) > _GROUPINGS_KEPT:
            _GROUPINGS.popitem(last=False)
    return groups


def _group(pairs, row_starts) -> list[PairGroup]:
    found: dict = {}
    for k, pair in enumerate(pairs):
        found.setdefault(_key(canonical(pair), k), []).append(k)
    groups = []
    for members in found.values():
        rows = np.array(
            [
                np.arange(row_starts[k], row_starts[k] + pairs[k].num_rows)
                if row_starts is not None
                else []
                for k in members
            ],
            dtype=np.int64,
        ).reshape(len(members), -1)
        groups.append(pair_group(members, [local_bodies(pairs[k]) for k in members], rows))
    return groups


_STACKED = PerTraceMemo()


def stacked(pairs, group: PairGroup):
    """The canonical pairs of `group` with their array leaves stacked along axis 0: the tree
    structure of the first member's canonical copy (a canonical copy has the same leaves, in
    the same order, as its pair: only static fields change), every member's leaves stacked;
    once per trace for the same leaves (`jaxmb._runtime.tracing`)."""
    leaves = [jax.tree_util.tree_leaves(pairs[k]) for k in group.members]
    flat = tuple(x for member in leaves for x in member)

    def make():
        template = jax.tree_util.tree_structure(canonical(pairs[group.members[0]]))
        columns = [jnp.stack(column) for column in zip(*leaves)]
        return jax.tree_util.tree_unflatten(template, columns)

    return _STACKED.get(group.members, flat, make)


Template = Callable[["PairGroup"], tuple[Any, bool]]
"""`template(group) -> (pair, alone)`: the group's canonical pair (its leaves stacked unless
`alone`, a group of one pair)."""


def templates(pairs) -> Template:
    """The `template(group)` of a plain sequence of pairs (`evaluate`'s `source`)."""

    def template(group: PairGroup) -> tuple[Any, bool]:
        if len(group.members) == 1:  # no stacking (the pair may hold non-array leaves)
            return canonical(pairs[group.members[0]]), True
        return stacked(pairs, group), False

    return template


def evaluate(source: Template | Sequence[Any], groups, fn, q, *velocities):
    """Stack fn(pair, q local, *velocities local) over all pairs, grouped; returns a list per
    group.

    `fn(pair, *locals)` is called on one canonical pair with the positions q gathered to its
    bodies' position coordinates (`coords`) and each of `velocities` (vectors over v: the
    velocities, generalized forces) to their velocity coordinates (`columns`); the result has a
    leading axis over the members of each group. `source` gives each group's canonical pairs: a
    sequence of pairs, or a function group -> (canonical pair, alone), stacked along axis 0
    unless `alone`.
    """
    template = source if callable(source) else templates(source)
    outs = []
    for group in groups:
        local = [q[group.coords]] + [v[group.columns] for v in velocities]
        pair, alone = template(group)
        if alone:
            out = fn(pair, *(x[0] for x in local))
            outs.append(jax.tree_util.tree_map(lambda x: x[None], out))
        else:
            outs.append(jax.vmap(fn)(pair, *local))
    return outs


def scatter_rows(groups, values, num_rows, dtype):
    """Assemble per-group (k, r, ...) row blocks into the (num_rows, ...) array in row order."""
    if not groups:
        return jnp.zeros((num_rows,), dtype)
    order = np.concatenate([g.rows.reshape(-1) for g in groups])
    flat = jnp.concatenate([v.reshape((-1,) + v.shape[2:]) for v in values])
    return flat[np.argsort(order)]
