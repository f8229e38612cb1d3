"""The program store (`jaxmb._runtime.program_store`): eager calls with the compilation cache on
keep their traced programs on disk (`jax.export`), so a later process neither traces nor
compiles.

References: a stored program must give the ordinary path's numbers bit for bit (it is the same
traced program) and raise the ordinary path's messages; "a later process" is simulated here by
forgetting the in-process copies (`_loaded`), and tests/test_compile_cache.py runs two real
processes. The key is checked against hand-made changes of what a program depends on.
"""

import os
import re

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmb as mb
from jaxmb._formulations import start
from jaxmb._runtime import errors as _errors, program_store as _program_store


def _pendulum(name="bob_store", length=1.0):
    m = mb.Mechanism()
    bob = m.body(name, mass=1.0, inertia=1e-3, q=(length, 0.0, 0.0))
    m.add(mb.Revolute("pin", m.ground, bob, s_i=(0.0, 0.0), s_j=(-length, 0.0)))
    m.add(mb.Gravity((0.0, -9.81)))
    return m.build()


def _analyses(model):
    """Every kind of eager entry point, as plain arrays."""
    q0 = mb.assemble(model, model.q0 + jnp.array([0.0, 1e-3, 0.0]), 0.0)
    qd0 = mb.consistent_velocity(model, q0, jnp.array([0.0, 1.0, 0.0]), 0.0)
    traj = mb.simulate(model, q0, qd0, 0.3, ts=jnp.linspace(0.0, 0.3, 4))
    rx = mb.reactions(model, traj)
    report = mb.solvability(model, q0, 0.0)
    return dict(
        q0=q0,
        qd0=qd0,
        q=traj.q,
        qd=traj.qd,
        steps=traj.num_steps,
        lam=rx.lam,
        solvable=report.solvable,
        margin=report.margin,
    )


@pytest.fixture
def store(tmp_path):
    _program_store.enable(tmp_path)
    yield tmp_path / "jaxmb-programs"
    _program_store.disable()


def _kinds(store):
    """Each store file's kind ("program", or "skip" for a program that cannot be exported)."""
    return {
        name: _program_store._unpack(name, (store / name).read_bytes())[0]["kind"]
        for name in os.listdir(store)
    }


@pytest.fixture
def traces(monkeypatch):
    """The number of checked programs traced (one _Collector per trace)."""
    count = []
    original = _errors._Collector.__init__

    def counting(self):
        count.append(1)
        original(self)

    monkeypatch.setattr(_errors._Collector, "__init__", counting)
    return count


def test_stored_programs_equal_the_ordinary_path_and_are_not_traced_again(store, traces):
    model = _pendulum()
    exported = _analyses(model)
    assert len(traces) > 0 and len(os.listdir(store)) >= 5  # one file per program kind
    assert set(_kinds(store).values()) == {"program"}  # every one stored
    _program_store._loaded.clear()  # as a new process: the programs come from the files
    traces.clear()
    loaded = _analyses(model)
    assert traces == []  # nothing traced
    _program_store.disable()
    ordinary = _analyses(model)
    for name in ordinary:
        assert np.array_equal(np.asarray(exported[name]), np.asarray(ordinary[name])), name
        assert np.array_equal(np.asarray(loaded[name]), np.asarray(ordinary[name])), name
        assert np.asarray(loaded[name]).dtype == np.asarray(ordinary[name]).dtype


def test_new_values_reuse_the_stored_program(store, traces):
    """Array values are the program's inputs: another length, start or tolerance is the same
    program (and gives that model's own numbers)."""
    short, long = _pendulum(length=0.5), _pendulum(length=2.0)
    a = _analyses(short)
    files = sorted(os.listdir(store))
    traces.clear()
    b = _analyses(long)
    assert traces == [] and sorted(os.listdir(store)) == files
    _program_store.disable()
    assert np.array_equal(np.asarray(b["q"]), np.asarray(_analyses(long)["q"]))
    assert not np.allclose(np.asarray(a["q"])[-1], np.asarray(b["q"])[-1])


