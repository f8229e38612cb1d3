"""Forward dynamics, reactions, inverse dynamics and statics (issue 4; seed 001 sections 3-4).

Independent references used below:
- a second formulation: the augmented system of seed 001 eq. 11 with the paper's eliminated
  rows (section 4.4) integrated separately, and solved with plain numpy for a non-redundant
  four-bar;
- the identity sum_X -C_X^T lambda_X = M qdd - F (seed 001 eq. 15);
- the solvability analysis (pairs it flags solvable must agree across methods, the others
  must not);
- conservation of energy (a free slider-crank under gravity) and the power balance of a driven
  one (motor torque * omega = dE/dt);
- the constraints themselves (position and velocity drift);
- central finite differences for gradients.
"""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracle.pairs import mechanical_energy

import jaxmb as mb
from jaxmb.models import four_bar, mobile_robot, slider_crank

ROBOT_T1 = 20.0
ROBOT_TS = jnp.linspace(0.0, ROBOT_T1, 201)
VARIANTS = {  # rows 0-based (seed 001's 1-based rows 6 and 21, 18 and 21, 19 and 21)
    "null_space": "null_space",
    "rows 5, 20": mb.Eliminate((5, 20)),
    "rows 17, 20": mb.Eliminate((17, 20)),
    "rows 18, 20": mb.Eliminate((18, 20)),
}
SOLVABLE = ("A", "D", "E", "F", "G", "H", "driver", "W5")
UNSOLVABLE = ("B", "C", "W1", "W2", "W3", "W4")
FIXED_DT = 0.01
INTEGRATED_VARIANTS = ("null_space", "rows 5, 20")  # see robot_variants


@pytest.fixture(scope="module")
def robot():
    model = mobile_robot.build()
    return model, model.q0, mobile_robot.initial_velocity(model)


@pytest.fixture(scope="module")
def robot_adaptive(robot):
    """The paper's run: 20 s, adaptive Tsit5 at rtol 1e-8 with Baumgarte stabilization."""
    model, q0, qd0 = robot
    sim = jax.jit(lambda m, q, qd: mb.simulate(m, q, qd, ROBOT_T1, ts=ROBOT_TS))
    return sim(model, q0, qd0)


@pytest.fixture(scope="module")
def robot_variants(robot):
    """The four formulations of seed 001 section 4.4 on one fixed step sequence (Tsit5,
    dt = 0.01 s, local error ~1e-12): with adaptive steps, the controllers of the four runs
    would pick different step sequences and the runs would differ at the integration tolerance,
    hiding whether the formulations agree. Each variant's reactions use its own method.

    The null-space formulation and the elimination of rows (6, 21) are integrated separately
    (the eliminated augmented system of eq. 11 is a second formulation of the motion); the two
    other eliminations run the same code with other row indices, so they take the null-space
    motion and differ only in their reactions (two fewer compilations of simulate)."""
    model, q0, qd0 = robot
    out = {}
    for key, formulation in VARIANTS.items():
        if key in INTEGRATED_VARIANTS:
            traj = jax.jit(
                lambda m, q, qd, f=formulation: mb.simulate(
                    m,
                    q,
                    qd,
                    ROBOT_T1,
                    ts=ROBOT_TS,
                    dt0=FIXED_DT,
                    stepsize_controller=diffrax.ConstantStepSize(),
                    formulation=f,
                    max_steps=int(ROBOT_T1 / FIXED_DT) + 10,
                )
            )(model, q0, qd0)
        else:
            traj = out["null_space"][0]
        method = "min_norm" if formulation == "null_space" else formulation
        rx = mb.reactions(model, traj, method=method)  # eager: the eliminations share a program
        out[key] = (traj, rx)
    return out


