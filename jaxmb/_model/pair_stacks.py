"""Pairs of one type stored stacked: one element holding the parameters of k pairs.

A model of hundreds of identical joints (the hinges of a rotating-squares grid) built from
arrays would otherwise slice every pair's parameters out of the arrays, keep them as one leaf
per pair, and stack them again for the grouped evaluation (`jaxmb._model.groups`): in a traced
build, thousands of small operations, each with its transpose in a reverse-mode gradient. A
`PairStack` keeps the arrays as they are: its `template` is the pairs' common canonical form
(bodies renamed to local slots, `groups.canonical`) whose array leaves carry a leading axis of
length k, which is exactly what the grouped evaluation vmaps over. Pair m is

    template with every leaf x replaced by x[m] and every slot s by slots[m][s],

the same pair as adding it alone (rows, names and row order unchanged).
"""

import collections
import dataclasses
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..elements import AbstractPair
from ..elements._base import VALUE_PROBLEMS, VALUE_TESTS
from ..elements.geometry import Body, is_concrete, is_real
from .groups import (
    PairGroup,
    canonical,
    group_pairs,
    local_bodies,
    pair_group,
    relabelled,
    templates,
)
from .rows import row_table


class PairInfo(NamedTuple):
    """What a pair is without its numbers (static): `name`, `kind` (its element type),
    `num_rows`, `holonomic`, `bodies` (its `bodies()`, ground included)."""

    name: str
    kind: type
    num_rows: int
    holonomic: bool
    bodies: tuple[Body, ...]


class PairStack(eqx.Module):
    """k pairs of one element type with their parameters stacked (module docstring).

    **Fields:** `template` (the canonical pair, every array leaf with a leading axis of length
    k), `names` (k), `slots` (per pair, the body of each local slot of the template).
    """

    template: AbstractPair
    names: tuple[str, ...] = eqx.field(static=True)
    slots: tuple[tuple[Body, ...], ...] = eqx.field(static=True)

    def __len__(self) -> int:
        return len(self.names)

    def bodies_of(self, m: int) -> tuple[Body, ...]:
        """`bodies()` of pair m: the template's slots replaced by pair m's bodies."""
        real = self.slots[m]
        return tuple(b if b.is_ground else real[b.index] for b in self.template.bodies())

    def info(self) -> tuple[PairInfo, ...]:
        kind = type(self.template)
        return tuple(
            PairInfo(name, kind, kind.num_rows, kind.holonomic, self.bodies_of(m))
            for m, name in enumerate(self.names)
        )

    def member(self, m: int) -> AbstractPair:
        """Pair m as an element of its own (its leaves sliced out of the stack)."""
        one = jax.tree.map(lambda x: x[m], self.template)
        mapping = {Body("", s, 0, b.kind): b for s, b in enumerate(self.slots[m])}
        return relabelled(one, lambda b: mapping.get(b, b), self.names[m])