def test_key_pins_what_the_program_depends_on(monkeypatch):
    fn = start.check_initial_state
    model = _pendulum()
    args = lambda m, q=None: (
        m,
        m.q0 if q is None else q,
        jnp.zeros(m.n),
        jnp.asarray(0.0),  # noqa: E731
        True,
    )
    key = lambda *a: _program_store.key(fn, a, {})  # noqa: E731
    base = key(*args(model))
    assert base is not None
    assert key(*args(_pendulum(length=3.0))) == base  # array values: inputs, not the program
    assert key(*args(_pendulum("other_name"))) != base  # a static name
    assert key(*args(model, jnp.zeros((2, 3)))) != base  # a shape
    assert key(*args(model, jnp.zeros(3, jnp.float32))) != base  # a dtype
    assert key(*args(model)[:-1], False) != base  # a static option
    assert _program_store.key(
        start.check_initial_state, (model, mb.Eliminate((0,)), model.q0, 0.0, "x"), {}
    ) != _program_store.key(
        start.check_initial_state, (model, mb.Eliminate((1,)), model.q0, 0.0, "x"), {}
    )
    saved = jax.config.jax_numpy_rank_promotion
    try:
        jax.config.update("jax_numpy_rank_promotion", "warn" if saved != "warn" else "allow")
        assert key(*args(model)) != base  # a JAX setting a trace depends on
    finally:
        jax.config.update("jax_numpy_rank_promotion", saved)
    # the jnp batched kernels, not jaxmb._linalg.native
    monkeypatch.setenv("JAXMB_NATIVE_KERNELS", "0")
    assert key(*args(model)) != base
    monkeypatch.delenv("JAXMB_NATIVE_KERNELS")
    assert key(*args(model)) == base
    # arrays held in static fields are part of the program: by value
    tokens = lambda x, static: _program_store._describe(x, static, out := []) or out  # noqa: E731
    assert tokens(np.arange(3), True) != tokens(np.arange(1, 4), True)
    assert tokens(np.arange(3), False) == tokens(np.arange(1, 4), False)


class _UserRevolute(mb.Revolute):
    """A user's own element class: its source is not part of any key."""


class _UserGravity(mb.Gravity):
    """A user's own element class: not rebuilt from a store file."""


def test_what_the_key_cannot_pin_takes_the_ordinary_path(store):
    m = mb.Mechanism()
    bob = m.body("bob_user", mass=1.0, inertia=1e-3, q=(1.0, 0.0, 0.0))
    m.add(_UserRevolute("pin", m.ground, bob, s_i=(0.0, 0.0), s_j=(-1.0, 0.0)))
    user = m.build()
    fn = start.check_initial_state
    assert _program_store.key(fn, (user, user.q0), {}) is None
    assert _program_store.key(fn, (_pendulum(), lambda q: q), {}) is None  # a lambda
    offset = 1.0

    def closure(q):  # noqa: E306
        return q + offset

    assert _program_store.key(fn, (_pendulum(), closure), {}) is None
    q = mb.assemble(user, user.q0, 0.0)
    assert os.listdir(store) == []  # ran, stored nothing
    _program_store.disable()
    assert np.array_equal(np.asarray(q), np.asarray(mb.assemble(user, user.q0, 0.0)))


def test_checks_raise_the_same_message_through_the_store(store):
    model = _pendulum()
    off = model.q0 + jnp.array([0.0, 0.2, 0.0])  # 0.2 m off the pin
    messages = []
    for forget in (False, False, True):  # exported, in-process copy, from the file
        if forget:
            _program_store._loaded.clear()
        with pytest.raises(eqx.EquinoxRuntimeError) as err:
            mb.simulate(model, off, jnp.zeros(3), 0.1)
        messages.append(str(err.value))
    _program_store.disable()
    with pytest.raises(eqx.EquinoxRuntimeError) as err:
        mb.simulate(model, off, jnp.zeros(3), 0.1)
    assert "constraint" in str(err.value)
    assert messages == [str(err.value)] * 3


def _pin_loss(length):
    """The squared pin force of a pendulum (mass 1, inertia I about its centre, length L,
    turning at 1 rad/s through the horizontal): radial m w^2 L = L, tangential
    m g I / (I + m L^2)."""
    m = _pendulum(length=length)
    qd = jnp.stack([0.0, length, 1.0])  # consistent: the pin point at rest
    return jnp.sum(mb.reactions(m, m.q0, qd, 0.0).lam ** 2)


_INERTIA, _G = 1e-3, 9.81
_TANGENTIAL = _G * _INERTIA / (_INERTIA + 1.0)


def _pin_value(length):
    return length**2 + (_G * _INERTIA / (_INERTIA + length**2)) ** 2


def _pin_slope(length):
    return 2.0 * length - (_G * _INERTIA) ** 2 * 4.0 * length / (_INERTIA + length**2) ** 3


