# pyright: reportPrivateImportUsage=false
# (this module is the seam to equinox's error policy, kept in its private _errors module)
"""Traced programs kept on disk (`jax.export`), so that a later process neither traces nor
compiles them.

JAX's persistent compilation cache (`enable_compilation_cache`) spares a second process XLA's
compile, but every eager call still *traces* and lowers its program first (a third of a
command, design measurement D5). While the cache is on, each `checked_jit` program
(`jaxmb._runtime.errors`) called eagerly is therefore also exported (`jax.export`: the lowered
StableHLO, serialized) to `<cache>/jaxmb-programs/<key>`, with what the caller needs besides
the arrays (the output's structure and the check messages); a later call with the same key
deserializes it and runs it, and its compile is a cache hit.

Calls inside the user's `jax.grad` / `value_and_grad` / `vjp` and `jax.jit` are kept too, as
programs of their own (the key says how the call is traced): under reverse mode as the
forward pass with `jax.vjp`'s residuals and the backward pass (`_export_reverse`; the backward
in a second file, `backward_name`), called from the user's trace
(`jaxmb._runtime.stored_calls`), so a later process traces neither jaxmb's forward nor its
backward program, and the user's compiled program is a cache hit. Under `vmap` or forward
mode (`jax.jvp`, `jacfwd`) the call takes the ordinary path.

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
lambda (its captured values), an unknown object, an argument traced by vmap or forward mode.
A program that cannot be exported (a host callback, e.g. the progress meter; for reverse mode,
one without a VJP with respect to every input) is remembered as such (a marker entry) and
takes the ordinary path too.

A store file is data, never code: a header naming the format, a SHA-256 of the rest, the
metadata as JSON (the key, the check messages and the output's structure, whose classes are
named and must be dataclasses of jaxmb or the pinned libraries, rebuilt field by field without
running their code) and the serialized `jax.export` program. A file that fails any check
(another format, a flipped bit, another key, an unknown class, a program that does not
deserialize or compile, or for the user's traces one that, or whose backward pass, does not
lower) is a miss: one warning, the program is traced again and the file rewritten
(atomically). The folder must belong to the user and be writable by nobody else
(`folder_problem`), since whoever writes there chooses the programs this process runs.
"""

import base64
import dataclasses
import enum
import functools
import hashlib
import importlib
import json
import os
import stat
import sys
import tempfile
import types
import warnings

import equinox as eqx
import jax
import jax.core
import numpy as np

from .._linalg import native as _native
from . import stored_calls as _stored_calls
from .config import jax_setting

_PINNED = frozenset(
    {
        "jaxmb",
        "jax",
        "jaxlib",
        "equinox",
        "diffrax",
        "optimistix",
        "lineax",
        "numpy",
        "builtins",
        "jaxtyping",
        "math",
        "operator",
        "functools",
    }
)
"""Top-level modules whose classes and functions a key may name: jaxmb (its source is part of
the key) and the libraries whose versions are."""

_VERSIONED = ("jax", "jaxlib", "equinox", "diffrax", "optimistix", "lineax", "numpy")

_ANY_CUSTOM_CALL = (jax.export.DisabledSafetyCheck.custom_call("ALL"),)
_CALLBACK = b"_callback"  # in the call targets of host callbacks (xla_ffi_python_cpu_callback)

SUBFOLDER = "jaxmb-programs"
_FORMAT = b"jaxmb program store, format 2\n"  # a file without this header is a miss
_DIGEST = 32  # bytes of the SHA-256 that follows the header, over everything after it

_directory: str | None = None
compile_listeners: list = []
"""Callables f(analysis) called before a program is traced and compiled for the store (its
first run on this machine): analysis is the entry point's module without underscore
("simulate", "reactions", "assemble", ...). The command line prints them."""
_loaded: dict = {}  # key -> (jitted Exported.call, skeleton, msgs), in this process
_unexportable: set = set()


