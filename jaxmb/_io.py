"""Model files: a `Model` as JSON or YAML (`save`, `load`), as plain data (`to_dict`, `from_dict`).

Schema version 1 (documented, with every element's keys, in docs/model_files.md):

    {"jaxmb_model": 1,
     "bodies": [{"name": "crank", "mass": 1.0, "inertia": 0.01, "q": [x, y, phi]}, ...],
     "elements": [{"type": "Revolute", "name": "O", "i": "ground", "j": "crank",
                   "s_i": [0.0, 0.0], "s_j": [-0.05, 0.0]}, ...],
     "initial_velocity": [...],        # optional: n numbers, used by `jaxmb simulate`
     "dim": 3,                         # optional: a spatial model (default 2, planar): bodies
                                       # "inertia": [J1, J2, J3], "q": [x, y, z, w, qx, qy, qz],
                                       # elements of jaxmb.spatial (and Gravity)
     "compliance": {"stiffness": {"B": 2e7, ...}, "default": 1e8}}   # optional: mb.Compliance

An element entry holds the constructor arguments of its class (the dataclass fields of the
equinox module): bodies by name ("ground" for the ground), numbers and lists of numbers for the
parameters, drive functions as `{"type": "Harmonic", "amplitude": ..., ...}` or a plain constant.
`to_dict` lists the constraint pairs first, in row order, then the force elements, then the
friction elements (which name their pair: `{"type": "RevoluteFriction", "name": "fO", "pair":
"O", "mu": 0.1, "radius": 0.01, "velocity_scale": 0.001}`). Loading
rebuilds the model through `Mechanism`, so every build-time check applies; every error is a
ValueError that names the offending entry (`elements[3] (Revolute 'B'): ...`).
"""

import dataclasses
import difflib
import functools
import json
import os
import stat
import typing
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from . import elements as _elements
from ._custom_types import Coordinates, CoordinatesLike
from ._model.mechanism import Mechanism
from ._model.model import Model
from ._reaction_methods.compliance import Compliance
from ._runtime import errors as _errors
from ._runtime.exceptions import JaxmbError
from .elements import drive as _drive, spatial as _spatial_elements
from .elements.geometry import Body, is_concrete

VERSION = 1
"""The schema version written to, and required in, the `jaxmb_model` key."""

SUFFIXES = (".json", ".yaml", ".yml")
_TOP_KEYS = ("jaxmb_model", "dim", "bodies", "elements", "initial_velocity", "compliance")
_COMPLIANCE_KEYS = ("stiffness", "default")
_BODY_KEYS = ("name", "mass", "inertia", "q")


def _concrete_types(module, base) -> dict:
    return {
        name: cls
        for name, cls in sorted(vars(module).items())
        if isinstance(cls, type) and issubclass(cls, base) and not name.startswith("Abstract")
    }


ELEMENT_TYPES = _concrete_types(_elements, _elements.AbstractElement)
"""Element type name -> class: every type a planar model file may hold."""

SPATIAL_ELEMENT_TYPES = {
    "Gravity": _elements.Gravity,
    **_concrete_types(_spatial_elements, _elements.AbstractElement),
}
"""Element type name -> class in a spatial model file (`"dim": 3`): jaxmb.spatial's and
Gravity (a 3-vector)."""


def _catalogue(dim: int) -> dict:
    return SPATIAL_ELEMENT_TYPES if dim == 3 else ELEMENT_TYPES


DRIVE_TYPES = _concrete_types(_drive, _drive.AbstractDrive)
"""Drive function type name -> class."""


def _fields(cls):
    return [f for f in dataclasses.fields(cls) if f.init]


def _required(field) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def _kind(annotation) -> str:
    """How a constructor argument is written: body, drive, string, integer or numbers."""
    if annotation is Body:
        return "body"
    if isinstance(annotation, type) and issubclass(annotation, _drive.AbstractDrive):
        return "drive"
    return {str: "string", int: "integer"}.get(annotation, "numbers")


