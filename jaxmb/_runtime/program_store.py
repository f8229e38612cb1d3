"""Traced programs kept on disk (`jax.export`), so that a later process neither traces nor
compiles them.

JAX's persistent compilation cache (`enable_compilation_cache`) spares a second process XLA's
compile, but every eager call still *traces* and lowers its program first (a third of a
command, design measurement D5). While the cache is on, each `checked_jit` program
(`jaxmb._runtime.errors`) called eagerly is therefore also exported (`jax.export`: the lowered
StableHLO, serialized) to `<cache>/jaxmb-programs/<key>`, with what the caller needs besides
the arrays (the output's structure and the check messages); a later call with the same key
deserializes it and runs it, and its compile is a cache hit.

The key must change whenever the program could: it is a SHA-256 over
- the function (module and qualified name);
- the arguments' structure: every type (module, qualified name), every static value (numbers
  and strings by repr, arrays held in static fields by their bytes), every array argument by
  shape, dtype and weak type (their values are the program's inputs, not part of it);
- the source of the jaxmb package (every file, the compiled kernels' C++ included), the
  versions of Python, jax, jaxlib, equinox, diffrax, optimistix, lineax, numpy, the JAX
  settings that change a traced program and which batched kernels are in use (`_native`).

Anything the key cannot pin makes the call take the ordinary path (trace, then the
compilation cache): a class, function or value from outside jaxmb and those libraries (a
user's own element class or drive: its source could change between processes), a closure or
lambda (its captured values), an unknown object, a traced argument (the user's jit, vmap or
grad). A program that cannot be exported (a host callback, e.g. the progress meter) is
remembered as such (`<key>.skip`) and takes the ordinary path too. A store file that cannot be
read is ignored and rewritten.
"""

import dataclasses
import enum
import functools
import hashlib
import os
import pickle
import sys
import tempfile
import types

import equinox as eqx
import jax
import numpy as np

from .._linalg import native as _native

_PINNED = frozenset({"jaxmb", "jax", "jaxlib", "equinox", "diffrax", "optimistix", "lineax",
                     "numpy", "builtins", "jaxtyping", "math", "operator", "functools"})
"""Top-level modules whose classes and functions a key may name: jaxmb (its source is part of
the key) and the libraries whose versions are."""

_VERSIONED = ("jax", "jaxlib", "equinox", "diffrax", "optimistix", "lineax", "numpy")

_ANY_CUSTOM_CALL = (jax.export.DisabledSafetyCheck.custom_call("ALL"),)
_CALLBACK = b"_callback"  # in the call targets of host callbacks (xla_ffi_python_cpu_callback)

_directory: str | None = None
compile_listeners: list = []
"""Callables f(analysis) called before a program is traced and compiled for the store (its
first run on this machine): analysis is the entry point's module without underscore
("simulate", "reactions", "assemble", ...). The command line prints them."""
_loaded: dict = {}  # key -> (jitted Exported.call, skeleton, msgs), in this process
_unexportable: set = set()


def enable(cache_dir: str | os.PathLike) -> str:
    """Keep exported programs in `<cache_dir>/jaxmb-programs` (called by
    `enable_compilation_cache`); returns that folder."""
    global _directory
    path = os.path.join(os.fspath(cache_dir), "jaxmb-programs")
    os.makedirs(path, exist_ok=True)
    _directory = path
    return path


def disable() -> None:
    """Stop using the store in this process (programs then trace as usual)."""
    global _directory
    _directory = None
    _loaded.clear()
    _unexportable.clear()


def directory() -> str | None:
    """The store's folder, or None when it is off."""
    return _directory


class _Unpinned(Exception):
    """An argument the key cannot pin (see the module docstring)."""


class _Slot:
    """Stands for the k-th array output in a stored output structure."""

    def __init__(self, index):
        self.index = index


@functools.cache
def _environment() -> str:
    """The source of jaxmb, the library versions and the settings a trace depends on."""
    digest = hashlib.sha256()
    root = os.path.dirname(os.path.abspath(__file__))
    for folder, subfolders, files in os.walk(root):
        subfolders.sort()
        for name in sorted(files):
            if name.endswith((".py", ".json", ".yaml", ".yml", ".cc")):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, root).encode())
                with open(path, "rb") as fh:
                    digest.update(fh.read())
    versions = []
    for name in _VERSIONED:
        module = sys.modules.get(name)
        if module is None:
            try:
                module = __import__(name)
            except ImportError:
                versions.append(f"{name}=absent")
                continue
        versions.append(f"{name}={getattr(module, '__version__', '?')}")
    return "|".join([digest.hexdigest(), sys.version, *versions])