def folder_problem(path: str) -> str | None:
    """Why the folder `path` must not hold cached programs, as the end of a sentence that
    starts with the path ("is a file, not a folder"), or None where it may. A missing folder
    is created, readable and writable by the user only. Refused: a file, a folder that cannot
    be created or read, and (POSIX) one owned by another user or writable by group or others:
    whoever can write there chooses the programs a later process runs (JAX's compilation cache
    holds machine code)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        try:
            os.makedirs(path, mode=0o700)  # the leaf: the user only (whatever the umask)
        except FileExistsError:  # made meanwhile by another process: checked below
            pass
        except NotADirectoryError:
            return "cannot be a folder: a part of that path is a file"
        except OSError as err:
            return f"cannot be created ({err.strerror})"
        try:
            info = os.stat(path)
        except OSError as err:
            return f"cannot be read ({err.strerror})"
    except NotADirectoryError:
        return "cannot be a folder: a part of that path is a file"
    except OSError as err:
        return f"cannot be read ({err.strerror})"
    if not stat.S_ISDIR(info.st_mode):
        return "is a file, not a folder"
    getuid = getattr(os, "getuid", None)
    if getuid is None:  # not POSIX: no owner or mode bits to check
        return None
    if info.st_uid != getuid():
        return (
            f"belongs to another user (uid {info.st_uid}, yours is {getuid()}): a program "
            "stored there would run in this process; use a folder of your own"
        )
    others = [
        who
        for who, bit in (("group", stat.S_IWGRP), ("others", stat.S_IWOTH))
        if info.st_mode & bit
    ]
    if others:
        return (
            f"is writable by {' and '.join(others)} (mode {stat.S_IMODE(info.st_mode):#o}): "
            "a program planted there would run in this process; use a folder of your own "
            f"or remove their write access (chmod go-w {path})"
        )
    return None


def enable(cache_dir: str | os.PathLike) -> str:
    """Keep exported programs in `<cache_dir>/jaxmb-programs` (called by
    `enable_compilation_cache`); returns that folder. Raises ValueError naming the folder
    where `folder_problem` refuses it."""
    global _directory
    path = os.path.join(os.fspath(cache_dir), SUBFOLDER)
    problem = folder_problem(path)
    if problem is not None:
        raise ValueError(f"the program store folder {path} {problem}")
    _directory = path
    return path


def disable() -> None:
    """Stop using the store in this process (programs then trace as usual)."""
    global _directory
    _directory = None
    _loaded.clear()
    _jitted.clear()
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
    from equinox import _errors as eqx_errors

    return repr(
        (
            jax_setting("jax_enable_x64"),
            jax_setting("jax_numpy_dtype_promotion"),
            jax_setting("jax_default_matmul_precision"),
            jax_setting("jax_numpy_rank_promotion"),
            jax_setting("jax_debug_nans"),
            jax_setting("jax_debug_infs"),
            jax.default_backend(),
            eqx_errors.EQX_ON_ERROR,
            os.environ.get("EQX_ON_ERROR"),  # checks left in loops
            _native.BUILT,
            os.environ.get("JAXMB_NATIVE_KERNELS"),  # which batched kernels
        )
    )


def _pinned_name(obj) -> str:
    module = getattr(obj, "__module__", None) or ""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not name or module.split(".")[0] not in _PINNED or "<" in name:  # <locals>, <lambda>
        raise _Unpinned(obj)
    return f"{module}.{name}"


def _describe(x, static, out) -> None:
    """Append tokens that pin x (see the module docstring); `static`: x is held in a static
    field, so its arrays are part of the program (by value), not inputs."""
    if isinstance(x, jax.core.Tracer):
        if static:  # a traced value the program would hold as a constant
            raise _Unpinned(x)
        aval = jax.typeof(x)
        out.append(("array", tuple(aval.shape), str(aval.dtype), bool(aval.weak_type)))
    elif eqx.is_array(x):
        array = np.asarray(x)
        if static:
            out.append(
                (
                    "static array",
                    array.shape,
                    str(array.dtype),
                    hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest(),
                )
            )
        else:
            out.append(
                ("array", array.shape, str(array.dtype), bool(getattr(x, "weak_type", False)))
            )
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
                continue  # (e.g. Body.owner), so not in the program
            if not hasattr(x, f.name):
                out.append((f.name, "unset"))
                continue
            out.append(("field", f.name))
            _describe(
                getattr(x, f.name), static or not module or f.metadata.get("static", False), out
            )
    else:
        raise _Unpinned(x)


def key(fn, args, kwargs, mode=None) -> str | None:
    """The store key of fn(*args, **kwargs), or None where it cannot be pinned; `mode`: None
    for an eager call, else how the program is called inside the user's trace
    (`stored_calls.storable`: "reverse" programs are kept with their backward pass), a
    program of its own."""
    try:
        tokens = [("fn", _pinned_name(fn)), ("mode", mode)]
        _describe((args, kwargs), False, tokens)
    except _Unpinned:
        return None
    text = repr((tokens, _environment(), _settings()))
    return hashlib.sha256(text.encode()).hexdigest()


def call(fn, collect, args, kwargs, analysis=None):
    """collect(*args, **kwargs) = (out, flags, indices, msgs), the checked program of `fn`
    (`jaxmb._runtime.errors.checked_jit`), from the store (exported on a first call), or None where
    the ordinary path must run (see the module docstring)."""
    if _directory is None or jax_setting("jax_disable_jit"):
        return None
    leaves = [x for x in jax.tree.leaves((args, kwargs)) if eqx.is_array(x)]
    mode = None
    if any(isinstance(x, jax.core.Tracer) for x in leaves):
        mode = _stored_calls.storable(leaves)
        if mode is None:  # vmap, forward mode: the ordinary path
            return None
    name = key(fn, args, kwargs, mode)
    if name is None or name in _unexportable:
        return None
    inputs = _inputs(args, kwargs)
    entry, result = _loaded.get(name), None
    if entry is None:
        entry = _read(name, mode)
        if entry is _SKIP:
            _unexportable.add(name)
            return None
        if entry is not None and mode is None:  # its first run compiles it, which may fail
            try:
                result = _eager(entry)(*inputs)
            except Exception as err:  # any failure of a stored program: a miss
                first = next(iter(str(err).strip().splitlines()), "")[:120]
                _warn_unusable(name, f"it does not run: {type(err).__name__}: {first}")
                entry = None
    if entry is None:
        for listener in compile_listeners if mode is None else ():  # eager calls only
            listener(analysis or fn.__module__.rsplit(".", 1)[-1].lstrip("_"))
        entry = _export(name, collect, args, kwargs, mode)
        if entry is None:
            return None
    _loaded[name] = entry
    exported, skeleton, msgs, backward = entry
    if mode is not None:  # inside the user's jit or grad
        original = jax.jit(_flat_program(collect, args, kwargs)[0])
        flat, flags, indices = _stored_calls.call(exported, backward, original, inputs, mode)
    else:
        flat, flags, indices = _eager(entry)(*inputs) if result is None else result
    out = jax.tree.map(
        lambda s: flat[s.index] if isinstance(s, _Slot) else s,
        skeleton,
        is_leaf=lambda s: isinstance(s, _Slot),
    )
    return out, flags, indices, msgs


_jitted: dict = {}  # id(Exported) -> (Exported, jax.jit(Exported.call)): one per program


def _eager(entry):
    exported = entry[0]
    known = _jitted.get(id(exported))
    if known is None or known[0] is not exported:
        known = _jitted[id(exported)] = (exported, jax.jit(exported.call))
    return known[1]


def _inputs(args, kwargs):
    dynamic, _ = eqx.partition((args, kwargs), eqx.is_array)
    return jax.tree.leaves(dynamic)


def _path(name):
    assert _directory is not None, "the store is switched on"
    return os.path.join(_directory, name)


class _Skip:
    """_read's answer for an entry that marks a program that cannot be exported."""