def stacked_pairs(kind, names, fields, check_handle) -> PairStack:
    """The `PairStack` of k = len(names) pairs `kind(names[m], **fields at m)` (body fields:
    sequences of k handles; the others: arrays with a leading axis of length k).

    The element is constructed once under `jax.vmap` with pair 0's bodies, so its own checks
    (shapes, bodies) run as for one pair; the values are checked here on the whole arrays
    (finite, and the element's `nonnegative`, `positive`, `nonzero`) where concrete, by
    `Mechanism.build` where traced. Every pair's bodies must take the slots of pair 0's
    (the same ones ground, the same ones equal), and are checked with `check_handle(body,
    fail)`."""
    if not (isinstance(kind, type) and issubclass(kind, AbstractPair)):
        raise TypeError(f"add_stacked: kind must be a pair type, got {kind!r}")
    k = len(names)
    label = f"add_stacked({kind.__name__})"

    def fail(problem):
        raise ValueError(f"{label}: {problem}")

    if k == 0:
        fail("no names given")
    for name in names:
        if not isinstance(name, str) or not name:
            fail(f"names must be non-empty strings, got {name!r}")
    handles = {
        f: tuple(v)
        for f, v in fields.items()
        if isinstance(v, (list, tuple)) and v and all(isinstance(b, Body) for b in v)
    }
    arrays = {}
    for f, v in fields.items():
        if f in handles:
            continue
        if not is_real(v):
            fail(f"{f} must be an array of numbers with a leading axis of {k}, got {v!r}")
        arrays[f] = jnp.asarray(v, jnp.float64)
        if arrays[f].ndim == 0 or arrays[f].shape[0] != k:
            fail(
                f"{f} must have a leading axis of {k} (one entry per pair), got shape "
                f"{arrays[f].shape}"
            )
    for f, bodies in handles.items():
        if len(bodies) != k:
            fail(f"{f} must hold {k} body handles (one per pair), got {len(bodies)}")
    first = {f: bodies[0] for f, bodies in handles.items()}
    if arrays:
        element = jax.vmap(lambda **a: kind(names[0], **first, **a))(**arrays)
    else:
        element = kind(names[0], **first)
    slots0 = local_bodies(element)
    slot_of = {f: (None if b.is_ground else slots0.index(b)) for f, b in first.items()}
    if {s for s in slot_of.values() if s is not None} != set(range(len(slots0))):
        fail("every body of the pair must be given as a field of body handles")
    slots = []
    for m, name in enumerate(names):
        mapping = {}
        for f, slot in slot_of.items():
            body = handles[f][m]
            check_handle(body, lambda problem: fail(f"pair {name!r}: {problem}"))
            if (slot is None) != body.is_ground or mapping.setdefault(slot, body) != body:
                fail(
                    f"pair {name!r} joins its bodies unlike pair {names[0]!r} (ground, "
                    "repeated bodies): stack only pairs of one pattern"
                )
        row = tuple(mapping[s] for s in range(len(slots0)))
        if len(set(row)) != len(row):
            fail(f"pair {name!r} joins a body to itself; the bodies must differ")
        slots.append(row)
    template = canonical(element)
    for path, leaf in jax.tree_util.tree_flatten_with_path(template)[0]:
        if not (eqx.is_inexact_array(leaf) and is_concrete(leaf)):
            continue
        field = jax.tree_util.keystr(path).lstrip(".")
        values = np.asarray(leaf, np.float64).reshape(k, -1)
        bad = ~np.all(np.isfinite(values), axis=1)
        if bad.any():
            m = int(np.argmax(bad))
            fail(f"pair {names[m]!r}: {field} = {values[m].tolist()} is not finite")
        for test in VALUE_TESTS:
            if field in getattr(kind, test):
                for m in range(k):
                    if VALUE_TESTS[test](values[m]):
                        fail(f"pair {names[m]!r}: {field} {VALUE_PROBLEMS[test]}")
    return PairStack(template, tuple(names), tuple(slots))


def expand(store) -> tuple[AbstractPair, ...]:
    """The pairs of a model's store (pairs and `PairStack`s, in row order), one element each."""
    out = []
    for entry in store:
        if isinstance(entry, PairStack):
            out += [entry.member(m) for m in range(len(entry))]
        else:
            out.append(entry)
    return tuple(out)


_KEPT = 128
_INFO: collections.OrderedDict = collections.OrderedDict()
_GROUPS: collections.OrderedDict = collections.OrderedDict()


def _memo(cache, key, make):
    value = cache.get(key)
    if value is None:
        value = cache[key] = make()
        while len(cache) > _KEPT:
            cache.popitem(last=False)
    return value


def _signature(store):
    """The store's static structure (element types, bodies, names, leaf layout)."""
    return tuple(jax.tree_util.tree_structure(entry) for entry in store)


def store_info(store) -> tuple[PairInfo, ...]:
    """`PairInfo` of every pair of the store, in row order, without touching its numbers
    (kept per structure)."""

    def make():
        out = []
        for entry in store:
            if isinstance(entry, PairStack):
                out += entry.info()
            else:
                kind = type(entry)
                out.append(
                    PairInfo(entry.name, kind, entry.num_rows, entry.holonomic, entry.bodies())
                )
        return tuple(out)

    return _memo(_INFO, _signature(store), make)


def group_store(store):
    """(source, groups) of the pairs of a model's store for `groups.evaluate`: the pairs added
    alone grouped by `groups.group_pairs`, every `PairStack` a group of its own (its template
    is the group's stacked canonical pair: nothing is sliced or stacked). Members are indices
    into the expanded pairs (`expand`)."""

    def make():
        starts = row_table(store_info(store)).starts
        alone, groups, k = {}, [], 0
        for e, entry in enumerate(store):
            if isinstance(entry, PairStack):
                count, rows = len(entry), entry.template.num_rows
                rows = starts[k : k + count, None] + np.arange(rows, dtype=np.int64)[None]
                groups.append(pair_group(range(k, k + count), entry.slots, rows, stack=e))
                k += count
            else:
                alone[k] = e
                k += 1
        keys = list(alone)
        found = group_pairs([store[alone[i]] for i in keys], starts[keys]) if keys else []
        groups += [dataclasses.replace(g, members=tuple(keys[m] for m in g.members)) for g in found]
        return alone, groups

    alone, groups = _memo(_GROUPS, _signature(store), make)
    by_index = {k: store[e] for k, e in alone.items()}
    plain = templates(by_index)

    def source(group: PairGroup):
        if group.stack is not None:
            return store[group.stack].template, False
        return plain(group)

    return source, groups