def _suggest(word, choices) -> str:
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


# ----- Model -> plain data -----------------------------------------------------------------
def to_dict(
    model: Model,
    *,
    initial_velocity: CoordinatesLike | None = None,
    compliance: Compliance | None = None,
) -> dict:
    """The model as plain Python data (the schema above); `initial_velocity` (n numbers) is kept
    for `jaxmb simulate`, `compliance` (an `mb.Compliance` for this model) for `jaxmb report`.
    Raises ValueError for traced or batched models and foreign types."""
    masses = _plain(model.masses, "masses")
    inertias = _plain(model.inertias, "inertias")
    q0 = _plain(model.q0, "q0")
    if np.shape(masses) != (model.num_bodies,) or np.shape(q0) != (model.nq,):
        raise ValueError(
            "cannot save a batched model (masses of shape "
            f"{np.shape(masses)}); save one model at a time"
        )
    w = model.kind.nq
    bodies = [
        {"name": name, "mass": masses[k], "inertia": inertias[k], "q": q0[w * k : w * k + w]}
        for k, name in enumerate(model.body_names)
    ]
    catalogue = _catalogue(model.dim)
    data = {
        "jaxmb_model": VERSION,
        **({"dim": 3} if model.dim == 3 else {}),
        "bodies": bodies,
        "elements": [
            _element_dict(e, catalogue)
            for e in (*model.pairs, *model.force_elements, *model.friction)
        ],
    }
    if initial_velocity is not None:
        data["initial_velocity"] = _plain(initial_velocity, "initial_velocity")
        _check_initial_velocity(data["initial_velocity"], model.n)
    if compliance is not None:
        data["compliance"] = compliance_dict(compliance, model)
    return data


def compliance_dict(compliance: Compliance, model: Model) -> dict:
    """An `mb.Compliance` as the `compliance` entry: {"stiffness": {pair: number or list},
    "default": number} (checked against `model`)."""
    if not isinstance(compliance, Compliance):
        raise ValueError(f"compliance: expected an mb.Compliance, got {compliance!r}")
    with _errors.reporting("compliance"):
        compliance.bind(model)
    out = {
        "stiffness": {
            n: _plain(v, f"compliance: stiffness of {n!r}") for n, v in compliance.stiffness.items()
        }
    }
    if compliance.default is not None:
        out["default"] = _plain(compliance.default, "compliance: default")
    return out


def compliance_from(entry, model: Model, where="compliance") -> Compliance:
    """The `mb.Compliance` of a `compliance` entry, checked against `model` (every error is a
    ValueError naming `where` and the problem)."""
    _check_keys(entry, _COMPLIANCE_KEYS, (), where)
    stiffness = entry.get("stiffness", {})
    if not isinstance(stiffness, dict):
        raise ValueError(
            f"{where}: stiffness must be a mapping pair name -> number or list, got {stiffness!r}"
        )
    for name in stiffness:
        if name not in model.pair_names:
            raise ValueError(
                f"{where}: stiffness: unknown pair {name!r}"
                f"{_suggest(name, model.pair_names)}; pairs are "
                f"{', '.join(model.pair_names)}"
            )
    values = {n: _numbers(v, f"{where}: stiffness", repr(n)) for n, v in stiffness.items()}
    default = entry.get("default")
    default = None if default is None else _number(default, where, "default")
    try:
        compliance = Compliance(values, default=default)
        with _errors.reporting(where):
            compliance.bind(model)
    except ValueError as e:
        message = str(e)
        if not message.startswith(f"{where}: "):  # bind names `where` itself
            message = f"{where}: {_detail(e, 'Compliance')}"
        raise ValueError(message) from None
    return compliance


def _plain(value, label):
    if not is_concrete(value):
        raise ValueError(f"{label}: cannot save a traced value; save outside jit, vmap and grad")
    return np.asarray(value, dtype=np.float64).tolist()