def test_motion_identical_across_variants(robot_variants):
    """Seed 001 section 4.4: eliminating (6,21) or none (null space) gives the same motion (the
    accelerations are unique); the accelerations of every elimination equal the null-space ones
    along it (rx.qdd, from each method's own augmented solve)."""
    ref, ref_rx = robot_variants["null_space"]
    for key, (traj, rx) in robot_variants.items():
        scale = float(jnp.max(jnp.abs(ref_rx.qdd)))
        assert float(jnp.max(jnp.abs(rx.qdd - ref_rx.qdd))) < 1e-9 * scale, key
        assert bool(traj.success), key
        assert float(jnp.max(jnp.abs(traj.q - ref.q))) < 1e-9, key
        assert float(jnp.max(jnp.abs(traj.qd - ref.qd))) < 1e-9, key


def test_turn_right_then_left(robot_adaptive):
    """Fig. 3 of seed 001: the robot first turns right (heading decreases), runs straight, then
    turns left and ends nearly parallel to x0."""
    phi = np.asarray(robot_adaptive.q[:, 2])
    ts = np.asarray(robot_adaptive.ts)
    mid = phi[(ts > 8.0) & (ts < 11.0)]
    assert mid.max() < -0.3
    assert abs(phi[-1]) < 0.1 * abs(mid.min())  # the left turn undoes the right one
    assert np.asarray(robot_adaptive.q[-1, 1]) < -0.3  # displaced to the right of x0


def test_solvable_reactions_identical_unsolvable_differ(robot, robot_variants):
    """Reactions of the pairs that the solvability analysis flags solvable are the same for all
    variants (relative 1e-8); the others depend on the variant (seed 001 Fig. 4)."""
    model, _, _ = robot
    _, ref = robot_variants["null_space"]
    flags = {k: bool(jnp.all(v)) for k, v in ref.solvable.items()}
    assert {k for k, v in flags.items() if v} == set(SOLVABLE)
    assert not any(bool(jnp.any(ref.solvable[k])) for k in UNSOLVABLE)
    for key, (_, rx) in robot_variants.items():
        if key == "null_space":
            continue
        for name in model.pair_names:
            scale = float(jnp.max(jnp.abs(ref.generalized[name])))
            diff = float(jnp.max(jnp.abs(rx.generalized[name] - ref.generalized[name])))
            if name in SOLVABLE:
                assert diff < 1e-8 * scale, (key, name, diff / scale)
            else:
                assert diff > 1e-2 * scale, (key, name, diff / scale)


def test_eliminated_multipliers_are_zero(robot_variants):
    """Seed 001 section 3.1: the multipliers of the eliminated rows are zero."""
    for key, formulation in VARIANTS.items():
        if isinstance(formulation, mb.Eliminate):
            lam = robot_variants[key][1].lam
            assert float(jnp.max(jnp.abs(lam[:, list(formulation.rows)]))) == 0.0


def test_generalized_reactions_sum_to_M_qdd_minus_F(robot, robot_variants):
    """Seed 001 eq. 15: sum_X -C_X^T lambda_X = M qdd - F, for every method."""
    model, _, _ = robot
    M = np.asarray(model.mass_matrix())
    for key, (traj, rx) in robot_variants.items():
        F = np.asarray(jax.vmap(model.forces)(traj.q, traj.qd, traj.ts))
        total = np.asarray(jnp.sum(rx.generalized_array, axis=1))
        want = np.asarray(rx.qdd) @ M.T - F
        assert np.max(np.abs(total - want)) < 1e-10, key


def test_drift_over_twenty_seconds(robot, robot_adaptive):
    """Item 2: with Baumgarte stabilization at rtol 1e-8, position drift < 1e-8 and knife-edge
    velocity residual < 1e-8 over the 20 s run (the constraints are the reference)."""
    model, _, _ = robot
    traj = robot_adaptive
    phi = jax.vmap(model.phi)(traj.q, traj.ts)
    vel = jax.vmap(model.velocity_residual)(traj.q, traj.qd, traj.ts)
    knife = np.concatenate(
        [np.arange(model.rows(w).start, model.rows(w).stop) for w in ("W1", "W2", "W3", "W4", "W5")]
    )
    assert float(jnp.max(jnp.abs(phi))) < 1e-8
    assert float(jnp.max(jnp.abs(vel[:, knife]))) < 1e-8