def _settings() -> str:
    """JAX settings that change what a trace produces (read per call: they can change)."""
    config = jax.config
    from equinox import _errors as eqx_errors

    return repr((
        config.jax_enable_x64, config.jax_numpy_dtype_promotion,
        config.jax_default_matmul_precision, config.jax_numpy_rank_promotion,
        config.jax_debug_nans, config.jax_debug_infs, jax.default_backend(),
        eqx_errors.EQX_ON_ERROR, os.environ.get("EQX_ON_ERROR"),  # checks left in loops
        _native.BUILT, os.environ.get("JAXMB_NATIVE_KERNELS"),  # which batched kernels
    ))


def _pinned_name(obj) -> str:
    module = getattr(obj, "__module__", None) or ""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not name or module.split(".")[0] not in _PINNED or "<" in name:  # <locals>, <lambda>
        raise _Unpinned(obj)
    return f"{module}.{name}"


def _describe(x, static, out) -> None:
    """Append tokens that pin x (see the module docstring); `static`: x is held in a static
    field, so its arrays are part of the program (by value), not inputs."""
    if eqx.is_array(x):
        array = np.asarray(x)
        if static:
            out.append(("static array", array.shape, str(array.dtype),
                        hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()))
        else:
            out.append(("array", array.shape, str(array.dtype),
                        bool(getattr(x, "weak_type", False))))
    elif x is None or isinstance(x, (bool, int, float, complex, str, bytes)):
        out.append((type(x).__name__, repr(x)))
    elif isinstance(x, (tuple, list)):
        if type(x) not in (tuple, list):  # a namedtuple
            out.append(("type", _pinned_name(type(x))))
        out.append((type(x).__name__, len(x)))
        for item in x:
            _describe(item, static, out)
    elif isinstance(x, dict):
        if type(x) is not dict or not all(isinstance(k, str) for k in x):
            raise _Unpinned(x)
        out.append(("dict", tuple(sorted(x))))
        for k in sorted(x):
            _describe(x[k], static, out)
    elif isinstance(x, type):
        out.append(("class", _pinned_name(x)))
    elif isinstance(x, types.FunctionType):
        if x.__closure__:
            raise _Unpinned(x)
        out.append(("function", _pinned_name(x)))
    elif isinstance(x, types.BuiltinFunctionType):
        out.append(("builtin", _pinned_name(x)))
    elif isinstance(x, types.MethodType):
        out.append(("method", x.__func__.__name__))
        _describe(x.__func__, static, out)
        _describe(x.__self__, static, out)
    elif isinstance(x, functools.partial):
        out.append(("partial",))
        _describe(x.func, static, out)
        _describe(x.args, static, out)
        _describe(x.keywords, static, out)
    elif isinstance(x, np.dtype):
        out.append(("dtype", str(x)))
    elif isinstance(x, enum.Enum):
        out.append(("enum", _pinned_name(type(x)), x.name))
    elif dataclasses.is_dataclass(x):  # equinox Modules, and plain dataclasses (static)
        module = isinstance(x, eqx.Module)
        out.append(("object", _pinned_name(type(x))))
        for f in dataclasses.fields(x):
            if not module and not f.compare:  # as jit's cache: outside equality and hashing
                continue                      # (e.g. Body.owner), so not in the program
            if not hasattr(x, f.name):
                out.append((f.name, "unset"))
                continue
            out.append(("field", f.name))
            _describe(getattr(x, f.name), static or not module or f.metadata.get("static", False),
                      out)
    else:
        raise _Unpinned(x)


def key(fn, args, kwargs) -> str | None:
    """The store key of fn(*args, **kwargs), or None where it cannot be pinned."""
    try:
        tokens = [("fn", _pinned_name(fn))]
        _describe((args, kwargs), False, tokens)
    except _Unpinned:
        return None
    text = repr((tokens, _environment(), _settings()))
    return hashlib.sha256(text.encode()).hexdigest()