def _element_dict(element, catalogue) -> dict:
    cls = type(element)
    where = f"{cls.__name__} {element.name!r}"
    if catalogue.get(cls.__name__) is not cls:
        raise ValueError(
            f"{where}: cannot be saved; model files hold the jaxmb element types "
            f"only ({', '.join(catalogue)})"
        )
    arguments = _arguments_dict(element, where)
    return {"type": cls.__name__, "name": arguments.pop("name"), **arguments}


def _arguments_dict(module, where) -> dict:
    out = {}
    for field in _fields(type(module)):
        value, label = getattr(module, field.name), f"{where}: {field.name}"
        if isinstance(value, Body):
            out[field.name] = value.name
        elif isinstance(value, _drive.AbstractDrive):
            out[field.name] = _drive_dict(value, label)
        elif isinstance(value, (str, int)) and not isinstance(value, bool):
            out[field.name] = value
        elif value is None and not _required(field):
            continue  # an optional field left at None (a spatial element's reference)
        else:
            out[field.name] = _plain(value, label)
    return out


def _drive_dict(f, where):
    cls = type(f)
    if DRIVE_TYPES.get(cls.__name__) is not cls:
        raise ValueError(
            f"{where}: a {cls.__name__} cannot be saved; model files hold the "
            f"jaxmb.drive types only ({', '.join(DRIVE_TYPES)})"
        )
    if cls is _drive.Constant:
        return _plain(f.value, where)
    return {"type": cls.__name__, **_arguments_dict(f, where)}


# ----- plain data -> Model -----------------------------------------------------------------
def from_dict(data: dict) -> Model:
    """Build the model a dict of the schema above describes (through `Mechanism`).

    Raises ValueError naming the offending entry for unknown or missing keys, wrong types or
    shapes, unknown body names or element types, and every check of `Mechanism`.
    """
    return _build(data)[0]


def _build(data):
    """(Model, initial velocity or None) from the plain data."""
    _check_top_level(data)
    dim = data.get("dim", 2)
    m = Mechanism(dim=dim)
    handles = {"ground": m.ground}
    for body in _add_bodies(m, data["bodies"]):
        handles[body.name] = body
    for k, entry in enumerate(data.get("elements", [])):
        where, element = _element(entry, f"elements[{k}]", handles, _catalogue(dim))
        try:
            m.add(element)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
    model = m.build()
    qd0 = data.get("initial_velocity")
    if qd0 is not None:
        qd0 = jnp.asarray(_numbers(qd0, "initial_velocity", "value"), dtype=jnp.float64)
        _check_initial_velocity(qd0, model.n)
    return model, qd0


def _check_top_level(data):
    if not isinstance(data, dict):
        raise ValueError(
            f"the top level must be a mapping with keys {', '.join(_TOP_KEYS)}, "
            f"got {type(data).__name__}"
        )
    if "jaxmb_model" not in data:
        raise ValueError(
            f"missing key 'jaxmb_model' (the schema version, {VERSION}); "
            "is this a jaxmb model file?"
        )
    version = data["jaxmb_model"]
    if isinstance(version, bool) or version != VERSION:
        raise ValueError(
            f"jaxmb_model: unsupported schema version {version!r}; this jaxmb "
            f"reads version {VERSION}"
        )
    _refuse_unknown_keys(data, _TOP_KEYS, "unknown top-level key")
    if not isinstance(data.get("bodies"), list) or not data["bodies"]:
        raise ValueError(f"bodies: expected a non-empty list of bodies, got {data.get('bodies')!r}")
    if data.get("dim", 2) not in (2, 3) or isinstance(data.get("dim"), bool):
        raise ValueError(f"dim: must be 2 (planar) or 3 (spatial), got {data['dim']!r}")
    if not isinstance(data.get("elements", []), list):
        raise ValueError(f"elements: expected a list of elements, got {data['elements']!r}")


def _refuse_unknown_keys(entry, allowed, label):
    """Raise for the first key of `entry` not in `allowed`: "`label` 'key' (did you mean
    ...?); allowed keys: ..."."""
    for key in entry:
        if key not in allowed:
            raise ValueError(
                f"{label} {key!r}{_suggest(key, allowed)}; allowed keys: {', '.join(allowed)}"
            )


