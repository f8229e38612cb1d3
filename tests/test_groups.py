"""Grouped (vmapped same-type) pair evaluation against the plain per-pair loop.

Reference: `oracle.loops.loop_C`, `loop_velocity_residual` and `loop_phi` evaluate every pair on
its own with a Python loop and a separate jacfwd; the grouped kernels must give the same numbers
(exactly: the same float operations run, only batched; 1e-13 allows for XLA's fusion choices).
`Model.kinematic_terms` is checked against C, g and gamma from their own definitions, and C against
central finite differences of g in qd.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracle.loops import loop_C, loop_phi, loop_velocity_residual

import jaxmb as mb
from jaxmb import drive
from jaxmb._model.groups import group_pairs
from jaxmb.models import four_bar, mobile_robot, n_four_bar, slider_crank

TOL = 1e-13


class PythonSine(drive.AbstractDrive):
    """A drive holding a Python function: a leaf that cannot be stacked, so its pair is alone."""

    fn: object = eqx.field(static=False)

    def __call__(self, t):
        return self.fn(t)


def _custom_drive_model():
    """A crank to ground driven by a drive with a Python-function leaf, and a second crank
    with a regular drive (same pair type, different leaves: two groups)."""
    m = mb.Mechanism()
    a = m.body("a", mass=1.0, inertia=0.1, q=(0.5, 0.0, 0.0))
    b = m.body("b", mass=1.0, inertia=0.1, q=(0.5, 1.0, 0.0))
    m.add(mb.Revolute("Oa", m.ground, a, s_i=(0.0, 0.0), s_j=(-0.5, 0.0)))
    m.add(mb.Revolute("Ob", m.ground, b, s_i=(0.0, 1.0), s_j=(-0.5, 0.0)))
    m.add(mb.RelativeAngleDriver("fa", m.ground, a, f=PythonSine(lambda t: 0.3 + jnp.sin(t))))
    m.add(mb.RelativeAngleDriver("fb", m.ground, b, f=drive.Linear(2.0, 0.1)))
    return m.build()


MODELS = {
    "mobile_robot": mobile_robot.build,
    "slider_crank": slider_crank.build,
    "four_bar": four_bar.build,
    "n_four_bar_5": lambda: n_four_bar.build(5),
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def model(request):
    return MODELS[request.param]()


def _state(model, seed=0):
    rng = np.random.default_rng(seed)
    return jnp.asarray(rng.normal(size=model.n)), jnp.asarray(rng.normal(size=model.n)), 0.37


FD_STEP = 1e-3


@eqx.filter_jit
def _all_terms(model, q, qd, t):
    """Grouped and loop evaluations of one state, and central differences of the loop g in qd,
    in one compiled program per model (op by op they took about a minute for the four models)."""
    h = FD_STEP

    def fd_column(e):
        return (
            loop_velocity_residual(model, q, qd + h * e, t)
            - loop_velocity_residual(model, q, qd - h * e, t)
        ) / (2 * h)

    return dict(
        C=model.C(q, t),
        g=model.velocity_residual(q, qd, t),
        phi=model.phi(q, t),
        terms=model.kinematic_terms(q, qd, t),
        b=model.b(q, t),
        gamma=model.gamma(q, qd, t),
        C_loop=loop_C(model, q, t),
        phi_loop=loop_phi(model, q, t),
        g_loop=loop_velocity_residual(model, q, qd, t),
        C_fd=jax.vmap(fd_column, out_axes=1)(jnp.eye(model.n, dtype=q.dtype)),
    )


@pytest.fixture(scope="module")
def values(model):
    q, qd, t = _state(model, 1)
    return q, qd, jax.tree_util.tree_map(np.asarray, _all_terms(model, q, qd, t))


def test_grouped_equals_loop(values):
    """C, g, Phi grouped vs the plain loop (same arithmetic)."""
    _, _, v = values
    assert np.max(np.abs(v["C"] - v["C_loop"])) <= TOL
    assert np.max(np.abs(v["g"] - v["g_loop"])) <= TOL
    assert np.max(np.abs(v["phi"] - v["phi_loop"]), initial=0.0) <= TOL


def test_kinematic_terms_consistent(model, values):
    """kinematic_terms: C = dg/dqd (finite differences), g = C qd + b, gamma as Model.gamma,
    phi = Phi in the holonomic rows and 0 in the Pfaffian ones."""
    _, qd, v = values
    terms = v["terms"]
    assert np.max(np.abs(terms.C - v["C_loop"])) <= TOL
    assert np.max(np.abs(terms.g - (v["C_loop"] @ np.asarray(qd) + v["b"]))) <= 1e-12
    assert np.max(np.abs(terms.gamma - v["gamma"])) <= TOL
    phi = np.zeros(model.num_rows)
    phi[model.holonomic_rows] = v["phi_loop"]
    assert np.max(np.abs(terms.phi - phi)) <= TOL
    # C against central differences of the loop g in qd (g is affine in qd: exact up to round-off)
    assert np.max(np.abs(terms.C - v["C_fd"])) <= 1e-9


def test_groups_partition_pairs():
    """The robot's 14 pairs fall in one group per element type, each pair exactly once; the
    N-four-bar's group count does not grow with N."""
    m = mobile_robot.build()
    starts = np.cumsum([0] + [p.num_rows for p in m.pairs])[:-1]
    groups = group_pairs(m.pairs, starts)
    members = sorted(k for g in groups for k in g.members)
    assert members == list(range(len(m.pairs)))
    types = [{type(m.pairs[k]).__name__ for k in g.members} for g in groups]
    assert all(len(t) == 1 for t in types)  # one element type per group
    assert len(groups) == len({next(iter(t)) for t in types})  # robot: one group per type
    # the N-four-bar has as many groups for N = 2 as for N = 20
    count = [
        len(group_pairs(mm.pairs, np.cumsum([0] + [p.num_rows for p in mm.pairs])[:-1]))
        for mm in (n_four_bar.build(2), n_four_bar.build(20))
    ]
    assert count[0] == count[1]