def test_adaptive_run_agrees_with_fixed_step_run(robot_adaptive, robot_variants):
    """Two independent step sequences agree to the integration tolerance (1e-6 in q)."""
    ref, _ = robot_variants["null_space"]
    assert float(jnp.max(jnp.abs(robot_adaptive.q - ref.q))) < 1e-6


def _slider_crank_energy(model, q, qd, g=9.81):
    return mechanical_energy(model.masses, model.inertias, q, qd, (0.0, -g))


def test_conservative_slider_crank_keeps_energy():
    """A free slider-crank under gravity is conservative: the total energy stays constant to
    1e-8 relative over 10 s (rtol 1e-10 so the integration error is below the bound)."""
    model = slider_crank.build(theta0=0.3)
    pose = lambda th: jnp.concatenate(
        [jnp.stack(b) for b in slider_crank.configuration(th, 0.1, 0.3)]
    )
    qd0 = jax.jacfwd(pose)(0.3) * 15.0  # crank at 15 rad/s: enough to revolve against gravity
    ts = jnp.linspace(0.0, 10.0, 501)
    traj = jax.jit(lambda m: mb.simulate(m, m.q0, qd0, 10.0, ts=ts, rtol=1e-10, atol=1e-12))(model)
    E = _slider_crank_energy(model, traj.q, traj.qd)
    assert np.ptp(np.asarray(traj.q[:, 2])) > 2 * np.pi  # the crank revolves
    assert np.max(np.abs(E - E[0])) / np.max(np.abs(E)) < 1e-8


def test_non_redundant_four_bar_matches_numpy_augmented_system(rng):
    """Seed 001 eq. 11 solved with numpy for a non-redundant four-bar at random consistent
    states: qdd from the null-space formulation and lambda (the multipliers are unique)."""
    model = four_bar.build()
    # one compiled program for jaxmb's answers and the terms numpy needs (op by op: seconds)
    terms = jax.jit(
        lambda q, qd: (
            mb.accelerations(model, q, qd, 0.0),
            mb.reactions(model, q, qd, 0.0),
            model.mass_matrix(),
            model.C(q, 0.0),
            model.forces(q, qd, 0.0),
            model.gamma(q, qd, 0.0),
        )
    )
    for theta in rng.uniform(0, 2 * np.pi, 3):
        q = mb.assemble(model, jnp.concatenate(four_bar.configuration(theta, 0.1, 0.35, 0.3, 0.35)))
        qd = mb.consistent_velocity(model, q, jnp.asarray(rng.normal(size=9)))
        qdd, r, M, C, F, gamma = terms(q, qd)
        M, C, F, gamma = (np.asarray(x) for x in (M, C, F, gamma))
        assert np.linalg.matrix_rank(C) == C.shape[0]
        K = np.block([[M, C.T], [C, np.zeros((C.shape[0], C.shape[0]))]])
        sol = np.linalg.solve(K, np.concatenate([F, gamma]))
        np.testing.assert_allclose(qdd, sol[:9], rtol=0, atol=1e-10 * np.abs(sol).max())
        np.testing.assert_allclose(r.lam, sol[9:], rtol=0, atol=1e-10 * np.abs(sol).max())
        assert all(bool(v) for v in r.solvable.values())


