"""Seed 002's independent-coordinate formulation against the null-space formulation (seed 001).

References: a second formulation (null space + Baumgarte, integrated independently), the
position constraints (kept by Newton, no stabilization), and the multipliers of the augmented
system (unique for these non-redundant mechanisms).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmb as mb
from jaxmb.models import four_bar, mobile_robot, slider_crank

T1 = 5.0
TS = jnp.linspace(0.0, T1, 251)
TOL = dict(rtol=1e-11, atol=1e-13)


def _free(model, crank_rate):
    """qd0 with the crank turning at crank_rate: derivative of the closed-form configuration."""
    if model.n == 9 and "slider" in model.body_names:
        pose = lambda th: jnp.concatenate([jnp.stack(b) for b in slider_crank.configuration(th, 0.1, 0.3)])
    else:
        pose = lambda th: jnp.concatenate(four_bar.configuration(th, 0.1, 0.35, 0.3, 0.35))
    return jax.jacfwd(pose)(0.5 if "rocker" in model.body_names else 0.3) * crank_rate


@pytest.fixture(scope="module", params=["slider_crank", "four_bar"])
def runs(request):
    model = slider_crank.build() if request.param == "slider_crank" else four_bar.build()
    qd0 = _free(model, 40.0)
    null = mb.simulate(model, model.q0, qd0, T1, ts=TS, **TOL)
    indep = mb.simulate(model, model.q0, qd0, T1, ts=TS, formulation="independent", **TOL)
    return model, null, indep


def test_same_motion_as_null_space(runs):
    """Both formulations integrate the same dynamics: q agrees to 1e-7 over 5 s (rtol 1e-11:
    the crank makes ~25 revolutions, so 1e-7 on its angle is 1e-9 relative)."""
    model, null, indep = runs
    assert bool(indep.success)
    assert float(jnp.ptp(indep.q[:, 2])) > 2 * np.pi
    assert float(jnp.max(jnp.abs(indep.q - null.q))) < 1e-7


def test_positions_exact_without_stabilization(runs):
    """The dependent coordinates are solved by Newton: |Phi| < 1e-10 at every saved instant."""
    model, _, indep = runs
    phi = jax.vmap(model.phi)(indep.q, indep.ts)
    assert float(jnp.max(jnp.abs(phi))) < 1e-10


def test_reaction_matrix_multipliers_equal_augmented_system(runs):
    """Seed 002 eq. 3 (reaction matrix N_c) gives the same multipliers as the augmented system
    of seed 001 eq. 11 (min-norm = unique here) to 1e-6 relative, along the motion."""
    model, _, indep = runs
    lam_nc = jax.jit(jax.vmap(lambda q, qd, t: mb.reaction_matrix_multipliers(model, q, qd, t)))
    rx = jax.jit(lambda tr: mb.reactions(model, tr))(indep)
    got = lam_nc(indep.q[::10], indep.qd[::10], indep.ts[::10])
    want = rx.lam[::10]
    assert float(jnp.max(jnp.abs(got - want))) < 1e-6 * float(jnp.max(jnp.abs(want)))


def test_full_revolution_forces_repartition():
    """A free four-bar whose crank revolves, started with the rocker angle as the independent
    coordinate: the rocker reverses twice per revolution, where it cannot parametrize the motion
    (I_c infinite), so the formulation must re-partition. The switch is reported in
    Trajectory.repartitioned and the motion still equals the null-space run (1e-7)."""
    model = four_bar.build(gravity=None)
    qd0 = _free(model, 20.0)
    ts = jnp.linspace(0.0, 1.0, 101)
    null = mb.simulate(model, model.q0, qd0, 1.0, ts=ts, **TOL)
    option = mb.IndependentCoordinates(initial_z=(8,), switch_ratio=100.0)
    indep = mb.simulate(model, model.q0, qd0, 1.0, ts=ts, formulation=option, **TOL)
    assert float(jnp.ptp(indep.q[:, 2])) > 2 * np.pi
    assert int(jnp.sum(indep.repartitioned)) >= 1
    assert float(jnp.max(jnp.abs(indep.q - null.q))) < 1e-7


def test_independent_rejects_knife_edges():
    model = mobile_robot.build()
    with pytest.raises(ValueError, match="knife edges"):
        mb.simulate(model, model.q0, mobile_robot.initial_velocity(model), 1.0,
                    formulation="independent")
    with pytest.raises(ValueError, match="initial_z"):
        m = slider_crank.build()
        mb.simulate(m, m.q0, jnp.zeros(9), 0.1,
                    formulation=mb.IndependentCoordinates(initial_z=(0, 1)))