def _check_keys(entry, allowed, required, where):
    if not isinstance(entry, dict):
        raise ValueError(
            f"{where}: expected a mapping with keys {', '.join(allowed)}, got {entry!r}"
        )
    _refuse_unknown_keys(entry, allowed, f"{where}: unknown key")
    for key in required:
        if key not in entry:
            raise ValueError(f"{where}: missing field {key!r}")


def _add_bodies(m, entries):
    """The handles of the bodies of `entries` (the `bodies` list), added to `m` in one
    `add_bodies` call: one call per body costs a millisecond each (a 20,000-body file). When
    that call refuses them, they are added one at a time, so the error names the entry."""
    values = [_body_values(entry, f"bodies[{k}]", m.dim) for k, entry in enumerate(entries)]
    names, masses, inertias, qs = zip(*values)
    try:  # (add_bodies checks every body before it adds any)
        return m.add_bodies(names, np.asarray(masses), np.asarray(inertias), np.stack(qs))
    except ValueError:
        one_by_one = Mechanism()
        for k, entry in enumerate(entries):
            _add_body(one_by_one, entry, f"bodies[{k}]")  # raises at the entry
        raise


def _body_values(entry, where, dim=2):
    """(name, mass, inertia, q) of a `bodies` entry, checked as file data."""
    _check_keys(entry, _BODY_KEYS, ("name", "mass", "inertia"), where)
    name = entry["name"]
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}: name must be a non-empty string, got {name!r}")
    where = f"{where} ({name!r})"
    mass = _number(entry["mass"], where, "mass")
    if dim == 3:
        inertia = _numbers(entry["inertia"], where, "inertia")
        q = _numbers(entry.get("q", [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]), where, "q")
        if inertia.shape != (3,):
            raise ValueError(f"{where}: inertia must be [J1, J2, J3], got {entry['inertia']!r}")
        if q.shape != (7,):
            raise ValueError(
                f"{where}: q must be [x, y, z, w, qx, qy, qz] (7 numbers), got {entry['q']!r}"
            )
        return name, mass, inertia, q
    inertia = _number(entry["inertia"], where, "inertia")
    q = _numbers(entry.get("q", [0.0, 0.0, 0.0]), where, "q")
    if q.shape != (3,):
        raise ValueError(f"{where}: q must be [x, y, phi] (3 numbers), got {entry['q']!r}")
    return name, mass, inertia, q


def _add_body(m, entry, where):
    name, mass, inertia, q = _body_values(entry, where, m.dim)
    try:
        return m.body(name, mass, inertia, q)
    except ValueError as e:
        raise ValueError(f"{where} ({name!r}): {_detail(e, f'body {name!r}')}") from None


def _element(entry, where, handles, catalogue=ELEMENT_TYPES):
    """(where, element) for one entry of `elements`."""
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected a mapping with 'type', 'name', ..., got {entry!r}")
    if "type" not in entry:
        raise ValueError(f"{where}: missing field 'type' (one of {', '.join(catalogue)})")
    kind, name = entry["type"], entry.get("name")
    if catalogue.get(kind) is None:
        raise ValueError(
            f"{where}: unknown element type {kind!r}"
            f"{_suggest(kind, catalogue)}; known types: "
            f"{', '.join(catalogue)}"
        )
    where = f"{where} ({kind} {name!r})" if isinstance(name, str) else f"{where} ({kind})"
    return where, _construct(catalogue[kind], entry, where, handles, f"{kind} {name!r}")


def _construct(cls, entry, where, handles, subject):
    """An element or drive from its entry; constructor errors gain the entry's `where`."""
    fields = _fields(cls)
    allowed = ("type", *(f.name for f in fields))
    _check_keys(entry, allowed, [f.name for f in fields if _required(f)], where)
    hints = typing.get_type_hints(cls)
    kwargs = {
        f.name: _decode(entry[f.name], f.name, hints[f.name], where, handles)
        for f in fields
        if f.name in entry
    }
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{where}: {_detail(e, subject)}") from None