def test_vmapped_batch_equals_loop():
    """8 runs (1 s each) varying the initial speed (eq. 39, 0.05 to 0.2 m/s) and a model
    parameter (the steering amplitude, 0.01 to 0.03 m) as one vmapped batch equal 8 single
    runs to 1e-12. Fixed steps (dt = 0.01 s): batched and single LAPACK calls round differently
    (1e-16), and with adaptive steps that can flip an accept/reject decision somewhere in a
    batch, moving that run by the integration tolerance (we saw 4e-8 at rtol 1e-8)."""
    speeds = jnp.linspace(0.05, 0.2, 8)
    amplitudes = jnp.linspace(0.01, 0.03, 8)
    ts = jnp.linspace(0.0, 1.0, 5)

    def run(v, amplitude):
        model = mobile_robot.build(amplitude=amplitude, t_end=5.0)
        qd0 = mobile_robot.initial_velocity(model, v)
        return mb.simulate(
            model,
            model.q0,
            qd0,
            1.0,
            ts=ts,
            dt0=FIXED_DT,
            stepsize_controller=diffrax.ConstantStepSize(),
        ).q

    batch = jax.jit(jax.vmap(run))(speeds, amplitudes)
    single = jax.jit(run)
    loop = jnp.stack([single(v, a) for v, a in zip(speeds, amplitudes)])
    assert float(jnp.max(jnp.abs(batch - loop))) < 1e-12
    # the parameter matters: runs with the same speed and different amplitudes differ
    other = single(speeds[0], amplitudes[-1])
    assert float(jnp.max(jnp.abs(other - loop[0]))) > 1e-4


def test_throw_false_returns_result_codes():
    """throw=False: a run that runs out of steps reports max_steps_reached per trajectory (here
    in a vmapped batch next to one that succeeds); no exception is raised."""
    model = slider_crank.build()
    qd0 = jnp.zeros(model.n)
    traj = jax.jit(
        jax.vmap(
            lambda t1: mb.simulate(
                model, model.q0, qd0, t1, ts=jnp.array([0.0]), max_steps=30, throw=False
            )
        )
    )(jnp.array([0.05, 10.0]))
    assert bool(traj.success[0]) and not bool(traj.success[1])
    assert not bool(jnp.all(traj.result == mb.RESULTS.successful))


def _example(name):
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "examples", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gradient_of_solvable_reaction_matches_finite_differences():
    """d|F_D|(t = 1 s)/da and d max_t |F_D|/da over [0, 1] s (a: the robot's length unit,
    scaling all geometry), through simulate (forward mode) and the basis-free derivative of the
    null-space solve (examples/reaction_gradient.py), against central differences: 1e-5
    relative. The runs use rtol 1e-11: at the default 1e-8 the adaptive steps' own error
    (~1e-10 N) divided by the difference step makes the differences themselves uncertain at the
    1e-5 level (measured: they moved by 1.6e-5 between two equivalent linear solvers while the
    derivative stayed the same to 1e-9); at 1e-11 they are good to ~1e-7."""
    example = _example("reaction_gradient")
    value_and_jac = jax.jit(
        lambda a: jax.jvp(
            lambda x: example.peak_and_final(x, 1.0, 21, rtol=1e-11), (a,), (jnp.ones_like(a),)
        )
    )
    a, h = jnp.asarray(0.05), 0.05 * 1e-5
    value, grad = value_and_jac(a)
    fd = (value_and_jac(a + h)[0] - value_and_jac(a - h)[0]) / (2 * h)
    assert bool(jnp.all(jnp.isfinite(grad))) and bool(jnp.all(value > 0))
    np.testing.assert_allclose(grad, fd, rtol=1e-5)