def test_traced_calls_use_stored_programs(store, traces):
    """Inside the user's jit and grad the stored programs (with their backward pass) are called
    from the user's trace: a later process traces nothing and gets the same numbers; under vmap and
    forward mode the ordinary path runs (no program stored)."""
    model = _pendulum()
    qd = jnp.array([0.0, 1.0, 1.0])
    jitted = lambda q: mb.reactions(model, q, qd, 0.0).lam  # noqa: E731
    lam = jax.jit(jitted)(model.q0)
    grad = jax.grad(_pin_loss)(1.0)
    # reverse mode: a forward program and its backward pass
    assert set(_kinds(store).values()) == {"program", "backward"} and len(os.listdir(store)) >= 3
    assert abs(float(jnp.sum(lam**2)) - (1.0 + _TANGENTIAL**2)) < 1e-9
    # d/dL [L^2 + (g I / (I + L^2))^2] at L = 1
    expected = 2.0 - 2.0 * _TANGENTIAL * _G * _INERTIA * 2.0 / (_INERTIA + 1.0) ** 2
    assert abs(float(grad) - expected) < 1e-9
    _program_store._loaded.clear()  # as a new process
    traces.clear()
    assert float(jax.grad(_pin_loss)(1.0)) == float(grad)
    assert np.array_equal(np.asarray(jax.jit(jitted)(model.q0)), np.asarray(lam))
    assert traces == []
    # transformations of the user's jitted function: the ordinary path's rules
    lengths = jnp.array([1.0, 2.0])
    batched = jax.vmap(jax.jit(_pin_loss))(lengths)
    assert np.allclose(np.asarray(batched), [_pin_value(1.0), _pin_value(2.0)], rtol=1e-12)
    assert np.allclose(float(jax.jacfwd(jax.jit(_pin_loss))(1.0)), expected, rtol=0, atol=1e-9)
    assert np.allclose(float(jax.grad(jax.jit(_pin_loss))(1.0)), expected, rtol=0, atol=1e-9)
    # vmap of a jitted gradient: the stored forward and backward pass mapped by lax.map
    slopes = jax.vmap(jax.jit(jax.grad(_pin_loss)))(lengths)
    assert np.allclose(np.asarray(slopes), [_pin_slope(1.0), _pin_slope(2.0)], rtol=1e-12)
    files = sorted(os.listdir(store))
    jax.vmap(_pin_loss)(lengths)
    jax.jvp(_pin_loss, (1.0,), (1.0,))
    assert sorted(os.listdir(store)) == files  # vmap, forward mode: nothing stored


def test_jacrev_maps_the_stored_vjp(store):
    """jax.jacrev maps the stored VJP over the cotangents (vmap outside the stored call: the
    batching rule of `jaxmb._runtime.stored_calls`); the Jacobian is the ordinary path's."""

    def lam(length):
        m = _pendulum(length=length)
        return mb.reactions(m, m.q0, jnp.stack([0.0, length, 1.0]), 0.0).lam

    stored = jax.jacrev(lam)(1.0)
    _program_store._loaded.clear()
    assert np.array_equal(np.asarray(jax.jacrev(lam)(1.0)), np.asarray(stored))
    _program_store.disable()
    assert np.allclose(np.asarray(stored), np.asarray(jax.jacrev(lam)(1.0)), rtol=1e-12, atol=0)


@pytest.mark.parametrize("damage", ["a flipped bit in the program", "unloadable StableHLO"])
def test_a_damaged_traced_program_is_a_miss_and_rewritten(store, damage):
    """A stored program for the user's traces is checked when read (it and its backward pass
    must deserialize and lower): a damaged one is a miss, traced again, with the same
    gradient."""
    grad = jax.grad(_pin_loss)(1.0)
    names = os.listdir(store)
    for name in names:
        (store / name).write_bytes(_DAMAGE[damage](name, (store / name).read_bytes()))
    _program_store._loaded.clear()
    with pytest.warns(UserWarning, match="the stored program .* is unusable") as record:
        again = jax.grad(_pin_loss)(1.0)
    programs = {n for n in names if _kinds(store)[n] == "program"}
    assert {n for n in programs if any(n in str(w.message) for w in record)} == programs
    assert float(again) == float(grad) and set(_kinds(store).values()) == {"program", "backward"}


def test_host_callback_programs_are_marked_and_run_ordinarily(store, capsys):
    model = _pendulum()
    q0, qd0 = model.q0, jnp.array([0.0, 1.0, 1.0])
    traj = mb.simulate(model, q0, qd0, 0.1, ts=jnp.linspace(0.0, 0.1, 3), progress=True)
    assert "skip" in _kinds(store).values()  # the progress meter
    _program_store.disable()
    plain = mb.simulate(model, q0, qd0, 0.1, ts=jnp.linspace(0.0, 0.1, 3))
    # the same steps; the meter's callback moves XLA's fusion boundaries, so round-off may
    # differ in the last bits (seen with the tests' compiler settings, tests/conftest.py)
    np.testing.assert_allclose(np.asarray(traj.q), np.asarray(plain.q), rtol=0, atol=1e-14)
    assert int(traj.num_steps) == int(plain.num_steps)