def test_unstackable_leaf_evaluated_alone():
    """A pair whose drive holds a Python function is grouped alone and still correct."""
    m = _custom_drive_model()
    q, qd, t = _state(m, 2)
    v = _all_terms(m, q, qd, t)
    assert float(jnp.max(jnp.abs(v["C"] - v["C_loop"]))) <= TOL
    assert float(jnp.max(jnp.abs(v["terms"].gamma - v["gamma"]))) <= TOL


def test_grouped_under_jit_vmap_grad():
    """jit/vmap of the grouped C equal the loop per sample; grad through C (w.r.t. geometry)
    equals the grad through the loop version."""
    m = n_four_bar.build(3)
    rng = np.random.default_rng(3)
    qs = jnp.asarray(rng.normal(size=(4, m.n)))
    batched = jax.jit(jax.vmap(lambda q: m.C(q, 0.1)))(qs)
    looped = jax.jit(jax.vmap(lambda q: loop_C(m, q, 0.1)))(qs)
    assert float(jnp.max(jnp.abs(batched - looped))) <= TOL

    def loss(mm, fn):
        return jnp.sum(fn(mm, qs[0], 0.1) ** 2)

    g1 = eqx.filter_jit(eqx.filter_grad(lambda mm: loss(mm, lambda a, q, t: a.C(q, t))))(m)
    g2 = eqx.filter_jit(eqx.filter_grad(lambda mm: loss(mm, loop_C)))(m)
    diff = jax.tree_util.tree_map(lambda a, b: jnp.max(jnp.abs(a - b)), g1, g2)
    assert max(float(x) for x in jax.tree_util.tree_leaves(diff)) <= 1e-12
