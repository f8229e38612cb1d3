"""The program store (`jaxmb._runtime.program_store`): eager calls with the compilation cache on keep
their traced programs on disk (`jax.export`), so a later process neither traces nor compiles.

References: a stored program must give the ordinary path's numbers bit for bit (it is the same
traced program) and raise the ordinary path's messages; "a later process" is simulated here by
forgetting the in-process copies (`_loaded`), and tests/test_compile_cache.py runs two real
processes. The key is checked against hand-made changes of what a program depends on.
"""

import os

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
    return dict(q0=q0, qd0=qd0, q=traj.q, qd=traj.qd, steps=traj.num_steps, lam=rx.lam,
                solvable=report.solvable, margin=report.margin)


@pytest.fixture
def store(tmp_path):
    _program_store.enable(tmp_path)
    yield tmp_path / "jaxmb-programs"
    _program_store.disable()


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
    assert not [f for f in os.listdir(store) if f.endswith(".skip")]
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
    args = lambda m, q=None: (m, m.q0 if q is None else q, jnp.zeros(m.n), jnp.asarray(0.0),  # noqa: E731
                              True)
    key = lambda *a: _program_store.key(fn, a, {})  # noqa: E731
    base = key(*args(model))
    assert base is not None
    assert key(*args(_pendulum(length=3.0))) == base  # array values: inputs, not the program
    assert key(*args(_pendulum("other_name"))) != base  # a static name
    assert key(*args(model, jnp.zeros((2, 3)))) != base  # a shape
    assert key(*args(model, jnp.zeros(3, jnp.float32))) != base  # a dtype
    assert key(*args(model)[:-1], False) != base  # a static option
    assert _program_store.key(start.check_initial_state, (model, mb.Eliminate((0,)), model.q0,
                                                        0.0, "x"), {}) != \
        _program_store.key(start.check_initial_state, (model, mb.Eliminate((1,)), model.q0,
                                                      0.0, "x"), {})
    saved = jax.config.jax_numpy_rank_promotion
    try:
        jax.config.update("jax_numpy_rank_promotion", "warn" if saved != "warn" else "allow")
        assert key(*args(model)) != base  # a JAX setting a trace depends on
    finally:
        jax.config.update("jax_numpy_rank_promotion", saved)
    monkeypatch.setenv("JAXMB_NATIVE_KERNELS", "0")  # the jnp batched kernels, not jaxmb._linalg.native
    assert key(*args(model)) != base
    monkeypatch.delenv("JAXMB_NATIVE_KERNELS")
    assert key(*args(model)) == base
    # arrays held in static fields are part of the program: by value
    tokens = lambda x, static: _program_store._describe(x, static, out := []) or out  # noqa: E731
    assert tokens(np.arange(3), True) != tokens(np.arange(1, 4), True)
    assert tokens(np.arange(3), False) == tokens(np.arange(1, 4), False)


class _UserRevolute(mb.Revolute):
    """A user's own element class: its source is not part of any key."""


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


def test_traced_calls_bypass_the_store(store):
    """Arguments traced by the user's jit or grad are not the store's business; the numbers
    are the pin force of a pendulum (mass 1, inertia I about its centre, length L, turning at
    1 rad/s through the horizontal): radial m w^2 L = L, tangential m g I / (I + m L^2)."""
    inertia, g = 1e-3, 9.81

    def loss(length):
        m = _pendulum(length=length)
        qd = jnp.stack([0.0, length, 1.0])  # consistent: the pin point at rest
        return jnp.sum(mb.reactions(m, m.q0, qd, 0.0).lam ** 2)

    model = _pendulum()
    lam = jax.jit(lambda q: mb.reactions(model, q, jnp.array([0.0, 1.0, 1.0]), 0.0).lam)(
        model.q0)
    grad = jax.grad(loss)(1.0)
    assert os.listdir(store) == []
    tangential = g * inertia / (inertia + 1.0)
    assert abs(float(jnp.sum(lam**2)) - (1.0 + tangential**2)) < 1e-9
    # d/dL [L^2 + (g I / (I + L^2))^2] at L = 1
    expected = 2.0 - 2.0 * tangential * g * inertia * 2.0 / (inertia + 1.0) ** 2
    assert abs(float(grad) - expected) < 1e-9


def test_host_callback_programs_are_marked_and_run_ordinarily(store, capsys):
    model = _pendulum()
    q0, qd0 = model.q0, jnp.array([0.0, 1.0, 1.0])
    traj = mb.simulate(model, q0, qd0, 0.1, ts=jnp.linspace(0.0, 0.1, 3), progress=True)
    assert [f for f in os.listdir(store) if f.endswith(".skip")]  # the progress meter
    _program_store.disable()
    plain = mb.simulate(model, q0, qd0, 0.1, ts=jnp.linspace(0.0, 0.1, 3))
    assert np.array_equal(np.asarray(traj.q), np.asarray(plain.q))


def test_an_unreadable_store_file_is_rewritten(store):
    model = _pendulum()
    first = mb.consistent_velocity(model, model.q0, jnp.array([0.0, 1.0, 1.0]), 0.0)
    (name,) = os.listdir(store)
    (store / name).write_bytes(b"truncated")
    _program_store._loaded.clear()
    again = mb.consistent_velocity(model, model.q0, jnp.array([0.0, 1.0, 1.0]), 0.0)
    assert np.array_equal(np.asarray(first), np.asarray(again))
    assert (store / name).stat().st_size > len(b"truncated")
