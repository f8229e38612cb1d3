"""Values memoized within one JAX trace (private JAX API, fenced here).

A model's pairs keep their parameters as one array leaf per pair; the grouped evaluation
(`jaxmb._model.groups`) stacks them per group every time a term is formed. Inside one trace
(one jitted program) the leaves are the same objects each time, so the stacked arrays can be
reused instead of being stacked again: at 1200 pairs, restacking cost seconds of tracing and
compiling per simulate program. A value made inside a trace belongs to that trace, so the memo
is keyed by the trace that owns the inputs (the trace of their tracers, computed there with
`jax._src.core.set_current_trace` so that nested traces reuse it; else the trace being recorded,
`jax._src.core.trace_ctx`: no public API says which trace is current) and by the identity of
the inputs, which it keeps alive and compares by identity.
"""

import collections
import weakref

from jax._src import core as _core

_KEPT = 64


class PerTraceMemo:
    """f(*inputs) computed once per (trace, key, identical input objects)."""

    def __init__(self, kept: int = _KEPT):
        self._entries: collections.OrderedDict = collections.OrderedDict()
        self._kept = kept

    def get(self, key, inputs: tuple, make):
        """f = `make()` for these `inputs`: computed once in the trace that owns the inputs
        (`_owner`), so that the nested traces of one program (scan and cond bodies, the
        solver's step) reuse one value, captured from the enclosing trace."""
        current = _core.trace_ctx.trace
        trace = _owner(inputs, current)
        slot = (id(trace), key)
        entry = self._entries.get(slot)
        if (
            entry is not None
            and entry[0]() is trace
            and len(entry[1]) == len(inputs)
            and all(a is b for a, b in zip(entry[1], inputs))
        ):
            self._entries.move_to_end(slot)
            return entry[2]
        if trace is current:
            value = make()
        else:
            with _core.set_current_trace(trace):
                value = make()
        self._entries[slot] = (weakref.ref(trace), inputs, value)
        while len(self._entries) > self._kept:
            self._entries.popitem(last=False)
        return value


def _owner(inputs: tuple, current):
    """The trace whose tracers all the traced `inputs` are (it encloses the current one), or
    the current trace when there are none or several."""
    traces = {id(x._trace): x._trace for x in inputs if isinstance(x, _core.Tracer)}
    if len(traces) != 1:
        return current
    return next(iter(traces.values()))