def _decode(value, label, annotation, where, handles):
    kind = _kind(annotation)
    if kind == "body":
        if not isinstance(value, str) or value not in handles:
            raise ValueError(
                f"{where}: {label}: unknown body {value!r}"
                f"{_suggest(value, handles)}; bodies are {', '.join(handles)}"
            )
        return handles[value]
    if kind == "string":
        if not isinstance(value, str) or not value:
            raise ValueError(f"{where}: {label} must be a non-empty string, got {value!r}")
        return value
    if kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{where}: {label} must be an integer, got {value!r}")
        return value
    if kind == "drive":
        return _drive_from(value, f"{where}: {label}", handles)
    return _numbers(value, where, label)


def _drive_from(value, where, handles):
    """A drive function from `{"type": ..., ...}`, or a plain constant (`Constant`)."""
    if not isinstance(value, dict):
        return _numbers(value, where, "constant drive value")
    if "type" not in value:
        raise ValueError(
            f"{where}: missing field 'type' (one of {', '.join(DRIVE_TYPES)}), "
            "or give a plain number for a constant"
        )
    kind = value["type"]
    if DRIVE_TYPES.get(kind) is None:
        raise ValueError(
            f"{where}: unknown drive type {kind!r}{_suggest(kind, DRIVE_TYPES)}; "
            f"known types: {', '.join(DRIVE_TYPES)} (or a plain number)"
        )
    return _construct(DRIVE_TYPES[kind], value, f"{where} ({kind})", handles, kind)


def _is_numeric(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, list) and all(_is_numeric(v) for v in value)


def _numbers(value, where, label, problem="must be a number or a list of numbers"):
    """A number or a (regular, nested) list of numbers as a float64 array."""
    if _is_numeric(value):
        try:
            return np.asarray(value, dtype=np.float64)
        except OverflowError:
            problem = f"holds an integer beyond the float64 range (about {_FLOAT_MAX:.3g})"
        except ValueError:
            problem = "must be a regular (not ragged) list of numbers"
    raise ValueError(f"{where}: {label} {problem}, got {_short(value)}{_yaml_hint(value)}")


def _number(value, where, label) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(
            f"{where}: {label} must be a number, got {_short(value)}{_yaml_hint(value)}"
        )
    try:
        return float(value)
    except OverflowError:
        raise ValueError(
            f"{where}: {label} = {_short(value)} is beyond the float64 range "
            f"(about {_FLOAT_MAX:.3g})"
        ) from None


_FLOAT_MAX = float(np.finfo(np.float64).max)


