"""Errors as results: one exception type, `mb.JaxmbError` (a ValueError; its runtime form is also
equinox's EquinoxRuntimeError, a RuntimeError), carrying the function that reported it, the
element concerned and the cause, a code of the one enumeration `mb.RESULTS`, which extends
diffrax's codes. The function is set by the analysis entry point: no numerical hook takes a
`label` argument."""

import inspect

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import pytest

import jaxmb as mb


@pytest.fixture(scope="module")
def doubled_pin():
    """A pendulum pinned twice at the same point: p = 2, C has 4 rows of rank 2."""
    m = mb.Mechanism()
    b1 = m.body("b1", mass=1.0, inertia=0.1, q=(0.5, 0.0, 0.0))
    m.add(mb.Revolute("O", m.ground, b1, s_i=(0.0, 0.0), s_j=(-0.5, 0.0)))
    m.add(mb.Revolute("O2", m.ground, b1, s_i=(0.0, 0.0), s_j=(-0.5, 0.0)))
    return m.build()


def test_runtime_failure_carries_function_and_cause(doubled_pin):
    """Eliminating one row where p = 2 is refused: the error is every type user code may catch,
    names the caller's method (rows included) as its function and says why as a code; the advice
    (rows that would work) is added to the message, found through the code, not the text."""
    with pytest.raises(mb.JaxmbRuntimeError) as caught:
        mb.reactions(doubled_pin, doubled_pin.q0, jnp.zeros(3), method=mb.Eliminate((0,)))
    err = caught.value
    assert isinstance(err, ValueError) and isinstance(err, RuntimeError)
    assert isinstance(err, eqx.EquinoxRuntimeError) and isinstance(err, mb.JaxmbError)
    assert err.function == "reactions(method=Eliminate(rows=(0,)))"
    assert str(err).startswith(err.function + ": the eliminated rows are not a removable set")
    assert bool(err.cause == mb.RESULTS.not_removable)
    assert "Rows that form a removable set at this state" in str(err)


def test_the_function_follows_the_entry_point(doubled_pin):
    """The same numerical check reports the analysis it runs in: statics names statics."""
    with pytest.raises(mb.JaxmbError, match=r"^statics\(method=Eliminate\(rows=\(0,\)\)\): "):
        mb.statics(doubled_pin, doubled_pin.q0, method=mb.Eliminate((0,)))


def test_element_failure_names_the_element():
    m = mb.Mechanism()
    b1 = m.body("b1", mass=1.0, inertia=0.1)
    with pytest.raises(mb.JaxmbError, match="Revolute 'R': s_j must be a 2-vector") as caught:
        mb.Revolute("R", m.ground, b1, s_i=(0.0, 0.0), s_j=(0.0, 0.0, 0.0))
    assert caught.value.element == "R" and caught.value.cause is None
    assert caught.value.subject == "Revolute 'R'"
    assert caught.value.detail.startswith("s_j must be a 2-vector")


def test_a_model_file_names_its_entry_with_the_failure_detail(tmp_path):
    """A model file's entry reports an element's, a body's or a drive's failure with the
    entry's place instead of the subject (`JaxmbError.detail`, no message edited): the
    subject is not repeated, the detail is whole."""
    entry = {
        "jaxmb_model": 1,
        "bodies": [{"name": "b1", "mass": -1.0, "inertia": 0.1}],
        "elements": [],
    }
    with pytest.raises(ValueError) as caught:
        mb.model_from_dict(entry)
    message = str(caught.value)
    assert "b1" in message and "mass = -1.0 must be positive and finite" in message
    assert "body 'b1': " not in message


def test_results_extend_diffrax_codes(doubled_pin):
    """A trajectory's result is a code of mb.RESULTS: diffrax's codes under their names, and
    jaxmb's own (a start refused under throw=False: the code of its reason, here q0 off the
    pins, inconsistent_positions; with throw=True the error raised carries the same code)."""
    assert issubclass(mb.RESULTS, diffrax.RESULTS)
    promoted = mb.RESULTS.promote(diffrax.RESULTS.dt_min_reached)
    assert bool(promoted == mb.RESULTS.dt_min_reached)
    q0 = doubled_pin.q0.at[1].add(0.01)  # off the pins
    traj = mb.simulate(doubled_pin, q0, jnp.zeros(3), 0.1, throw=False)
    assert bool(traj.result == mb.RESULTS.inconsistent_positions) and not bool(traj.success)
    with pytest.raises(mb.JaxmbRuntimeError) as caught:
        mb.simulate(doubled_pin, q0, jnp.zeros(3), 0.1)
    assert bool(caught.value.cause == mb.RESULTS.inconsistent_positions)
    good = mb.simulate(doubled_pin, doubled_pin.q0, jnp.zeros(3), 0.1, throw=False)
    assert bool(good.result == mb.RESULTS.successful)


def test_hooks_take_no_label():
    """Numerical hooks get the model and the numbers, never the name of the caller."""
    hooks = {
        mb.AbstractStateFormulation.accelerations: ["self", "model", "terms"],
        mb.AbstractStateFormulation.check_start: ["self", "model", "q0", "t0"],
        mb.AbstractReactionMethod.multipliers: ["self", "model", "terms", "qdd"],
        mb.AbstractReactionMethod.bind: ["self", "model"],
    }
    for hook, names in hooks.items():
        assert list(inspect.signature(hook).parameters) == names, hook


def test_a_wrong_argument_carries_the_function(doubled_pin):
    """An argument refused at trace time (a method, a count, a shape, a method's `bind`) is a
    JaxmbError (a ValueError) of the function it was passed to, named in the message and as
    `function`, which the checks read from `reporting` (no label is passed to them)."""
    q0, zeros = doubled_pin.q0, jnp.zeros(3)
    unknown = mb.Compliance({"X": 1.0}, default=1.0)
    cases = (
        (lambda: mb.statics(doubled_pin, q0, method="pinv"), "statics"),
        (lambda: mb.assemble(doubled_pin, q0, max_steps=0), "assemble"),
        (lambda: doubled_pin.C(q0[:2]), "Model.C"),
        (lambda: mb.reactions(doubled_pin, q0, zeros, method=unknown), "reactions"),
    )
    for run, function in cases:
        with pytest.raises(mb.JaxmbError) as caught:
            run()
        assert caught.value.function == function, function
        assert str(caught.value).startswith(function + ": ") and caught.value.cause is None


def test_traced_failure_keeps_the_function(doubled_pin):
    """Inside jit the message is written at trace time, still naming the entry point."""
    run = jax.jit(
        lambda q: mb.reactions(doubled_pin, q, jnp.zeros(3), method=mb.Eliminate((0,))).lam
    )
    with pytest.raises(Exception, match=r"reactions\(method=Eliminate\(rows=\(0,\)\)\): the "):
        jax.block_until_ready(run(doubled_pin.q0))
