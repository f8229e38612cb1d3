"""Pairs added stacked (`Mechanism.add_stacked`) and bodies added from arrays
(`Mechanism.add_bodies`) against the same model built one element at a time, the grouped
force evaluation against a loop over the force elements, and the size of the traced program of
a built-from-arrays grid (it must not grow with the grid)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracle.loops import loop_C, loop_phi

import jaxmb as mb
from jaxmb.models import auxetic


def one_by_one(n, theta=0.3, sizes=None, offsets=None):
    """The held, pulled n x n grid of `auxetic.build`, every body and hinge added alone."""
    q, local = auxetic.hinge_points(n, n, theta, 1.0, sizes, offsets)
    sizes = np.ones(n * n) if sizes is None else np.asarray(sizes)
    m = mb.Mechanism()
    plates = {}
    for k in range(n * n):
        i, j = k % n, k // n
        plates[(i, j)] = m.body(f"P{i}_{j}", mass=sizes[k] ** 2, inertia=sizes[k] ** 4 / 6, q=q[k])
    m.add(mb.Weld("hold", m.ground, plates[(0, 0)], s_i=q[0, :2], s_j=(0.0, 0.0), angle=q[0, 2]))
    for h, (name, a, b, _, _) in enumerate(auxetic.hinges(n, n)):
        m.add(mb.Revolute(name, plates[a], plates[b], s_i=local[h, 0], s_j=local[h, 1]))
    for j in range(n):
        m.add(mb.Force(f"pull_L{j}", plates[(0, j)], s=(0.0, 0.0), f=jnp.array([-1.0, 0.0])))
        m.add(mb.Force(f"pull_R{j}", plates[(n - 1, j)], s=(0.0, 0.0), f=jnp.array([1.0, 0.0])))
    return m.build()


@pytest.fixture(scope="module")
def pair():
    rng = np.random.default_rng(3)
    n = 4
    sizes = 1.0 + 0.05 * rng.standard_normal(n * n)
    offsets = 0.02 * rng.standard_normal((len(auxetic.hinges(n, n)), 2))
    stacked = auxetic.build(n, pull=1.0, sizes=sizes, offsets=offsets)
    return stacked, one_by_one(n, sizes=sizes, offsets=offsets)


def test_stacked_model_equals_one_by_one(pair):
    stacked, alone = pair
    assert any(isinstance(e, type(stacked.pair_store[-1])) for e in stacked.pair_store)
    assert len(stacked.pair_store) == 2  # the weld, and one stack of 24 hinges
    assert stacked.pair_names == alone.pair_names
    assert stacked.body_names == alone.body_names
    assert [stacked.rows(p) for p in stacked.pair_names] == [
        alone.rows(p) for p in alone.pair_names
    ]
    for a, b in zip(stacked.pairs, alone.pairs):  # expanded: the same elements
        assert type(a) is type(b) and a.bodies() == b.bodies() and a.name == b.name
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    np.testing.assert_array_equal(stacked.masses, alone.masses)
    np.testing.assert_array_equal(stacked.q0, alone.q0)
    q = stacked.q0 + 0.01 * jnp.asarray(np.random.default_rng(0).standard_normal(stacked.n))
    qd = jnp.asarray(np.random.default_rng(1).standard_normal(stacked.n))
    np.testing.assert_allclose(stacked.C(q), loop_C(alone, q), atol=1e-14)
    np.testing.assert_allclose(stacked.phi(q), loop_phi(alone, q), atol=1e-14)
    terms = stacked.kinematic_terms(q, qd)
    np.testing.assert_allclose(terms.gamma, alone.gamma(q, qd), atol=1e-12)
    method = mb.Compliance(default=1e7)
    np.testing.assert_allclose(
        mb.statics(stacked, stacked.q0, method=method).lam,
        mb.statics(alone, alone.q0, method=method).lam,
        rtol=1e-9,
        atol=1e-9,
    )
    assert stacked.pair("V2_1").name == "V2_1"


def test_grouped_forces_equal_the_loop(pair):
    """Forces, torques, springs and a bushing: F grouped by type against the sum of every
    element's own generalized force."""
    stacked, _ = pair
    m = mb.Mechanism()
    a = m.body("a", 1.0, 0.1, (0.0, 0.0, 0.1))
    b = m.body("b", 2.0, 0.2, (1.0, 0.5, -0.2))
    c = m.body("c", 1.5, 0.3, (0.3, 1.0, 0.4))
    m.add(mb.Force("f1", a, s=(0.1, 0.2), f=(1.0, -2.0)))
    m.add(mb.Force("f2", c, s=(-0.3, 0.0), f=mb.drive.Harmonic(jnp.array([2.0, -1.0]), 3.0)))
    m.add(mb.Force("f3", b, s=(0.0, 0.4), f=(0.5, 0.5)))
    m.add(mb.Torque("t1", b, tau=0.7))
    m.add(mb.Torque("t2", a, tau=mb.drive.Linear(0.5, 0.2)))
    m.add(mb.SpringDamper("s1", a, b, (0.1, 0.0), (0.0, 0.1), 50.0, 2.0, 0.5))
    m.add(mb.SpringDamper("s2", m.ground, c, (0.0, 0.0), (0.2, 0.1), 30.0, 1.0, 0.8))
    m.add(mb.RotationalSpringDamper("r1", a, c, 5.0, 0.3, 0.1))
    m.add(mb.Bushing("k1", b, c, (0.1, 0.1), (0.0, 0.0), stiffness=(1e3, 2e3, 10.0)))
    m.add(mb.Gravity((0.0, -9.81)))
    model = m.build()
    rng = np.random.default_rng(5)
    q = model.q0 + 0.1 * jnp.asarray(rng.standard_normal(model.n))
    qd = jnp.asarray(rng.standard_normal(model.n))
    for t in (0.0, 0.37):
        expected = sum(f.generalized_force(model, q, qd, t) for f in model.force_elements)
        np.testing.assert_allclose(model.forces(q, qd, t), expected, rtol=1e-13, atol=1e-12)
    q = stacked.q0
    expected = sum(f.generalized_force(stacked, q, q, 0.0) for f in stacked.force_elements)
    np.testing.assert_allclose(stacked.forces(q, q, 0.0), expected, atol=1e-15)