def _velocity(model):
    return mb.consistent_velocity(model, model.q0, jnp.array([0.0, 1.0, 1.0]), 0.0)


def _flip(data, at):
    data = bytearray(data)
    data[at] ^= 0x04
    return bytes(data)


def _repack(name, data, meta=None, program=None):
    """The store file `data` with its metadata or program replaced, checksum made valid."""
    old_meta, old_program = _program_store._unpack(name, data)
    meta = {k: v for k, v in (old_meta if meta is None else meta).items() if k != "key"}
    return _program_store._pack(name, meta, old_program if program is None else program)


def _deeply_nested(name, data):
    """Metadata nested beyond Python's recursion limit, checksummed."""
    import hashlib

    program = _program_store._unpack(name, data)[1]
    text = (
        f'{{"kind":"program","key":"{name}","msgs":["tuple",[]],"skeleton":'
        + "[" * 100_000
        + "]" * 100_000
        + "}"
    ).encode()
    payload = len(text).to_bytes(8, "big") + text + program
    return _program_store._FORMAT + hashlib.sha256(payload).digest() + payload


def _garbled_stablehlo(name, data):
    """A well-formed export whose StableHLO does not deserialize (the issue's "Failed to
    deserialize StableHLO"), checksummed as if written so."""
    exported = jax.export.deserialize(bytearray(_program_store._unpack(name, data)[1]))
    module = bytearray(exported.mlir_module_serialized)
    module[len(module) // 3 : len(module) // 3 + 64] = b"\x5a" * 64
    import dataclasses

    broken = dataclasses.replace(exported, mlir_module_serialized=bytes(module))
    vjp_order = 1 if exported.has_vjp() else 0  # a program for the user's traces keeps its VJP
    return _repack(name, data, program=bytes(broken.serialize(vjp_order=vjp_order)))


_DAMAGE = {
    "truncated": lambda name, data: data[: len(data) // 2],
    "a flipped bit in the program": lambda name, data: _flip(data, len(data) * 2 // 3),
    "a flipped bit in the metadata": lambda name, data: _flip(data, 80),
    "a flipped bit in the header": lambda name, data: _flip(data, 3),
    "another format": lambda name, data: b"truncated",
    "empty": lambda name, data: b"",
    "unloadable StableHLO": _garbled_stablehlo,
    "a class outside the libraries": lambda name, data: _repack(
        name,
        data,
        meta=dict(kind="program", skeleton=["object", "os:system", []], msgs=["tuple", []]),
    ),
    "a builtin reached through jaxmb": lambda name, data: _repack(
        name,
        data,
        meta=dict(kind="program", skeleton=["function", "jaxmb:_os.system"], msgs=["tuple", []]),
    ),
    "an output the program lacks": lambda name, data: _repack(
        name, data, meta=dict(kind="program", skeleton=["slot", 7], msgs=["tuple", []])
    ),
    "metadata without its parts": lambda name, data: _repack(name, data, meta=dict(kind="program")),
    "deeply nested metadata": _deeply_nested,
    "another key": lambda name, data: _program_store._pack(
        "0" * 64, _program_store._unpack(name, data)[0], _program_store._unpack(name, data)[1]
    ),
}


@pytest.mark.parametrize("damage", list(_DAMAGE))
def test_a_damaged_store_file_is_a_miss_and_rewritten(store, damage):
    """Disk corruption or a file that fails any check: one warning naming the file, the program
    traced again, the same numbers, and a valid file in its place (no exception, then or in a
    later process)."""
    model = _pendulum()
    first = _velocity(model)
    (name,) = os.listdir(store)
    (store / name).write_bytes(_DAMAGE[damage](name, (store / name).read_bytes()))
    _program_store._loaded.clear()  # as a new process
    with pytest.warns(
        UserWarning,
        match=f"the stored program .*{name} is unusable .*; it is traced again and rewritten",
    ):
        again = _velocity(model)
    assert np.array_equal(np.asarray(first), np.asarray(again))
    assert _kinds(store) == {name: "program"}  # rewritten, valid
    _program_store._loaded.clear()
    assert np.array_equal(np.asarray(_velocity(model)), np.asarray(first))  # from the file


class _Planted:
    """Unpickling it runs code: it creates the file `marker`."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return open, (self.marker, "w")


def test_a_planted_pickle_never_runs(store, tmp_path):
    """Store files are data: a pickle in the folder (under a program's own name, or as the
    earlier format's dictionary) is never unpickled; it is a damaged file, rewritten."""
    import pickle

    model = _pendulum()
    first = _velocity(model)
    (name,) = os.listdir(store)
    marker = tmp_path / "pickle-ran"
    for planted in (
        _Planted(str(marker)),
        dict(exported=_Planted(str(marker)), skeleton=None, msgs=()),
    ):
        (store / name).write_bytes(pickle.dumps(planted))
        _program_store._loaded.clear()
        with pytest.warns(UserWarning, match="is unusable"):
            again = _velocity(model)
        assert not marker.exists()
        assert np.array_equal(np.asarray(first), np.asarray(again))
    import ast  # and nothing that could unpickle is imported

    with open(_program_store.__file__) as fh:
        tree = ast.parse(fh.read())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    imported |= {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert not imported & {"pickle", "cloudpickle", "dill", "marshal", "shelve"}


def test_outputs_are_rebuilt_from_data():
    """The output structures of every kind of entry point (equinox Modules with static fields,
    diffrax's result enumeration, tuples and None) go through JSON and come back equal."""
    import itertools
    import json

    import diffrax

    from jaxmb.models import slider_crank

    Slot = _program_store._Slot

    def skeleton(tree):  # arrays as the program's outputs
        count = itertools.count()
        return jax.tree.map(lambda x: Slot(next(count)) if eqx.is_array(x) else x, tree)

    cases = [
        (Slot(0), (Slot(1), None, diffrax.RESULTS.successful, 3, "x", 2.5, -0.0, float("nan"))),
        dict(a=[Slot(0), (np.float64(1.5), np.arange(3, dtype=np.int32))], b=True),
        skeleton(mb.Gravity((0.0, -9.81))),
        skeleton(slider_crank.build()),  # a whole model: elements, drives, names
    ]
    for value in cases:
        encoded = _program_store._encode(value)
        text = json.loads(json.dumps(encoded))
        rebuilt = _program_store._decode(text, 100)
        assert _program_store._encode(rebuilt) == encoded
        assert _program_store._same(value, text, 100)
        assert type(rebuilt) is type(value)
    with pytest.raises(_program_store._Unpinned):  # not data: not stored (ordinary path)
        _program_store._encode(_UserGravity((0.0, -9.81)))
    with pytest.raises(_program_store._Unpinned):
        _program_store._encode(lambda q: q)


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")
@pytest.mark.parametrize("case", ["others", "group", "owner", "file", "under a file"])
def test_a_folder_others_could_write_to_is_refused(tmp_path, case):
    """A store folder whose files someone else could write chooses the programs this process
    runs: refused, naming the folder and the problem; nothing is enabled."""
    cache = tmp_path / "cache"
    programs = cache / "jaxmb-programs"
    programs.mkdir(parents=True)
    expected = {
        "others": r"is writable by others \(mode 0o702\)",
        "group": r"is writable by group \(mode 0o720\)",
        "owner": r"belongs to another user \(uid \d+, yours is \d+\)",
        "file": "is a file, not a folder",
        "under a file": "cannot be a folder: a part of that path is a file",
    }[case]
    if case == "others":
        programs.chmod(0o702)
    elif case == "group":
        programs.chmod(0o720)
    elif case == "owner":
        if os.getuid() != 0:  # an ordinary user cannot give a folder away: root's own
            assert os.stat("/").st_uid != os.getuid()
            assert re.match(expected, _program_store.folder_problem("/"))
            return
        os.chown(programs, 65534, -1)
    elif case == "file":
        programs.rmdir()
        programs.write_text("not a folder")
    else:
        programs.rmdir()
        cache.rmdir()
        cache.write_text("not a folder")
    where = os.path.join(cache, "jaxmb-programs")
    with pytest.raises(
        ValueError, match=f"^the program store folder {re.escape(where)} {expected}"
    ):
        _program_store.enable(cache)
    assert _program_store.directory() is None


def test_a_new_store_folder_is_the_users_only(tmp_path):
    old = os.umask(0o002)  # a umask that would let the group write
    try:
        folder = _program_store.enable(tmp_path / "new" / "cache")
    finally:
        os.umask(old)
        _program_store.disable()
    assert os.stat(folder).st_mode & 0o777 == 0o700
