"""Results print their values: `print(rx)` of a `Reactions` and `print(fr)` of a
`FrictionForces` show the numbers, named by pair (or friction element) and body, with the
uniqueness flags; along a trajectory or a batch the range min .. max of each. Inside jit (no
values) they say so instead of failing."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmb as mb
from jaxmb._analyses.report import _cell
from jaxmb.models import slider_crank


def rows_of(text):
    """{(pair, body): [cells]} of a printed Reactions table (a continuation row inherits the
    pair of the row above)."""
    table, pair = {}, None
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if line.split()[:1] == ["pair"]) + 1
    for line in lines[start:]:
        if not line.strip():
            break
        cells = [c.strip() for c in line[2:].split("  ") if c.strip()]
        if not line[2].isspace():  # a new pair: name, verdict, body, fx, fy, torque
            pair, cells = cells[0], cells[2:]
        table[(pair, cells[0])] = cells[1:]
    return table


@pytest.fixture(scope="module")
def beam():
    """A beam on two pins (one redundant row), pushed sideways (docs/concepts/solvability.md)."""
    m = mb.Mechanism()
    beam = m.body("beam", mass=2.0, inertia=2.0 / 3.0, q=(1.0, 0.0, 0.0))
    m.add(mb.Revolute("left", m.ground, beam, s_i=(0.0, 0.0), s_j=(-1.0, 0.0)))
    m.add(mb.Revolute("right", m.ground, beam, s_i=(2.0, 0.0), s_j=(1.0, 0.0)))
    m.add(mb.Gravity((0.0, -9.81)))
    m.add(mb.Force("push", beam, s=(0.0, 0.0), f=(10.0, 0.0)))
    return m.build()


def test_reactions_at_one_state_print_their_values(beam):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mb.NonUniqueReactionWarning)
        rx = mb.statics(beam, beam.q0, method=mb.Eliminate((0,)))
    text = repr(rx)
    assert str(rx) == text and "f64[" not in text
    assert text.splitlines()[0] == "Reactions (method: Eliminate(rows=(0,)))"
    assert "  left   NOT unique  beam       0  9.81   -9.81" in text.splitlines()
    assert "  right  NOT unique  beam     -10  9.81    9.81" in text.splitlines()
    table = rows_of(text)
    for pair in ("left", "right"):
        np.testing.assert_allclose(
            [float(c) for c in table[(pair, "beam")]],
            np.asarray(rx.on_body(pair, "beam")),
            rtol=1e-5,
            atol=1e-12,
        )


def test_reactions_along_a_trajectory_print_ranges():
    """Each pair on each of its bodies (A joins crank and rod: two rows), ground left out;
    every cell is min .. max over the states, or one number where it does not vary."""
    model = slider_crank.build(omega=2 * jnp.pi)
    _, rx = mb.inverse_dynamics(model, jnp.linspace(0.0, 1.0, 9))
    text = repr(rx)
    assert text.splitlines()[0] == "Reactions (method: min_norm) at 9 states, min .. max over them"
    table = rows_of(text)
    assert list(table) == [
        ("O", "crank"),
        ("A", "crank"),
        ("A", "rod"),
        ("B", "rod"),
        ("B", "slider"),
        ("P", "slider"),
        ("motor", "crank"),
    ]
    assert rx.pair_bodies == (
        ("crank",),
        ("crank", "rod"),
        ("rod", "slider"),
        ("slider",),
        ("crank",),
    )
    for (pair, body), cells in table.items():
        for cell, values in zip(cells, rx.on_body(pair, body)):
            values = np.asarray(values)
            if ".." in cell:
                lo, hi = (float(v) for v in cell.split(".."))
                np.testing.assert_allclose([lo, hi], [values.min(), values.max()], rtol=1e-3)
            else:
                np.testing.assert_allclose(values, float(cell), rtol=1e-5, atol=1e-9)
    assert table[("motor", "crank")][:2] == ["0", "0"]  # a driver applies a torque only
    assert "unique" in text and "NOT unique" not in text


def test_vmapped_reactions_name_the_batch_and_traced_ones_print_no_values(beam):
    qs = jnp.broadcast_to(beam.q0, (2, 3, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mb.NonUniqueReactionWarning)
        rx = jax.vmap(jax.vmap(lambda q: mb.statics(beam, q)))(qs)
    assert repr(rx).splitlines()[0] == (
        "Reactions (method: min_norm) at 6 states (2 x 3), min .. max over them"
    )
    shown = []
    jax.jit(lambda q: shown.append(repr(mb.statics(beam, q))) or q)(beam.q0)
    assert shown == ["Reactions(method='min_norm', pairs=('left', 'right'), values not concrete)"]
    shapes = jax.eval_shape(lambda q: mb.statics(beam, q), beam.q0)
    assert "values not concrete" in repr(shapes)


def test_cells_drop_round_off_and_negative_zero():
    assert _cell(np.array([-0.0]), 0.0) == "0"
    assert _cell(np.array([1e-17, 2.0]), 1e-12) == "0 .. 2"
    assert _cell(np.array([3.0, 3.0]), 0.0) == "3"
    assert _cell(np.zeros(0), 0.0) == "-"


@pytest.fixture(scope="module")
def block():
    """A 2 kg block on a guide along x, pushed by 10 N, with friction mu = 0.3 in its guide
    (slider 0.1 m long): at 1 m/s the friction force is mu m g = 5.886 N."""
    m = mb.Mechanism()
    block = m.body("block", mass=2.0, inertia=0.01, q=(0.0, 0.0, 0.0))
    m.add(mb.Translational("P", block, m.ground, s_i=(0.0, 0.0), s_j=(0.0, 0.0), v=(0.0, 1.0)))
    m.add(mb.Gravity((0.0, -9.81)))
    m.add(mb.Force("push", block, s=(0.0, 0.0), f=(10.0, 0.0)))
    m.add(mb.TranslationalFriction("fP", "P", mu=0.3, length=0.1))
    return m.build()


def test_friction_forces_print_their_values(block):
    qd = jnp.array([1.0, 0.0, 0.0])
    fr = mb.friction_forces(block, block.q0, qd)
    text = repr(fr)
    assert text.splitlines()[0].startswith("Friction forces (Newton's method converged, ")
    assert "f64[" not in text
    header, row = text.splitlines()[-2:]
    assert header.split() == ["element", "force", "slip", "rate", "power", "normal", "load"]
    name, force, rate, power, load = row.split()
    assert name == "fP"
    shown = np.array([float(force), float(rate), float(power), float(load)])
    np.testing.assert_allclose(
        shown, [fr.force[0], fr.slip_rate[0], fr.power[0], fr.normal_load[0]], rtol=1e-5
    )
    # |T| = mu m g at a slip speed of 1 m/s, T positive with the slip rate
    np.testing.assert_allclose(
        np.abs(shown), [0.3 * 2 * 9.81, 1.0, 0.3 * 2 * 9.81, 2 * 9.81], rtol=1e-5
    )
    assert shown[0] * shown[1] > 0
    batch = jax.vmap(lambda v: mb.friction_forces(block, block.q0, v))(
        jnp.array([[1.0, 0.0, 0.0], [2.0, 0.0, 0.0]])
    )
    assert repr(batch).splitlines()[0].startswith("Friction forces at 2 states, min .. max")
    rx = mb.reactions(block, block.q0, qd)  # its friction elements are listed under the pairs
    assert rx.friction_names == ("fP",)
    friction = repr(rx).splitlines()[-2:]
    assert friction[0].split() == ["friction", "force", "or", "torque"]
    assert friction[1].split()[0] == "fP"
    np.testing.assert_allclose(abs(float(friction[1].split()[1])), 5.886, rtol=1e-5)