def test_add_stacked_refuses_mixed_patterns_and_bad_values():
    m = mb.Mechanism()
    a, b, c = m.add_bodies(["a", "b", "c"], jnp.ones(3), jnp.ones(3), jnp.zeros((3, 3)))
    s = jnp.zeros((2, 2))
    with pytest.raises(ValueError, match="unlike pair 'A'"):
        m.add_stacked(mb.Revolute, ["A", "B"], i=[a, m.ground], j=[b, c], s_i=s, s_j=s)
    with pytest.raises(ValueError, match="pair 'B' joins a body to itself"):
        m.add_stacked(mb.Revolute, ["A", "B"], i=[a, b], j=[b, b], s_i=s, s_j=s)
    with pytest.raises(ValueError, match=r"pair 'B': s_j = \[nan, 0.0\] is not finite"):
        m.add_stacked(
            mb.Revolute, ["A", "B"], i=[a, b], j=[b, c], s_i=s, s_j=s.at[1, 0].set(jnp.nan)
        )
    with pytest.raises(ValueError, match="leading axis of 2"):
        m.add_stacked(mb.Revolute, ["A", "B"], i=[a, b], j=[b, c], s_i=s[:1], s_j=s)
    with pytest.raises(ValueError, match=r"pair 'B': length must be positive"):
        m.add_stacked(
            mb.Distance, ["A", "B"], i=[a, b], j=[b, c], s_i=s, s_j=s, length=jnp.array([1, -1])
        )
    m.add(mb.Revolute("A", a, b, (0.0, 0.0), (0.0, 0.0)))
    with pytest.raises(ValueError, match="already used"):
        m.add_stacked(mb.Revolute, ["B", "A"], i=[a, b], j=[b, c], s_i=s, s_j=s)
    with pytest.raises(ValueError, match="body 'e': mass = -1.0 must be positive"):
        m.add_bodies(["d", "e"], jnp.array([1.0, -1.0]), jnp.ones(2), jnp.zeros((2, 3)))


def test_traced_stack_values_checked_at_run_time():
    """A non-finite traced hinge point fails inside jit, naming its hinge."""

    @jax.jit
    def build(offsets):
        model = auxetic.build(3, offsets=offsets)
        return model.C(model.q0)

    offsets = jnp.zeros((len(auxetic.hinges(3, 3)), 2))
    build(offsets)
    name = auxetic.hinges(3, 3)[4][0]
    with pytest.raises(Exception, match=f"Revolute '{name}': s_i is not finite"):
        build(offsets.at[4, 0].set(jnp.nan))


def _eqns(jaxpr):
    count = 0
    for e in jaxpr.eqns:
        count += 1
        for p in e.params.values():
            for sub in p if isinstance(p, (list, tuple)) else [p]:
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    count += _eqns(inner)
    return count


def test_traced_grid_build_does_not_grow():
    """C of a grid built from traced sizes and offsets: the traced program of 8 x 8 plates
    (112 hinges) is within 5 % of that of 4 x 4 (24 hinges); one element at a time it grew
    by about ten operations per hinge."""

    def program(n):
        def f(sizes, offsets):
            model = auxetic.build(n, sizes=sizes, offsets=offsets)
            return model.C(model.q0)

        h = len(auxetic.hinges(n, n))
        return _eqns(jax.make_jaxpr(f)(jnp.ones(n * n), jnp.zeros((h, 2))).jaxpr)

    small, large = program(4), program(8)
    assert large <= 1.05 * small, (small, large)