def _short(value, limit=80) -> str:
    """repr of value, cut to `limit` characters (a 400-digit number or a huge list)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _yaml_hint(value) -> str:
    """YAML 1.1 reads 1e-3 (no decimal point) as the string '1e-3': say so."""
    if not isinstance(value, str):
        return ""
    try:
        float(value)
    except ValueError:
        return ""
    return " (YAML reads exponents without a decimal point or a sign as text: write 1.0e-3, 2.0e+7)"


def _check_initial_velocity(qd0, n):
    if np.shape(qd0) != (n,):
        raise ValueError(
            f"initial_velocity must hold n = {n} numbers (x, y, phi rates of each "
            f"body), got shape {np.shape(qd0)}"
        )


def _detail(error, subject) -> str:
    """What `error` says about `subject` (the element or body of the entry, which the entry's
    `where` names instead), else its whole message."""
    if isinstance(error, JaxmbError) and error.subject == subject:
        return error.detail
    return str(error)


# ----- files -------------------------------------------------------------------------------
def save(
    model: Model,
    path: str | os.PathLike,
    *,
    initial_velocity: CoordinatesLike | None = None,
    compliance: Compliance | None = None,
) -> None:
    """Write `model` to a .json, .yaml or .yml model file (schema: docs/model_files.md).

    `initial_velocity` (optional, n numbers) is stored for `jaxmb simulate`, `compliance`
    (optional, an `mb.Compliance`) for `jaxmb report` (its reactions table). Numbers are written
    with full float64 precision, so `load(path)` rebuilds an identical model.
    """
    path = os.fspath(path)
    suffix = _suffix(path)
    data = to_dict(model, initial_velocity=initial_velocity, compliance=compliance)
    if suffix == ".json":
        text = _json_text(data)
    else:
        import yaml

        text = "# jaxmb model file; schema: docs/model_files.md\n" + yaml.safe_dump(
            data, sort_keys=False, default_flow_style=None, width=100
        )
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def load(path: str | os.PathLike) -> Model:
    """Read a model file written by `save` (or by hand); see `from_dict` for the checks.

    ```python
    mb.save(model, "crank.yaml")
    model = mb.load("crank.yaml")
    ```
    """
    return load_file(path)[0]


def load_file(path):
    """(Model, initial velocity or None) from a model file; errors name the file and entry."""
    parts = load_parts(path)
    return parts.model, parts.initial_velocity


class ModelFile(NamedTuple):
    """What a model file holds: the model, and the optional entries (None when absent).

    **Arguments:**
    - `model`: the built model.
    - `initial_velocity`: the `initial_velocity` entry (m/s and rad/s, n numbers), or None.
    - `compliance`: the `compliance` entry as an `mb.Compliance`, or None.
    """

    model: Model
    initial_velocity: Coordinates | None
    compliance: Compliance | None


def load_parts(path: str | os.PathLike) -> ModelFile:
    """The model, initial velocity and `mb.Compliance` of a model file (None when absent);
    errors name the file and entry.

    ```python
    parts = mb.load_model_file("robot.yaml")
    parts.model, parts.initial_velocity, parts.compliance
    ```
    """
    path = os.fspath(path)
    data = _parse(path)
    try:
        model, qd0 = _build(data)
        entry = data.get("compliance")
        compliance = None if entry is None else compliance_from(entry, model)
    except ValueError as e:
        raise ValueError(f"model file {path!r}: {e}") from None
    return ModelFile(model, qd0, compliance)


def load_compliance(path, model: Model) -> Compliance:
    """The `mb.Compliance` of a stiffness file (JSON or YAML): a mapping with `stiffness` and
    `default`, as a model file's `compliance` entry (or a whole model file holding one)."""
    path = os.fspath(path)
    data = _parse(path)
    if isinstance(data, dict) and "compliance" in data:
        data = data["compliance"]
    return compliance_from(data, model, f"stiffness file {path!r}")


def _suffix(path) -> str:
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"model file {path!r}: expected a {', '.join(SUFFIXES)} file name")
    return suffix


MAX_DEPTH = 32
"""Deepest nesting of lists and mappings a model file may have (the schema needs 6)."""

MAX_NODES = 1_000_000
"""Most values (numbers, strings, lists, mappings) a model file may expand to, YAML aliases
counted at every use: a few hundred bytes of nested aliases (an "alias bomb") would otherwise
expand to billions of values."""


MAX_BYTES = 64 * 2**20
"""The largest model file read (64 MiB; a 20,000-body model takes 2.4 MB)."""


def _read_text(path) -> str:
    """The text of the regular file `path` (a symbolic link is followed), UTF-8, at most
    MAX_BYTES; else a ValueError naming the file (a device such as /dev/zero never ends)."""
    info = os.stat(path)  # FileNotFoundError, PermissionError: as they are
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file (a device, a pipe)"
        raise ValueError(f"model file {path!r} is {kind}; expected a .json, .yaml or .yml file")
    too_big = f"model file {path!r} is larger than {MAX_BYTES // 2**20} MiB; refusing to read it"
    if info.st_size > MAX_BYTES:
        raise ValueError(too_big)
    with open(path, "rb") as fh:
        data = fh.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(too_big)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        found = (
            "UTF-16 text (it starts with a UTF-16 byte order mark)"
            if data[:2] in (b"\xff\xfe", b"\xfe\xff")
            else f"UTF-8 text (byte {data[e.start]:#04x} at offset {e.start})"
        )
        raise ValueError(
            f"model file {path!r} is {'not ' if 'UTF-8' in found else ''}{found}; model files "
            "are UTF-8 JSON or YAML (save it as UTF-8)"
        ) from None


