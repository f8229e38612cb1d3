"""Batches across cores, GPUs and hosts: a 1-D device mesh over the leading (batch) axis.

    mb.batch.use_all_cores()                    # CPU: one device per core (before any JAX work)
    out = mb.batch.map(run, amplitudes, speeds) # every device maps its shard in vmapped chunks

`map` pads the batch to whole chunks per device, gives each device its shard (`jax.shard_map`
over the mesh) and, on each device, maps the shard through `jax.lax.map(run, batch_size=chunk)`:
a vmapped `run` per chunk. Two things follow:

- every core works: XLA:CPU runs one program per device, each on its own thread, so on a
  CPU the batch spreads over the cores once there is one CPU device per core. That is the one
  switch, `use_all_cores()` (or the environment variable `JAXMB_CPU_DEVICES=all` or a count,
  read when jaxmb is imported); it must come before JAX starts its CPU backend.
- no lock-step waste beyond a chunk: a vmapped adaptive integration runs as many steps as its
  slowest member for every member; in chunks, a member waits only for the slowest of its chunk.
  With `cost=` (an estimate per member, or a function giving one, e.g. the step count of a
  loose-tolerance pilot run) the members are sorted so that each chunk holds members of
  similar cost, and the chunks are dealt to the devices in turn so that every device gets a
  similar load; the results come back in the caller's order.

The same code runs on several GPUs of one host, and on several hosts after
`jax.distributed.initialize()` (then `jax.devices()` lists every host's devices and each host
feeds its addressable shards; see the JAX multi-process documentation).
`shard`, `mesh` and `batch_sharding` are the lower-level pieces for a hand-written
`jax.jit(jax.vmap(run))` on sharded inputs; jaxmb's compiled batched kernels carry a
partitioning rule, so there too each device factorizes its own shard.
"""

import os
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from jaxtyping import ArrayLike, PyTree, Real

BATCH_AXIS = "batch"
Devices = Sequence[jax.Device]  # pyright: ignore[reportInvalidTypeForm]
"""A sequence of jax devices (jax.Device is an alias that pyright does not read as a class)."""

DEFAULT_CHUNK = 64
"""Members vmapped together on one device by `map` (a chunk runs its slowest member's steps)."""


def use_all_cores(count: int | None = None) -> int:
    """Expose `count` CPU devices (default: the number of cores this process may use), so that
    `map` and sharded batches run on every core. Call before any JAX computation: the CPU
    backend reads the count when it starts (JAX raises if it has already started)."""
    if count is None:
        count = (
            len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else (os.cpu_count() or 1)
        )
    count = int(count)
    if count < 1:
        raise ValueError(f"batch.use_all_cores: count must be at least 1, got {count}")
    jax.config.update("jax_num_cpu_devices", count)
    return count


def mesh(devices: Devices | None = None) -> Mesh:
    """A 1-D mesh over `devices` (default: all devices) with axis name "batch"."""
    devices = jax.devices() if devices is None else list(devices)
    return Mesh(np.asarray(devices), (BATCH_AXIS,))


def batch_sharding(devices: Devices | None = None) -> NamedSharding:
    """Shard the leading axis over the mesh, replicate the others."""
    return NamedSharding(mesh(devices), PartitionSpec(BATCH_AXIS))


def _batch_size(leaves, where) -> int:
    sizes = {np.shape(leaf)[0] for leaf in leaves if np.ndim(leaf)}
    if len(sizes) != 1 or not all(np.ndim(leaf) for leaf in leaves):
        raise ValueError(
            f"{where}: every input needs the same leading (batch) axis; got shapes "
            f"{[np.shape(leaf) for leaf in leaves]}"
        )
    return sizes.pop()


