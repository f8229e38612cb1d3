"""Batches across devices: a 1-D device mesh and a NamedSharding of the leading (batch) axis.

    inputs = mb.batch.shard(inputs)                   # split the batch over all devices
    out = jax.jit(jax.vmap(run))(*inputs)             # XLA runs each shard on its device

The same code runs on one CPU, on several GPUs of one host, and on several hosts after
`jax.distributed.initialize()` (then `jax.devices()` lists every host's devices and each host
feeds its addressable shards; see the JAX multi-process documentation). On CPU,
`XLA_FLAGS=--xla_force_host_platform_device_count=4` exposes 4 host devices for testing.
"""

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

BATCH_AXIS = "batch"


def mesh(devices=None) -> Mesh:
    """A 1-D mesh over `devices` (default: all devices) with axis name "batch"."""
    devices = jax.devices() if devices is None else list(devices)
    return Mesh(np.asarray(devices), (BATCH_AXIS,))


def batch_sharding(devices=None) -> NamedSharding:
    """Shard the leading axis over the mesh, replicate the others."""
    return NamedSharding(mesh(devices), PartitionSpec(BATCH_AXIS))


def shard(tree, devices=None):
    """Place every array of `tree` with its leading axis split across the devices.

    Raises when the batch size is not a multiple of the number of devices (pad the batch)."""
    sharding = batch_sharding(devices)
    num = sharding.mesh.size
    leaves = jax.tree.leaves(tree)
    for leaf in leaves:
        size = np.shape(leaf)[0] if np.ndim(leaf) else None
        if size is None or size % num:
            raise ValueError(
                f"batch.shard: a leaf of shape {np.shape(leaf)} cannot be split over {num} "
                f"devices: the leading (batch) axis must be a multiple of {num}; pad the batch"
            )
    return jax.device_put(tree, sharding)


def num_shards(tree) -> int:
    """How many devices hold a piece of the first array of `tree` (1 when unsharded)."""
    leaf = jax.tree.leaves(tree)[0]
    return len(leaf.sharding.device_set)
