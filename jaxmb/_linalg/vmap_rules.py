"""Two pieces every `jax.custom_batching.custom_vmap` rule of jaxmb needs (`_linalg`, `_native`)."""

import jax
import jax.numpy as jnp


def full_batch(axis_size, in_batched, args):
    """custom_vmap's arguments, each with the batch axis in front (unbatched ones broadcast)."""
    return tuple(
        a if b else jnp.broadcast_to(a, (axis_size, *jnp.shape(a)))
        for a, b in zip(args, in_batched)
    )


def all_batched(out):
    """custom_vmap's batched-output flags for a rule whose outputs all carry the batch axis."""
    return out, jax.tree_util.tree_map(lambda _: True, out)
