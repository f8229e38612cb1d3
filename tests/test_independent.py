"""Seed 002's independent-coordinate formulation against the null-space formulation (seed 001).

References: a second formulation (null space + Baumgarte, integrated independently), the
position constraints (kept by Newton, no stabilization), and the multipliers of the augmented
system (unique for these non-redundant mechanisms).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracle.pairs import mechanical_energy

import jaxmb as mb
from jaxmb.models import four_bar, mobile_robot, slider_crank

T1 = 2.0
TS = jnp.linspace(0.0, T1, 101)
TOL = dict(rtol=1e-11, atol=1e-13)


def _free(model, crank_rate):
    """qd0 with the crank turning at crank_rate: derivative of the closed-form configuration."""
    if model.n == 9 and "slider" in model.body_names:
        pose = lambda th: jnp.concatenate(
            [jnp.stack(b) for b in slider_crank.configuration(th, 0.1, 0.3)]
        )
    else:
        pose = lambda th: jnp.concatenate(four_bar.configuration(th, 0.1, 0.35, 0.3, 0.35))
    return jax.jacfwd(pose)(0.5 if "rocker" in model.body_names else 0.3) * crank_rate


@pytest.fixture(scope="module", params=["four_bar"])  # (the slider-crank: same code path)
def runs(request):
    model = slider_crank.build() if request.param == "slider_crank" else four_bar.build()
    qd0 = _free(model, 40.0)
    null = mb.simulate(model, model.q0, qd0, T1, ts=TS, **TOL)
    indep = mb.simulate(model, model.q0, qd0, T1, ts=TS, formulation="independent", **TOL)
    return model, null, indep


def test_same_motion_as_null_space(runs):
    """Both formulations integrate the same dynamics: q agrees to 1e-7 over 2 s (rtol 1e-11:
    the crank makes ~10 revolutions, so 1e-7 on its angle is 1e-9 relative)."""
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
        mb.simulate(
            model, model.q0, mobile_robot.initial_velocity(model), 1.0, formulation="independent"
        )
    with pytest.raises(ValueError, match="initial_z"):
        m = slider_crank.build()
        mb.simulate(
            m, m.q0, jnp.zeros(9), 0.1, formulation=mb.IndependentCoordinates(initial_z=(0, 1))
        )


# --- where the independent coordinates cannot go on: stop with the time and cause ---------


def _reduced_parallelogram(ts, g=9.81, L=1.0):
    """Crank angle theta(ts) and the time it reaches 0 of the N = 1 N-four-bar from theta =
    pi/2, rate -1 rad/s, by its reduced 1-dof equation (hand derivation: two cranks of
    J_end = m L^2 / 3 and a translating coupler, T = (5/6) m L^2 theta'^2, V = 2 m g L sin
    theta, so theta'' = -(6/5) (g / L) cos theta), integrated by scipy at rtol 1e-12."""
    from scipy.integrate import solve_ivp

    def rhs(t, y):
        return [y[1], -1.2 * g / L * np.cos(y[0])]

    def horizontal(t, y):
        return y[0]

    sol = solve_ivp(
        rhs,
        (0.0, float(ts[-1])),
        [np.pi / 2, -1.0],
        t_eval=np.asarray(ts),
        events=horizontal,
        rtol=1e-12,
        atol=1e-12,
        method="DOP853",
    )
    return sol.y[0], float(sol.t_events[0][0])


@pytest.fixture(scope="module")
def collinear():
    """The N = 1 N-four-bar (a parallelogram) from cranks vertical, B0 at 1 m/s: gravity takes
    the cranks down to horizontal (angle 0), where Phi_q loses rank and two branches cross."""
    from jaxmb.models import n_four_bar

    model = n_four_bar.build(1)
    qd0 = n_four_bar.velocity(np.pi / 2, -1.0, 1)
    ts = jnp.linspace(0.0, 1.5, 151)
    theta, t_cross = _reduced_parallelogram(ts)
    ref = jax.vmap(lambda a: n_four_bar.configuration(a, 1))(jnp.asarray(theta))
    indep = mb.simulate(
        model, model.q0, qd0, 1.5, ts=ts, formulation="independent", throw=False, **TOL
    )
    return model, qd0, (ref, t_cross), indep


def test_stops_at_the_collinear_position_instead_of_switching_branch(collinear):
    """Before the fix the run went on with success=True, one crank locked at -pi and the
    energy of this conservative system fell from 20.45 to 18.30 J. Now it stops where the
    cranks reach horizontal (the reduced equation's crossing of angle 0, to one save
    interval: the stop is found at the end of a step), reports `singular`, and every state it
    saved equals the reduced solution (1e-7) and keeps the energy (1e-9 relative: a
    conservation law)."""
    model, _, (ref, t_cross), indep = collinear
    assert not bool(indep.success)
    assert bool(indep.singular)
    assert indep.result == mb.RESULTS.singular
    assert t_cross - 0.05 <= float(indep.t_stop) <= t_cross + 0.011
    reached = np.isfinite(np.asarray(indep.q[:, 0]))
    assert reached.sum() >= 30 and not reached[-1]
    assert np.all(~reached[int(reached.sum()) :])
    assert float(jnp.max(jnp.abs(indep.q[reached] - ref[reached]))) < 1e-7
    e = np.asarray(
        mechanical_energy(
            model.masses, model.inertias, indep.q[reached], indep.qd[reached], (0.0, -9.81)
        )
    )
    assert np.max(np.abs(e - e[0])) < 1e-9 * np.max(np.abs(e))


def test_the_stop_raises_with_its_time_and_pairs(collinear):
    """throw=True (the default): the run raises naming the cause, the time reached and the
    pairs whose rows became dependent."""
    model, qd0, _, indep = collinear
    with pytest.raises(RuntimeError, match=r"singular configuration was reached at t = 0\.") as e:
        mb.simulate(model, model.q0, qd0, 1.5, ts=indep.ts, formulation="independent", **TOL)
    assert "pairs involved" in str(e.value) and "AugmentedLagrangian" in str(e.value)


def test_stops_at_the_dead_point_of_a_driven_four_bar():
    """A non-Grashof four-bar (a = b = c = 0.2, d = 0.5) driven at 2 pi rad/s from 0.5 rad
    reaches its dead point where coupler and rocker align, |AO4|^2 = a^2 + d^2 - 2 a d cos th =
    (b + c)^2, i.e. cos th = 0.65 (closed form), t* = (acos 0.65 - 0.5) / 2 pi. Before the fix
    the run reported success with |Phi| 0.52 m on 0.2 m links; now it stops within one save
    interval after t*, with every saved state on the constraints (1e-10)."""
    model = four_bar.build(a=0.2, b=0.2, c=0.2, d=0.5, theta0=0.5, omega=2 * np.pi)
    qd0 = mb.consistent_velocity(model, model.q0, jnp.zeros(model.n))
    ts = jnp.linspace(0.0, 0.2, 201)
    t_star = (np.arccos(0.65) - 0.5) / (2 * np.pi)
    run = mb.simulate(model, model.q0, qd0, 0.2, ts=ts, formulation="independent", throw=False)
    assert not bool(run.success) and not bool(run.singular)
    assert run.result == mb.RESULTS.nonlinear_divergence
    assert t_star <= float(run.t_stop) <= t_star + 0.0011
    reached = np.isfinite(np.asarray(run.q[:, 0]))
    assert float(ts[reached][-1]) <= t_star < float(ts[~reached][0])
    phi = jax.vmap(model.phi)(run.q[reached], run.ts[reached])
    assert float(jnp.max(jnp.abs(phi))) < 1e-10
    with pytest.raises(RuntimeError, match="the position constraints have no solution"):
        mb.simulate(model, model.q0, qd0, 0.2, ts=ts, formulation="independent")


def test_a_rank_that_is_not_the_rank_at_q0_is_refused_eagerly_and_traced():
    """IndependentCoordinates(rank=1) on the slider-crank (rank 8) enforced one row and
    reported success with |Phi| 0.196. Now it is refused: eagerly with both ranks, inside jit
    (where q0 is traced and only the given rank is known) by the run-time check, shown on a
    pendulum (rank 2: its compile is the smallest)."""
    model = slider_crank.build()
    qd0 = mb.consistent_velocity(model, model.q0, jnp.zeros(model.n))
    option = mb.IndependentCoordinates(rank=1)
    with pytest.raises(ValueError, match="rank=1.*Phi_q has rank 8 at q0"):
        mb.simulate(model, model.q0, qd0, 0.1, formulation=option)
    m = mb.Mechanism()
    bob = m.body("bob", mass=1.0, inertia=0.1, q=(0.5, 0.0, 0.0))
    m.add(mb.Revolute("pin", m.ground, bob, s_i=(0.0, 0.0), s_j=(-0.5, 0.0)))
    pendulum = m.build()
    run = jax.jit(lambda q0: mb.simulate(pendulum, q0, jnp.zeros(3), 0.1, formulation=option).q)
    with pytest.raises(Exception, match=r"r is not the rank of Phi_q at q0"):
        run(pendulum.q0)