def test_accelerations_gradient_finite_on_redundant_robot(robot, rng):
    """The JVP of the null-space solve does not differentiate the SVD, so derivatives exist at
    the redundant configuration; along a direction tangent to Phi = 0 they match central
    differences (1e-6 relative)."""
    model, q0, qd0 = robot
    Phi_q = model.C(q0, 0.0)[:17]
    d = jnp.asarray(rng.normal(size=model.n))
    d = d - jnp.linalg.pinv(Phi_q) @ (Phi_q @ d)  # stay on Phi = 0
    jvp = jax.jit(lambda q, v: jax.jvp(lambda x: mb.accelerations(model, x, qd0, 0.0), (q,), (v,)))
    _, jd = jvp(q0, d)
    assert bool(jnp.all(jnp.isfinite(jd)))
    h = 1e-6  # the differences reuse the compiled jvp's primal output (one compilation)
    fd = (jvp(q0 + h * d, d)[0] - jvp(q0 - h * d, d)[0]) / (2 * h)
    np.testing.assert_allclose(jd, fd, rtol=0, atol=1e-6 * float(jnp.max(jnp.abs(fd))))


def test_inverse_dynamics_power_balance():
    """Inverse dynamics of a slider-crank driven at constant speed under gravity: the motor's
    power tau * omega equals the rate of change of kinetic + potential energy (central
    differences of E along the kinematic solution, an independent check of lambda)."""
    omega = 2.0
    model = slider_crank.build(omega=omega, theta0=0.3)
    ts = jnp.linspace(0.0, 3.0, 301)
    traj, rx = jax.jit(lambda m: mb.inverse_dynamics(m, ts))(model)
    _, _, tau = rx.on_body("motor", "crank")
    E = _slider_crank_energy(model, traj.q, traj.qd)
    dt = float(ts[1] - ts[0])
    dE = (E[2:] - E[:-2]) / (2 * dt)
    power = np.asarray(tau)[1:-1] * omega
    # central differences of E: error dt^2/6 |E'''| ~ 1e-5 |E'''| (E''' = O(10) here)
    assert np.max(np.abs(power - dE)) < 1e-3 * np.max(np.abs(power))
    assert all(bool(jnp.all(v)) for v in rx.solvable.values())


def test_statics_balances_gravity_by_virtual_work():
    """Statics of the slider-crank held by its motor: the holding torque equals dV/dtheta of the
    potential energy along the closed-form configuration (virtual work, central differences)."""
    theta, r, l = 0.7, 0.1, 0.3
    model = slider_crank.build(r, l, omega=0.0, theta0=theta)
    rx = mb.statics(model, model.q0)
    _, _, tau = rx.on_body("motor", "crank")

    def V(th):
        q = np.concatenate([np.asarray(b) for b in slider_crank.configuration(th, r, l)])
        return 9.81 * np.sum(np.asarray(model.masses) * q[1::3])

    h = 1e-5
    dV = (V(theta + h) - V(theta - h)) / (2 * h)
    # the motor torque on the crank balances gravity: tau = dV/dtheta
    assert abs(float(tau) - dV) < 1e-8 * abs(dV)


def test_statics_rejects_non_equilibrium():
    """A free slider-crank under gravity is not in equilibrium: statics raises."""
    model = slider_crank.build(theta0=0.7)
    with pytest.raises(Exception, match="not balanced"):
        mb.statics(model, model.q0)


def test_eliminate_errors(robot):
    """Eliminate rows out of range raise at trace time; a set that is not removable
    (two rows of the same revolute, which are independent) raises inside jit."""
    model, q0, qd0 = robot
    with pytest.raises(ValueError, match="out of range"):
        mb.reactions(model, q0, qd0, 0.0, method=mb.Eliminate((5, 22)))
    with pytest.raises(Exception, match="not a removable set"):
        jax.jit(lambda q, qd: mb.reactions(model, q, qd, 0.0, method=mb.Eliminate((0, 1))).lam)(
            q0, qd0
        )


def test_simulate_rejects_inconsistent_initial_state(robot):
    """An initial state off the constraints is refused with a hint to assemble /
    consistent_velocity."""
    model, q0, qd0 = robot
    with pytest.raises(Exception, match="assemble"):
        mb.simulate(model, q0 + 1e-3, qd0, 0.1)
    with pytest.raises(Exception, match="consistent_velocity"):
        mb.simulate(model, q0, qd0.at[1].set(0.5), 0.1)
