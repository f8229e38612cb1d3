"""The rigid limit (issue 20, item 3): compliant models converge to the `Compliance` reactions.

References: the `Compliance` reactions of the rigid models (statics, inverse dynamics, reactions
along a rigid trajectory), and the expected rate O(1/s) of the derivation in
jaxmb/_reaction_methods/compliance.py (the compliant model deflects by O(1/s), so its geometry,
its damping forces and its dynamic lag differ from the rigid one by O(1/s)). Each study runs at
two or three stiffness scales here; `benchmarks/bench_rigid_limit.py` runs the full sweeps
(benchmarks/results/rigid_limit.json: (a) errors 5.8e-2 at s = 1 to 1.7e-5 at s = 3000, rates
-1.06 to -1.000; (b) 2.5e-2 at s = 3 to 7.3e-5 at s = 1000, rates -0.995 to -1.026) and study
(c), the seed-001 robot over its manoeuvre with tyres (lateral dampers s D) for the knife
edges, which stays out of the suite: compiling the implicit integrator of the 21-coordinate
robot costs about 30 s of CPU (there: 1.5e-2 at s = 10 to 1.5e-4 at s = 1000, rates -0.991 to
-1.000).
The Bushing's generalized force is checked by hand in tests/test_elements.py; the
LateralDamper's here against the knife edge's constraint row (a second formulation).
"""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmb as mb
from jaxmb import rigid_limit
from jaxmb.models import mobile_robot, parallelogram

RATE_TOL = 0.05  # |observed rate + 1|, two scales a decade apart (measured: 0.001 to 0.026)


def test_parallelogram_statics_converges_at_rate_one():
    """(a) The triple-crank parallelogram under gravity and a load, its revolutes bushings of
    stiffness s K: the bushing forces (Newton equilibrium) approach the Compliance(K) statics
    of the rigid model as 1/s (measured rates -1.004, -1.000), to 5e-4 relative at s = 100."""
    study = rigid_limit.parallelogram_statics([10.0, 100.0, 1000.0])
    np.testing.assert_allclose(study["rates"], -1.0, atol=0.02)
    assert study["errors"][1] < 1e-3


def test_parallelogram_cycle_converges_at_rate_one():
    """(b) The parallelogram driven out and back (C3 crank-angle cycle), its revolutes
    bushings of stiffness s K and fixed damping, integrated with the implicit Kvaerno5: the
    bushing forces along the cycle approach the Compliance(K) inverse dynamics as 1/s."""
    study = rigid_limit.parallelogram_cycle([10.0, 100.0], num_saves=11)
    np.testing.assert_allclose(study["rates"], -1.0, atol=RATE_TOL)
    assert study["errors"][1] < 1e-3


def test_lateral_damper_is_the_knife_edge_row():
    """The LateralDamper's generalized force is -C_K^T (d g) with C_K the knife edge's row of
    C (autodiff of its velocity residual, seed 001 eq. 30) and g = C_K qd: a second
    formulation; the model keeps every other pair and gains the damper."""
    model = mobile_robot.build()
    rng = np.random.default_rng(5)
    q = jnp.asarray(model.q0 + 0.05 * rng.normal(size=model.n))
    qd = jnp.asarray(rng.normal(size=model.n))
    soft = rigid_limit.with_slip(model, {"W3": 250.0})
    assert soft.pair_names == tuple(n for n in model.pair_names if n != "W3")

    @eqx.filter_jit
    def both(model, soft, q, qd):
        return model.C(q)[model.rows("W3")][0], soft.force_elements[-1].generalized_force(
            soft, q, qd, 0.0
        )

    row, got = (np.asarray(x) for x in both(model, soft, q, qd))
    want = -row * 250.0 * (row @ qd)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.max(np.abs(want)))


def test_compliant_variants_bad_input():
    """with_bushings and with_slip name the pair and what is wrong; Bushing checks its
    numbers at construction."""
    model = parallelogram.build()
    with pytest.raises(ValueError, match=r"with_bushings: unknown pair\(s\) \['O9'\]"):
        rigid_limit.with_bushings(model, {"O9": 1.0})
    with pytest.raises(
        ValueError,
        match="with_bushings: pair 'motor' is a RelativeAngleDriver; only Revolute and Weld",
    ):
        rigid_limit.with_bushings(model, {"motor": 1.0})
    with pytest.raises(ValueError, match="with_slip: pair 'O1' is a Revolute, not a KnifeEdge"):
        rigid_limit.with_slip(model, {"O1": 1.0})
    m = mb.Mechanism()
    b = m.body("b", 1.0, 0.1)
    with pytest.raises(
        ValueError,
        match=r"Bushing 'bu': stiffness must be 3 numbers \(x, y, "
        r"angle\), got shape \(2,\)",
    ):
        mb.Bushing("bu", m.ground, b, (0.0, 0.0), (0.0, 0.0), stiffness=(1.0, 1.0))
    with pytest.raises(
        ValueError,
        match=r"Bushing 'bu': damping = \[1.0, -2.0, 0.0\] must be "
        "non-negative",
    ):
        mb.Bushing(
            "bu",
            m.ground,
            b,
            (0.0, 0.0),
            (0.0, 0.0),
            stiffness=(1.0, 1.0, 0.0),
            damping=(1.0, -2.0, 0.0),
        )