def call(fn, collect, args, kwargs, analysis=None):
    """collect(*args, **kwargs) = (out, flags, indices, msgs), the checked program of `fn`
    (`jaxmb._runtime.errors.checked_jit`), from the store (exported on a first call), or None where
    the ordinary path must run (see the module docstring)."""
    if _directory is None or jax.config.jax_disable_jit:
        return None
    leaves = [x for x in jax.tree.leaves((args, kwargs)) if eqx.is_array(x)]
    if any(isinstance(x, jax.core.Tracer) for x in leaves):
        return None
    name = key(fn, args, kwargs)
    if name is None or name in _unexportable:
        return None
    entry = _loaded.get(name) or _read(name)
    if entry is None:
        for listener in compile_listeners:
            listener(analysis or fn.__module__.rsplit(".", 1)[-1].lstrip("_"))
        entry = _export(name, collect, args, kwargs)
        if entry is None:
            return None
    _loaded[name] = entry
    run, skeleton, msgs = entry
    flat, flags, indices = run(*_inputs(args, kwargs))
    out = jax.tree.map(lambda s: flat[s.index] if isinstance(s, _Slot) else s, skeleton,
                       is_leaf=lambda s: isinstance(s, _Slot))
    return out, flags, indices, msgs


def _inputs(args, kwargs):
    dynamic, _ = eqx.partition((args, kwargs), eqx.is_array)
    return jax.tree.leaves(dynamic)


def _path(name):
    return os.path.join(_directory, name)


def _read(name):
    if os.path.exists(_path(name) + ".skip"):
        _unexportable.add(name)
        return None
    try:
        with open(_path(name), "rb") as fh:
            stored = pickle.load(fh)
        exported = jax.export.deserialize(bytearray(stored["exported"]))
        return jax.jit(exported.call), stored["skeleton"], stored["msgs"]
    except FileNotFoundError:
        return None
    except Exception:  # unreadable (e.g. an interrupted write): export it again
        return None


def _export(name, collect, args, kwargs):
    """Trace and export collect for these arguments' structure and write it to the store; None
    (and a `.skip` marker) where the program cannot be exported or its outputs stored."""
    dynamic, static = eqx.partition((args, kwargs), eqx.is_array)
    leaves, treedef = jax.tree.flatten(dynamic)
    side = {}

    def flat(*values):
        a, kw = eqx.combine(jax.tree.unflatten(treedef, values), static)
        out, flags, indices, msgs = collect(*a, **kw)
        out_dynamic, out_static = eqx.partition(out, eqx.is_array)
        out_leaves, out_treedef = jax.tree.flatten(out_dynamic)
        slots = jax.tree.unflatten(out_treedef, [_Slot(k) for k in range(len(out_leaves))])
        side["skeleton"] = eqx.combine(slots, out_static,
                                       is_leaf=lambda s: isinstance(s, _Slot))
        side["msgs"] = msgs
        return out_leaves, flags, indices

    specs = [jax.ShapeDtypeStruct(np.shape(x), x.dtype, weak_type=bool(getattr(x, "weak_type",
                                                                               False)))
             for x in leaves]
    try:
        # every custom call may be kept (LAPACK's pivoted QR has no cross-version guarantee,
        # and needs none: the key holds the jaxlib version) except host callbacks, which
        # point into this process
        exported = jax.export.export(jax.jit(flat), disabled_checks=_ANY_CUSTOM_CALL)(*specs)
        if _CALLBACK in exported.mlir_module_serialized:
            raise ValueError("a host callback")
        blob = pickle.dumps(dict(exported=bytes(exported.serialize()),
                                 skeleton=side["skeleton"], msgs=side["msgs"]))
    except Exception:  # an output that cannot be pickled, a trace error
        _unexportable.add(name)
        _write(name + ".skip", b"")
        return None
    _write(name, blob)
    return jax.jit(exported.call), side["skeleton"], side["msgs"]


def _write(name, data):
    """Write atomically (a concurrent reader sees the old file or the whole new one)."""
    try:
        fd, tmp = tempfile.mkstemp(dir=_directory, prefix=".tmp-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, _path(name))
    except OSError:
        pass  # a read-only cache: this process still runs the program