def shard(tree: PyTree, devices: Devices | None = None) -> PyTree:
    """Place every array of `tree` with its leading axis split across the devices.

    Raises when the batch size is not a multiple of the number of devices (pad the batch)."""
    sharding = batch_sharding(devices)
    num = sharding.mesh.size
    for leaf in jax.tree.leaves(tree):
        size = np.shape(leaf)[0] if np.ndim(leaf) else None
        if size is None or size % num:
            raise ValueError(
                f"batch.shard: a leaf of shape {np.shape(leaf)} cannot be split over {num} "
                f"devices: the leading (batch) axis must be a multiple of {num}; pad the batch"
            )
    return jax.device_put(tree, sharding)


def num_shards(tree: PyTree) -> int:
    """How many devices hold a piece of the first array of `tree` (1 when unsharded)."""
    leaf = jax.tree.leaves(tree)[0]
    return len(leaf.sharding.device_set)


_programs: dict = {}


def _program(fn, chunk, devices, keep):
    key = (fn, chunk, tuple(devices), keep)
    if key not in _programs:
        m = mesh(devices)
        spec = PartitionSpec(BATCH_AXIS)

        def member(x):
            y = fn(*x)
            if not jax.tree.leaves(y):
                raise ValueError(
                    f"batch.map: fn returned {y!r}; it must return an array or a pytree of "
                    "arrays (one result per member)"
                )
            return y

        def local(*xs):  # one device's shard, in vmapped chunks; its first `keep` results
            ys = jax.lax.map(member, xs, batch_size=chunk)
            return jax.tree.map(lambda y: y[:keep], ys)

        _programs[key] = jax.jit(
            jax.shard_map(local, mesh=m, in_specs=spec, out_specs=spec, check_vma=False)
        )  # equinox checks: no vma types
    return _programs[key]