_SKIP = _Skip()


class _Invalid(Exception):
    """A store file that fails a check (the reason)."""


def _warn_unusable(name, reason):
    warnings.warn(
        f"the stored program {_path(name)} is unusable ({reason}); it is traced "
        "again and rewritten",
        stacklevel=2,
    )


def _read(name, mode=None):
    """The entry stored under `name` as (Exported, skeleton, msgs), _SKIP, or None (a miss: no
    file, or one that fails a check, with a warning). A program for the user's traces (`mode`)
    is checked by lowering it and, for reverse mode, its backward pass (eager ones by their first
    run)."""
    try:
        with open(_path(name), "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return None
    except OSError as err:  # e.g. a folder of that name, no permission
        _warn_unusable(name, f"cannot be read: {err.strerror}")
        return None
    try:
        meta, program = _unpack(name, data)
        if meta.get("kind") == "skip":
            return _SKIP
        if meta.get("kind") != "program":
            raise _Invalid("an unknown kind of entry")
        try:
            exported = jax.export.deserialize(bytearray(program))
        except Exception as err:
            raise _Invalid(f"the program does not deserialize: {type(err).__name__}") from None
        num_out = len(exported.out_avals) - 2  # the output's arrays, then flags and indices
        skeleton, msgs = _decode(meta["skeleton"], num_out), _decode(meta["msgs"], 0)
        if not _is_msgs(msgs):
            raise _Invalid("malformed check messages")
        backward = _read_backward(name) if mode == "reverse" else None
        for program in (exported, backward):
            if program is not None and mode is not None:
                _check_lowers(program)
    except Exception as err:  # any check failed (_Invalid), or data of the wrong shape
        _warn_unusable(
            name,
            str(err) if isinstance(err, _Invalid) else f"malformed metadata: {type(err).__name__}",
        )
        return None
    return exported, skeleton, msgs, backward


def backward_name(name):
    """The store file of the backward program of the reverse-mode program `name`."""
    return f"{name}-backward"


def _read_backward(name):
    """The backward program stored with `name`, or _Invalid (the whole entry is then a miss)."""
    try:
        with open(_path(backward_name(name)), "rb") as fh:
            data = fh.read()
    except OSError:
        raise _Invalid("its backward program is missing") from None
    meta, program = _unpack(backward_name(name), data)
    if meta.get("kind") != "backward":
        raise _Invalid("an unknown kind of backward program")
    try:
        return jax.export.deserialize(bytearray(program))
    except Exception as err:
        raise _Invalid(f"the backward program does not deserialize: {type(err).__name__}") from None


def _check_lowers(program):
    """_Invalid unless the program lowers (its StableHLO parses)."""
    try:
        jax.jit(program.call).trace(*program.in_avals).lower()
    except Exception as err:
        raise _Invalid(f"the program does not lower: {type(err).__name__}") from None


def _pack(name, meta, program=b""):
    """A store file: the format header, the SHA-256 of the rest, the length of the JSON
    metadata (8 bytes, big-endian), the metadata (with the key: a file is valid only under its
    own name) and the serialized program."""
    text = json.dumps(dict(meta, key=name), separators=(",", ":"), allow_nan=False).encode()
    payload = len(text).to_bytes(8, "big") + text + program
    return _FORMAT + hashlib.sha256(payload).digest() + payload


def _unpack(name, data):
    """(metadata, serialized program) of a store file, or _Invalid."""
    if not data.startswith(_FORMAT):
        raise _Invalid("not a program store file of this format")
    head = len(_FORMAT)
    digest, payload = data[head : head + _DIGEST], data[head + _DIGEST :]
    if hashlib.sha256(payload).digest() != digest:
        raise _Invalid("its checksum does not match: a damaged file")
    size = int.from_bytes(payload[:8], "big")
    try:
        meta = json.loads(payload[8 : 8 + size].decode())
    except Exception:  # not UTF-8, not JSON, nested too deep
        raise _Invalid("malformed metadata") from None
    if not isinstance(meta, dict) or meta.get("key") != name:
        raise _Invalid("stored under another key")
    return meta, payload[8 + size :]


def _is_msgs(msgs):
    return isinstance(msgs, tuple) and all(
        isinstance(m, tuple) and all(isinstance(t, str) for t in m) for m in msgs
    )


def _flat_program(collect, args, kwargs):
    """(flat, inputs' specs, side): flat(*arrays) = (output arrays, flags, indices) of collect
    at these arguments' static parts; `side` receives the output's skeleton and the check
    messages when flat is traced."""
    dynamic, static = eqx.partition((args, kwargs), eqx.is_array)
    leaves, treedef = jax.tree.flatten(dynamic)
    side = {}

    def flat(*values):
        a, kw = eqx.combine(jax.tree.unflatten(treedef, values), static)
        out, flags, indices, msgs = collect(*a, **kw)
        out_dynamic, out_static = eqx.partition(out, eqx.is_array)
        out_leaves, out_treedef = jax.tree.flatten(out_dynamic)
        slots = jax.tree.unflatten(out_treedef, [_Slot(k) for k in range(len(out_leaves))])
        side["skeleton"] = eqx.combine(slots, out_static, is_leaf=lambda s: isinstance(s, _Slot))
        side["msgs"] = msgs
        side["num_out"] = len(out_leaves)
        return out_leaves, flags, indices

    specs = [
        jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
        for a in map(jax.typeof, leaves)
    ]
    return flat, specs, side


def _export(name, collect, args, kwargs, mode=None):
    """Trace and export collect for these arguments' structure and write it to the store; None
    (and a marker entry) where the program cannot be exported or its outputs stored. A program
    for the user's reverse mode (`mode`) is the forward pass with its residuals, kept with the
    backward pass (`_export_reverse`)."""
    flat, specs, side = _flat_program(collect, args, kwargs)
    try:
        # every custom call may be kept (LAPACK's pivoted QR has no cross-version guarantee,
        # and needs none: the key holds the jaxlib version) except host callbacks, which
        # point into this process
        exported = jax.export.export(jax.jit(flat), disabled_checks=_ANY_CUSTOM_CALL)(*specs)
        if _CALLBACK in exported.mlir_module_serialized:
            raise ValueError("a host callback")
        skeleton, msgs = _encode(side["skeleton"]), _encode(side["msgs"])
        if not (
            _same(side["skeleton"], skeleton, side["num_out"])
            and _is_msgs(side["msgs"])
            and _decode(msgs, 0) == side["msgs"]
        ):
            raise ValueError("an output the store cannot rebuild exactly")
        backward = None
        if mode == "reverse":  # the forward with its residuals, and the backward pass
            exported, backward = _export_reverse(flat, specs)
            backward_data = _pack(
                backward_name(name), dict(kind="backward"), bytes(backward.serialize())
            )
        data = _pack(
            name, dict(kind="program", skeleton=skeleton, msgs=msgs), bytes(exported.serialize())
        )
    except Exception:  # an output the store cannot hold as data, a trace error
        _unexportable.add(name)
        _write(name, _pack(name, dict(kind="skip")))
        return None
    if backward is not None:
        _write(backward_name(name), backward_data)  # first: a reader finds both or a miss
    _write(name, data)
    return exported, side["skeleton"], side["msgs"], backward


def _export_reverse(flat, specs):
    """Reverse mode as two programs: forward(*x) = (flat(*x), residuals) and
    backward(*residuals, *output cotangents) = the inputs' cotangents (`jax.vjp`, split where
    its pullback's residuals are: the backward pass does not recompute the forward)."""
    trees = {}
    program = jax.jit(flat)  # traced in a jit of its own: the checks come back as data

    def forward(*x):
        y, pullback = jax.vjp(program, *x)  # pyright: ignore[reportArgumentType]  (a jit, not an Exported)
        residuals, trees["residuals"] = jax.tree.flatten(pullback)
        trees["y"] = jax.tree.structure(y)
        return y, residuals

    def backward(*args):
        count = trees["residuals"].num_leaves
        pullback = jax.tree.unflatten(trees["residuals"], args[:count])
        return pullback(jax.tree.unflatten(trees["y"], args[count:]))

    export = functools.partial(jax.export.export, disabled_checks=_ANY_CUSTOM_CALL)
    fwd = export(jax.jit(forward))(*specs)
    avals = fwd.out_avals
    num_y = trees["y"].num_leaves
    cts = [a.to_tangent_aval() for a in avals[:num_y]]
    bwd = export(jax.jit(backward))(
        *[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in avals[num_y:] + tuple(cts)]
    )
    for program in (fwd, bwd):
        if _CALLBACK in program.mlir_module_serialized:
            raise ValueError("a host callback")
    return fwd, bwd


def _write(name, data):
    """Write atomically (a concurrent reader sees the old file or the whole new one)."""
    try:
        fd, tmp = tempfile.mkstemp(dir=_directory, prefix=".tmp-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, _path(name))
    except OSError:
        pass  # a read-only cache: this process still runs the program


# The output's structure as JSON data. Plain values are themselves (None, bool, int, str);
# everything else is a list whose first item names its kind. Classes, enumerations and
# functions are named "module:qualname" and must belong to jaxmb or a pinned library; objects
# are dataclasses (equinox Modules included), rebuilt as equinox rebuilds a Module from its
# leaves: object.__new__ and each field set, no code of theirs run.

_LIBRARIES = frozenset(
    {"jaxmb", "jax", "jaxlib", "equinox", "diffrax", "optimistix", "lineax", "numpy"}
)
_PLAIN_DTYPES = "biufc"  # numpy kinds stored by their bytes: bool, integers, floats, complex


def _encode(x):
    if type(x) in (bool, int, str) or x is None:
        return x
    if isinstance(x, _Slot):
        return ["slot", x.index]
    if isinstance(x, enum.Enum):
        return ["enum", _name(type(x)), x.name]
    if isinstance(x, np.generic | np.ndarray):
        array = np.asarray(x)
        if array.dtype.kind not in _PLAIN_DTYPES:
            raise _Unpinned(x)
        data = base64.b64encode(np.ascontiguousarray(array).tobytes()).decode()
        return [
            "ndarray" if isinstance(x, np.ndarray) else "scalar",
            array.dtype.str,
            list(array.shape),
            data,
        ]
    if type(x) is float:
        return ["float", repr(x)]
    if type(x) is complex:
        return ["complex", repr(x.real), repr(x.imag)]
    if type(x) is bytes:
        return ["bytes", base64.b64encode(x).decode()]
    if type(x) in (tuple, list):
        return [type(x).__name__, [_encode(v) for v in x]]
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):  # a namedtuple
        return ["namedtuple", _name(type(x)), [_encode(v) for v in x]]
    if type(x) is dict and all(type(k) is str for k in x):
        return ["dict", [[k, _encode(v)] for k, v in x.items()]]
    if isinstance(x, np.dtype):
        if x.kind not in _PLAIN_DTYPES:
            raise _Unpinned(x)
        return ["dtype", x.str]
    if isinstance(x, type):
        return ["class", _name(x)]
    if isinstance(x, types.FunctionType) and not x.__closure__:
        return ["function", _name(x)]
    if dataclasses.is_dataclass(x):
        names = [f.name for f in dataclasses.fields(x)]
        if not set(vars(x)) <= set(names):  # state beyond the fields (e.g. a wrapped function)
            raise _Unpinned(x)
        return [
            "object",
            _name(type(x)),
            [[n, _encode(getattr(x, n))] for n in names if hasattr(x, n)],
        ]
    raise _Unpinned(x)


def _name(obj):
    """ "module:qualname" of a class or function of jaxmb or a pinned library."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if (
        not isinstance(module, str)
        or not isinstance(qualname, str)
        or module.split(".")[0] not in _LIBRARIES
        or "<" in qualname
    ):
        raise _Unpinned(obj)
    return f"{module}:{qualname}"


def _lookup(name):
    """The class or function named "module:qualname" (see _name), or _Invalid."""
    module_name, _, qualname = name.partition(":")
    parts = qualname.split(".")
    if module_name.split(".")[0] not in _LIBRARIES or not all(
        p.isidentifier() for p in module_name.split(".") + parts
    ):
        raise _Invalid(f"a name outside the pinned libraries: {name!r}")
    try:
        obj = importlib.import_module(module_name)
        for part in parts:
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        raise _Invalid(f"an unknown name: {name!r}") from None
    if (
        not isinstance(obj, type | types.FunctionType)
        or getattr(obj, "__module__", None) != module_name
        or getattr(obj, "__qualname__", None) != qualname
    ):
        raise _Invalid(f"not a class or function: {name!r}")
    return obj


def _decode(x, num_slots):
    """The value _encode(value) came from; _Invalid where x is not such data (slots index the
    program's `num_slots` array outputs)."""
    try:
        return _decoded(x, num_slots)
    except _Invalid:
        raise
    except Exception as err:  # malformed data: wrong types, lengths, values
        raise _Invalid(f"a malformed output structure ({type(err).__name__})") from None


def _decoded(x, num_slots):
    if x is None or type(x) in (bool, int, str):
        return x
    if type(x) is not list or not x or type(x[0]) is not str:
        raise _Invalid("a malformed output structure")
    kind, rest = x[0], x[1:]
    if kind == "slot":
        (index,) = rest
        if type(index) is not int or not 0 <= index < num_slots:
            raise _Invalid("an output that the program does not have")
        return _Slot(index)
    if kind in ("tuple", "list"):
        (items,) = rest
        values = [_decoded(v, num_slots) for v in items]
        return tuple(values) if kind == "tuple" else values
    if kind == "dict":
        (items,) = rest
        return {_text(k): _decoded(v, num_slots) for k, v in items}
    if kind == "float":
        return float(_text(rest[0]))
    if kind == "complex":
        return complex(float(_text(rest[0])), float(_text(rest[1])))
    if kind == "bytes":
        return base64.b64decode(_text(rest[0]), validate=True)
    if kind in ("ndarray", "scalar", "dtype"):
        dtype = np.dtype(_text(rest[0]))
        if dtype.kind not in _PLAIN_DTYPES:
            raise _Invalid("an array of a non-numeric type")
        if kind == "dtype":
            return dtype
        shape = tuple(rest[1])
        if not all(type(n) is int and n >= 0 for n in shape):
            raise _Invalid("a malformed array shape")
        array = (
            np.frombuffer(base64.b64decode(_text(rest[2]), validate=True), dtype=dtype)
            .reshape(shape)
            .copy()
        )
        return array if kind == "ndarray" else array[()]
    cls = _lookup(_text(rest[0]))
    if kind == "class" and isinstance(cls, type):
        return cls
    if kind == "function" and isinstance(cls, types.FunctionType):
        return cls
    if kind == "enum" and isinstance(cls, type) and issubclass(cls, enum.Enum):
        return cls[_text(rest[1])]
    if (
        kind == "namedtuple"
        and isinstance(cls, type)
        and issubclass(cls, tuple)
        and hasattr(cls, "_make")
    ):
        return cls._make(  # pyright: ignore[reportAttributeAccessIssue]  # hasattr above
            _decoded(v, num_slots) for v in rest[1]
        )
    if kind == "object" and isinstance(cls, type) and dataclasses.is_dataclass(cls):
        names = {f.name for f in dataclasses.fields(cls)}
        obj = object.__new__(cls)  # as equinox's unflatten: no __init__, no checks of theirs
        for field, value in rest[1]:
            if field not in names:
                raise _Invalid(f"a field that {cls.__qualname__} does not have: {field!r}")
            object.__setattr__(obj, field, _decoded(value, num_slots))
        return obj
    raise _Invalid(f"a malformed output structure ({kind!r})")


def _text(x):
    if type(x) is not str:
        raise _Invalid("a malformed output structure")
    return x


def _same(value, encoded, num_slots):
    """Whether `encoded` rebuilds `value` exactly: the same data again, the same tree."""
    rebuilt = _decode(encoded, num_slots)
    if _encode(rebuilt) != encoded:
        return False
    is_slot = lambda s: isinstance(s, _Slot)  # noqa: E731
    a, b = (jax.tree.flatten(v, is_leaf=is_slot) for v in (value, rebuilt))
    return a[1] == b[1] and [type(v) for v in a[0]] == [type(v) for v in b[0]]