def _parse(path):
    suffix = _suffix(path)
    text = _read_text(path)
    deep = (
        f"model file {path!r}: nested too deeply (lists or mappings more than "
        f"{MAX_DEPTH} levels deep); a model file needs at most 6"
    )
    if suffix == ".json":
        try:
            data = json.loads(text, object_pairs_hook=_unique_keys)
        except RecursionError:
            raise ValueError(deep) from None
        except ValueError as e:
            raise ValueError(f"model file {path!r}: invalid JSON: {e}") from None
    else:
        import yaml

        try:
            data = yaml.load(text, Loader=_yaml_loader())
        except RecursionError:
            raise ValueError(deep) from None
        except yaml.YAMLError as e:
            message = " ".join(str(e).split())
            raise ValueError(f"model file {path!r}: invalid YAML: {message}") from None
    problem = _size_problem(data, lambda x: x, _children_of_data)
    if problem:
        raise ValueError(f"model file {path!r}: {problem}")
    return data


def _children_of_data(x):
    if isinstance(x, dict):
        return [*x.keys(), *x.values()]
    return x if isinstance(x, list) else ()


def _size_problem(root, key, children):
    """None, or what is wrong when the tree under `root` (shared subtrees counted at every use)
    holds more than MAX_NODES values or is nested more than MAX_DEPTH levels; linear in the
    number of distinct nodes (each subtree's size is computed once)."""
    size: dict = {}
    stack = [(root, 1, False)]
    on_path: set = set()
    while stack:
        node, depth, done = stack.pop()
        ident = id(key(node))
        if done:
            on_path.discard(ident)
            size[ident] = 1 + sum(size[id(key(c))] for c in children(node))
            if size[ident] > MAX_NODES:
                return (
                    f"expands to more than {MAX_NODES:,} values (YAML aliases are "
                    "counted at every use); refusing to read it"
                )
            continue
        if ident in size:
            continue
        if ident in on_path:
            return "holds a recursive YAML alias (a list or mapping that contains itself)"
        if depth > MAX_DEPTH:
            return (
                f"nested too deeply (lists or mappings more than {MAX_DEPTH} levels "
                "deep); a model file needs at most 6"
            )
        on_path.add(ident)
        stack.append((node, depth, True))
        stack.extend((c, depth + 1, False) for c in children(node))
    return None


def _unique_keys(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r} in one object")
        out[key] = value
    return out


@functools.cache
def _yaml_loader():
    """yaml.SafeLoader that rejects duplicate keys (PyYAML otherwise keeps the last one)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_document(self, node):
            """Bound the expansion of aliases before constructing anything (merge keys `<<`
            copy entries, so even construction could blow up)."""
            problem = _size_problem(node, lambda n: n, _children_of_node)
            if problem:
                raise yaml.constructor.ConstructorError(None, None, problem, node.start_mark)
            return super().construct_document(node)

        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, str) and key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark
                    )
                seen.add(key if isinstance(key, str) else id(key_node))
            return super().construct_mapping(node, deep)

    return UniqueKeyLoader


def _children_of_node(node):
    """Child nodes of a composed YAML node (keys and values of a mapping)."""
    value = node.value
    if isinstance(value, list):
        return [n for item in value for n in (item if isinstance(item, tuple) else (item,))]
    return ()


def _json_text(data) -> str:
    """JSON with one body or element per line."""
    lines = []
    for key, value in data.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            entries = ",\n".join(f"    {json.dumps(v)}" for v in value)
            lines.append(f"  {json.dumps(key)}: [\n{entries}\n  ]")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"