def map(  # noqa: A001 (mb.batch.map reads well)
    fn: Callable[..., Any],
    *xs: PyTree,
    chunk: int = DEFAULT_CHUNK,
    devices: Devices | None = None,
    cost: Callable[..., Any] | Real[ArrayLike, " batch"] | None = None,
) -> PyTree:
    """`fn` over the leading axis of the arrays `xs` (pytrees allowed), on every device, each
    device mapping its shard in vmapped chunks of `chunk` members. Returns the outputs with the
    batch axis first, as `jax.vmap(fn)(*xs)` would (equal to it member by member; sharded
    programs may round differently, which can move an adaptive step).

    `cost`: None (members in the given order), an array of one cost estimate per member, or a
    function `cost(*member)` returning one (run through `map` before `fn`; its time counts). The
    members are then sorted by cost and the sorted chunks dealt to the devices in turn, so
    members of similar cost share a chunk: a vmapped adaptive integration runs its slowest
    member's steps for the whole chunk. A good estimate for `simulate` is the step count of
    the same run at a loose tolerance (`Trajectory.num_steps`); a bad one only costs speed.

    One compilation per (fn, chunk, devices, input shapes): pass the same `fn` object to reuse
    it. Each device gets an equal share of the batch; where `chunk` does not divide a share,
    it is lowered to a divisor of it down to half its value, else the share is padded with
    copies of a member and each device drops its padding itself. So the results stay where
    they were computed: moving rows between devices (a slice or gather of the sharded result)
    cost three times the analysis for a full solvability report (`benchmarks/
    bench_solvability.py`, design measurement D8). Only a batch that is not a multiple of
    the device count, or a `cost` order, is put back in order across devices."""
    devices = jax.devices() if devices is None else list(devices)
    _check_inputs(xs)
    leaves = jax.tree.leaves(xs)
    size = _batch_size(leaves, "batch.map")
    if size == 0:
        raise ValueError("batch.map: the batch is empty")
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise ValueError(
            f"batch.map: chunk must be an integer >= 1 (members per vmapped call), got {chunk!r}"
        )
    chunk = int(chunk)
    if not devices or not all(isinstance(d, jax.Device) for d in devices):
        raise ValueError(
            "batch.map: devices must be a non-empty sequence of jax devices "
            f"(e.g. jax.devices()), got {devices!r}"
        )
    twice = [d for k, d in enumerate(devices) if d in devices[:k]]
    if twice:
        raise ValueError(
            f"batch.map: devices lists {twice[0]} more than once; each device takes one share "
            "of the batch (pass distinct devices, e.g. jax.devices())"
        )
    num = len(devices)
    share = -(-size // num)  # members per device
    chunk = _fitted_chunk(min(chunk, share), share)
    per_device = -(-share // chunk) * chunk
    costs = _costs(cost, xs, size, chunk, devices)
    if costs is None:
        order, keep = _shared_order(size, share, per_device, num), share
    else:
        order = _dealt_order(costs, size, per_device * num - size, chunk, num)
        keep = per_device
    xs = shard(jax.tree.map(lambda x: jnp.asarray(x)[order], xs), devices)
    out = _program(fn, chunk, devices, keep)(*xs)
    if costs is None:
        return out if share * num == size else jax.tree.map(lambda y: y[:size], out)
    _, first = np.unique(order, return_index=True)  # each member's (first) slot
    return jax.tree.map(lambda y: y[first], out)


def _check_inputs(xs):
    """Refuse inputs that are not arrays with a batch axis, naming the input: a list (JAX
    reads it as a pytree of scalars, not as an axis), text or objects."""
    for k, x in enumerate(xs):
        for path, leaf in jax.tree_util.tree_flatten_with_path(x)[0]:
            where = f"input {k}{jax.tree_util.keystr(path)}"
            if isinstance(x, (list, tuple)) and not isinstance(leaf, (jax.Array, np.ndarray)):
                raise ValueError(
                    f"batch.map: input {k} is a {type(x).__name__} of "
                    f"{type(leaf).__name__}s; pass an array with the batch on its leading axis "
                    "(e.g. np.asarray(...))"
                )
            dtype = leaf.dtype if isinstance(leaf, jax.Array) else np.asarray(leaf).dtype
            if not (np.issubdtype(dtype, np.number) or np.issubdtype(dtype, np.bool_)):
                raise ValueError(
                    f"batch.map: {where} has dtype {dtype}; only numeric or boolean arrays "
                    "can be mapped"
                )


def _fitted_chunk(chunk, share):
    """The largest divisor of `share` from `chunk` down to half of it (no padding), else
    `chunk`."""
    for c in range(chunk, max(chunk // 2, 1) - 1, -1):
        if share % c == 0:
            return c
    return chunk


def _shared_order(size, share, per_device, num_devices):
    """Member index per slot without cost: device d holds members d share .. (d + 1) share - 1
    in order, then copies of its last member up to `per_device` slots (dropped on the device)."""
    slots = []
    for d in range(num_devices):
        members = np.arange(d * share, min((d + 1) * share, size))
        last = members[-1] if members.size else size - 1
        slots.append(np.concatenate([members, np.full(per_device - members.size, last)]))
    return np.concatenate(slots)


def _costs(cost, xs, size, chunk, devices):
    """One finite cost estimate per member as a numpy array, or None; a cost function runs
    through `map` itself (every device, in chunks)."""
    if cost is None:
        return None
    if callable(cost):
        cost = map(cost, *xs, chunk=chunk, devices=devices)
    cost = np.asarray(cost, dtype=np.float64)
    if cost.shape != (size,):
        raise ValueError(
            f"batch.map: cost must give one value per member, shape ({size},); "
            f"got shape {cost.shape}"
        )
    if not np.all(np.isfinite(cost)):
        raise ValueError(
            "batch.map: cost has non-finite values (members "
            f"{np.flatnonzero(~np.isfinite(cost))[:10].tolist()})"
        )
    return cost


def _dealt_order(cost, size, pad, chunk, num_devices):
    """Member index per slot of the padded, sharded batch, by cost: sorted by cost (padded with
    copies of the costliest member, which lengthen no chunk), cut into chunks, and chunk c
    dealt to device c mod num_devices, so the devices' loads match."""
    ranked = np.argsort(cost, kind="stable")
    ranked = np.concatenate([ranked, np.full(pad, ranked[-1])])
    chunks = ranked.reshape(-1, num_devices, chunk)  # round r: one chunk per device
    return chunks.transpose(1, 0, 2).reshape(-1)
