# pyright: reportPrivateImportUsage=false
# (this module is the seam to JAX's tracing and export internals)
"""Stored programs called from inside the user's transformations (private JAX API, fenced here).

A program of the store (`jaxmb._runtime.program_store`) called while the user's `jax.jit` or
`jax.grad` traces jaxmb is a `jax.export.Exported`:

- under reverse mode (`jax.grad`, `value_and_grad`, `vjp`, `jacrev`: linearize tracers) two
  programs (`program_store._export_reverse`): the forward, which also returns the residuals
  of `jax.vjp`, and the backward pass, which takes them with the output cotangents, behind a
  `custom_vjp`: neither is traced again, and the backward pass does not recompute the
  forward;
- under `jax.jit` alone it is the stored forward program behind a `custom_jvp` whose rule is
  the ordinary path's JVP, traced only if a transformation applied later to the user's jitted
  function differentiates it (`jax.grad(jax.jit(f))`, `jax.jacfwd(jax.jit(f))`).

`call_exported` has no batching rule in JAX; one is registered here: a forward program called
under jit alone is batched as the ordinary path is (`jax.vmap` of the traced function), any
other exported program (the reverse-mode pair, e.g. the backward pass under `jacrev`'s vmap
over cotangents) is mapped sequentially with `lax.map`, which is correct for every program.
A call whose inputs carry `vmap` or forward-mode (`jax.jvp`, `jacfwd`) tracers, or tracers of
any other transformation, takes the ordinary path (`storable` says which).
"""

import jax
import jax.core
import numpy as np
from jax._src import dtypes
from jax._src.export import _export
from jax._src.interpreters import ad, batching, partial_eval as pe

_PRIMITIVE = _export.call_exported_p
_originals: dict = {}  # id(Exported) -> (Exported, the traced function it was exported from)


def storable(leaves) -> str | None:
    """How a call with these (traced) input leaves may use a stored program: "reverse" (reverse
    mode, possibly under jit), "jit" (jit only), or None (vmap, forward mode, another
    transformation: the ordinary path)."""
    kinds = set()
    for x in leaves:
        _kinds(x, kinds)
    if not kinds <= {"linearize", "jit", "value"}:
        return None
    return "reverse" if "linearize" in kinds else "jit"


def _kinds(x, out):
    while True:
        if isinstance(x, ad.LinearizeTracer):
            out.add("linearize")
            x = x.primal
        elif isinstance(x, pe.DynamicJaxprTracer):
            out.add("jit")
            return
        elif isinstance(x, jax.core.Tracer):  # vmap, jvp, any other transformation
            out.add(type(x).__name__)
            return
        else:
            out.add("value")
            return


def call(exported, backward, original, inputs, mode):
    """The outputs of `exported` (flat list) at the traced `inputs`; for reverse mode
    `exported` also returns the residuals that the program `backward` takes with the output
    cotangents; `original` is the function they were exported from (the ordinary path, for
    the transformations they cannot serve)."""
    if mode == "reverse":  # batched (outside a jit) by lax.map: it also returns residuals
        return _with_stored_vjp(exported, backward)(*inputs)
    _register(exported, original)
    return _with_ordinary_jvp(exported, original)(*inputs)


def _with_stored_vjp(forward, backward):
    def run_forward(*inputs):
        flat = _PRIMITIVE.bind(*inputs, exported=forward)
        return forward.out_tree.unflatten(flat)

    @jax.custom_vjp
    def run(*inputs):
        return run_forward(*inputs)[0]

    def run_fwd(*inputs):
        return run_forward(*inputs)

    def run_bwd(residuals, cts):
        count = len(residuals)
        cts = [
            np.zeros(a.shape, a.dtype) if a.dtype == dtypes.float0 else ct
            for ct, a in zip(jax.tree.leaves(cts), backward.in_avals[count:])
        ]
        return tuple(_PRIMITIVE.bind(*residuals, *cts, exported=backward))

    run.defvjp(run_fwd, run_bwd)
    return run


def _register(exported, original):
    _originals[id(exported)] = (exported, original)
    if len(_originals) > 256:  # the oldest first (dicts keep insertion order)
        del _originals[next(iter(_originals))]


def _with_ordinary_jvp(exported, original):
    @jax.custom_jvp
    def run(*inputs):
        flat = _PRIMITIVE.bind(*inputs, exported=exported)
        return exported.out_tree.unflatten(flat)

    @run.defjvp
    def run_jvp(primals, tangents):
        return jax.jvp(original, primals, tangents)

    return run


def _batch(axis_data, args, dims, *, exported):
    """`call_exported` under vmap (see the module docstring)."""
    mapped = [d is not None for d in dims]
    if not any(mapped):
        outs = _PRIMITIVE.bind(*args, exported=exported)
        return outs, [None] * len(outs)
    known = _originals.get(id(exported))
    if known is not None and known[0] is exported:
        in_axes = [d if m else None for d, m in zip(dims, mapped)]
        outs = jax.vmap(known[1], in_axes=in_axes)(*args)
        flat = jax.tree.leaves(outs)
        return flat, [0] * len(flat)
    moved = [batching.moveaxis(a, d, 0) if m else a for a, d, m in zip(args, dims, mapped)]

    def one(xs):
        it = iter(xs)
        full = [next(it) if m else a for a, m in zip(moved, mapped)]
        return _PRIMITIVE.bind(*full, exported=exported)

    outs = jax.lax.map(one, [a for a, m in zip(moved, mapped) if m])
    return list(outs), [0] * len(outs)


if _PRIMITIVE not in batching.fancy_primitive_batchers:
    batching.fancy_primitive_batchers[_PRIMITIVE] = _batch
