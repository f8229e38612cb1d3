"""The augmented-Lagrangian formulation (`mb.AugmentedLagrangian`) and its sparse core.

References, each independent of the code under test:
- the sparse matrix S = M + alpha C'^T C' against a dense numpy assembly from the dense C of
  `Model.C` (1e-12 relative: one sum of the same products in another order);
- its solves: backward error |S x - b| <= 1e-12 |S| |x|, and against numpy's dense solve within
  the forward bound 100 eps cond(S) |x| (cond(S) reaches 2e8 for the four-bar's light rods);
- the AL accelerations against the null-space ones (`mb.accelerations`, seed 001 eq. 13,
  one pivoted QR): 1e-9 relative to |qdd| (the iteration stops at tol 1e-12 relative; the
  factorization's round-off, about eps cond(S), is the floor);
- the integrated motion against the null-space formulation at rtol 1e-10 (1e-8: two step
  sequences, each within its local errors);
- derivatives against central differences (relative 1e-6, h = 1e-6: truncation h^2 ~ 1e-12,
  round-off eps / h ~ 1e-10 times the accelerations' size).
"""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmb as mb
from jaxmb._formulations import augmented_lagrangian as al, projecting
from jaxmb._linalg import sparse_cholesky as sc
from jaxmb._model.terms import state_terms
from jaxmb.models import (
    composed_pendulum,
    four_bar,
    mobile_robot,
    n_four_bar,
    parallelogram,
    slider_crank,
)

MODELS = {
    "slider_crank": slider_crank.build,
    "four_bar": four_bar.build,
    "n_four_bar": lambda: n_four_bar.build(4),
    "mobile_robot": mobile_robot.build,
    "parallelogram": parallelogram.build,
    "composed_pendulum": composed_pendulum.build,
}
FORMULATION = mb.AugmentedLagrangian()


def _state(model, seed=0):
    """A consistent state near q0 with a random velocity."""
    rng = np.random.default_rng(seed)
    qd = mb.consistent_velocity(model, model.q0, jnp.asarray(rng.normal(size=model.n)))
    return model.q0, qd


def _system(model, q, qd, t=0.0):
    """The system S at (q, t) on the path `al.is_dense` chooses."""
    if al.is_dense(model):
        return al.dense_system(model.mass_diagonal(), model.C(q, t), FORMULATION.penalty)
    pairs, groups, _, _ = al.pattern(model)
    terms = al.constraint_blocks(pairs, groups, model.num_rows, model.kind, q, qd, jnp.asarray(t))
    return al.system(model, model.mass_diagonal(), terms.blocks, FORMULATION.penalty)


def _accelerations(model, q, qd, t=0.0):
    return al.accelerations(model, FORMULATION, state_terms(model, q, qd, jnp.asarray(t)))


@pytest.fixture(params=["sparse", "dense"])
def path(request, monkeypatch):
    """Both factorizations of S: the sparse level schedule (forced for every model) and the
    dense Cholesky of small models (`al.DENSE_BODIES`)."""
    monkeypatch.setattr(al, "DENSE_BODIES", 0 if request.param == "sparse" else 10**6)
    return request.param


# every model on the dense path; the sparse path on the four with the most structure (suite
# time: the four-bar and the composed pendulum add no case of the level schedule)
@pytest.mark.parametrize(
    "name,path",
    [(n, "dense") for n in sorted(MODELS)]
    + [(n, "sparse") for n in ("mobile_robot", "n_four_bar", "parallelogram", "slider_crank")],
    indirect=["path"],
)
def test_sparse_matrix_and_solve_match_dense_numpy(name, path):
    model = MODELS[name]()
    q, qd = _state(model)
    s = _system(model, q, qd)
    C = np.asarray(model.C(q, 0.0))
    mass = np.asarray(model.mass_diagonal())
    D = np.asarray(s.scale)
    np.testing.assert_allclose(
        D, 1.0 / np.sqrt(np.einsum("ij,j,ij->i", C, 1.0 / mass, C)), rtol=1e-12
    )
    S = np.diag(mass) + float(FORMULATION.penalty) * (C * D[:, None]).T @ (C * D[:, None])
    dense = sc.to_dense(s.S.symbolic, s.S.values) if path == "sparse" else s.S.values
    assert (path == "sparse") == isinstance(s.S, sc.Factorization)
    np.testing.assert_allclose(np.asarray(dense), S, rtol=0, atol=1e-12 * np.max(np.abs(S)))
    b = np.random.default_rng(1).normal(size=model.n)
    x = np.asarray(s.S.solve(jnp.asarray(b)))
    # backward error of the sparse solve (what a Cholesky guarantees whatever cond(S)): 1e-12
    # relative; the dense path multiplies by S^-1, whose error is the forward bound below
    if path == "sparse":
        residual = np.max(np.abs(S @ x - b))
        assert residual <= 1e-12 * np.max(np.abs(S)) * np.max(np.abs(x))
    # and the forward error within the bound cond(S) eps allows, against numpy's dense solve
    reference = np.linalg.solve(S, b)
    bound = 100 * np.finfo(float).eps * np.linalg.cond(S) * np.max(np.abs(reference))
    np.testing.assert_allclose(x, reference, rtol=0, atol=bound)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_accelerations_match_the_null_space_solve(name, path):
    model = MODELS[name]()
    q, qd = _state(model, 2)
    reference = np.asarray(mb.accelerations(model, q, qd, 0.0))
    qdd = np.asarray(_accelerations(model, q, qd))
    np.testing.assert_allclose(
        qdd, reference, rtol=0, atol=1e-9 * max(1.0, np.max(np.abs(reference)))
    )


def test_vmap_equals_a_loop():
    model = mobile_robot.build()
    q, _ = _state(model)
    qds = jnp.stack([_state(model, k)[1] for k in range(4)])
    one = lambda qd: _accelerations(model, q, qd)  # noqa: E731
    batched = jax.jit(jax.vmap(one))(qds)
    looped = jnp.stack([jax.jit(one)(qd) for qd in qds])
    np.testing.assert_allclose(np.asarray(batched), np.asarray(looped), rtol=0, atol=1e-12)


@pytest.mark.parametrize("path", ["sparse", "dense"], indirect=True)
def test_gradient_on_a_redundant_parallelogram_matches_central_differences(path):
    """d/d(theta, L) of a scalar of the AL accelerations and of the projections of a state off
    the constraints (position Newton iterations and velocity correction), on the parallelogram
    (a redundant coupler: C is rank-deficient everywhere), against central differences (h =
    1e-6; both are smooth maps: fixed iteration counts), on both factorizations of S."""

    def loss(params):
        theta, L = params
        model = parallelogram.build(L=L, theta=theta, motor=False)
        q = model.q0
        qd = mb.consistent_velocity(model, q, jnp.ones(model.n))
        qdd = _accelerations(model, q, qd)
        off = 1e-6 * jnp.cos(jnp.arange(model.n))  # a drift of a step's local error
        q1, qd1, _ = FORMULATION.project_state(model, q + off, qd + off, jnp.asarray(0.0))
        return jnp.sum(jnp.sin(qdd)) + jnp.sum(jnp.sin(q1)) + jnp.sum(jnp.sin(qd1))

    _gradient_matches_central_differences(loss, jnp.asarray([0.7, 0.2]), 1e-6, 1e-6)


@pytest.fixture(scope="module")
def crank_runs():
    model = slider_crank.build()
    q0, qd0 = model.q0, mb.consistent_velocity(model, model.q0, jnp.zeros(model.n).at[2].set(3.0))
    ts = jnp.linspace(0.0, 1.0, 11)
    opts = dict(ts=ts, rtol=1e-10, atol=1e-12)
    return (
        mb.simulate(model, q0, qd0, 1.0, **opts),
        mb.simulate(model, q0, qd0, 1.0, formulation="augmented_lagrangian", **opts),
        model,
    )


def test_motion_matches_the_null_space_formulation(crank_runs):
    reference, run, model = crank_runs
    assert bool(run.success)
    np.testing.assert_allclose(run.q, reference.q, rtol=0, atol=1e-8)
    np.testing.assert_allclose(run.qd, reference.qd, rtol=0, atol=1e-7)
    # the projections hold the constraints at round-off at every saved instant
    phi = jax.vmap(lambda q, t: model.phi(q, t))(run.q, run.ts)
    assert float(jnp.max(jnp.abs(phi))) < 1e-10


def test_robot_motion_matches_the_null_space_formulation():
    """The overconstrained mobile robot of seed 001 (knife edges: Pfaffian rows)."""
    model = mobile_robot.build()
    q0, qd0 = model.q0, jnp.zeros(model.n)
    ts = jnp.linspace(0.0, 2.0, 5)
    opts = dict(ts=ts, rtol=1e-10, atol=1e-12)
    reference = mb.simulate(model, q0, qd0, 2.0, **opts)
    run = mb.simulate(model, q0, qd0, 2.0, formulation=mb.AugmentedLagrangian(), **opts)
    np.testing.assert_allclose(run.q, reference.q, rtol=0, atol=1e-8)


def _contradicting_drivers():
    """A crank driven at two speeds: consistent at t = 0 (both drivers agree on angle and
    speed), not in acceleration, and inconsistent in position after."""
    m2 = mb.Mechanism()
    crank = m2.body("crank", mass=1.0, inertia=1e-3, q=(0.05, 0.0, 0.0))
    m2.add(mb.Revolute("O", m2.ground, crank, s_i=(0.0, 0.0), s_j=(-0.05, 0.0)))
    m2.add(mb.RelativeAngleDriver("motor", m2.ground, crank, f=mb.drive.Linear(1.0)))
    m2.add(
        mb.RelativeAngleDriver("brake", m2.ground, crank, f=mb.drive.Polynomial((0.0, 1.0, 5.0)))
    )
    return m2.build()


def test_inconsistent_constraints_stop_with_the_cause():
    """Two drivers that contradict each other (the crank driven at two speeds): C qdd = gamma
    has no solution, the iteration cannot converge, and the run says so instead of going on."""
    qd0 = jnp.asarray([0.0, 0.05, 1.0])
    model = _contradicting_drivers()
    with pytest.raises(RuntimeError, match="augmented-Lagrangian iteration"):
        mb.simulate(model, model.q0, qd0, 0.5, formulation=mb.AugmentedLagrangian())


def test_inconsistent_right_hand_side_is_finite():
    """Where C qdd = gamma has no solution (the contradicting drivers at t = 0.3) the
    iteration reports it (`consistent` False, which `diagnose_stop` reads) but qdd stays
    finite: a nan in a rejected trial stage of an adaptive run made reverse-mode gradients
    through the whole integration nan (found on the robot over 2 s; its gradient against
    central differences is in benchmarks/bench_gradient.py, too slow to compile here)."""
    model = _contradicting_drivers()
    terms = state_terms(model, model.q0, jnp.asarray([0.0, 0.05, 1.0]), jnp.asarray(0.3))
    qdd, consistent = al._accelerations(model, FORMULATION, terms)
    assert not bool(consistent)
    assert np.all(np.isfinite(np.asarray(al.accelerations(model, FORMULATION, terms))))
    grad = jax.grad(
        lambda q: jnp.sum(
            al.accelerations(model, FORMULATION, state_terms(model, q, terms.qd, terms.t))
        )
    )(model.q0)
    assert np.all(np.isfinite(np.asarray(grad)))


def _fixed_step_loss(build, T, dt, readout):
    """loss(p) = readout(final q) of a fixed-step AL simulation of build(p) from rest (its
    consistent initial velocity): a fixed step sequence makes the discrete map smooth in p, so
    central differences of it are the reference for its reverse-mode gradient."""

    def loss(p):
        model, qd0 = build(p)
        traj = mb.simulate(
            model,
            model.q0,
            qd0,
            T,
            ts=jnp.asarray([T]),
            dt0=dt,
            stepsize_controller=diffrax.ConstantStepSize(),
            formulation=FORMULATION,
            max_steps=int(T / dt) + 10,
        )
        return readout(traj.q[-1])

    return loss


def _gradient_matches_central_differences(loss, p, h, rtol):
    # one compiled program (value and gradient) also gives the differences' values: a second
    # compile of the forward loss would cost more than the extra backward passes
    value_and_grad = jax.jit(jax.value_and_grad(loss))
    grad = np.asarray(value_and_grad(p)[1])
    f = lambda x: value_and_grad(x)[0]  # noqa: E731
    fd = np.array([(f(p.at[k].add(h)) - f(p.at[k].add(-h))) / (2 * h) for k in range(p.size)])
    np.testing.assert_allclose(grad, fd, rtol=rtol)
    return grad


def test_gradient_through_simulate_of_the_redundant_parallelogram():
    """d(coupler x after 0.4 s of free fall)/d(theta0, L) of the triple-crank parallelogram (a
    redundant crank: C rank-deficient everywhere) against central differences (h = 1e-6:
    truncation ~1e-12, round-off of the map ~1e-14 / h)."""

    def build(p):
        model = parallelogram.build(L=p[1], theta=p[0], motor=False)
        return model, jnp.zeros(model.n)

    loss = _fixed_step_loss(build, 0.4, 4e-3, lambda q: q[9])
    _gradient_matches_central_differences(loss, jnp.asarray([0.7, 0.2]), 1e-6, 1e-6)


def test_gradient_through_simulate_across_a_singular_position():
    """A02 N = 2 from the vertical cranks at 1 m/s for 0.9 s: the cranks pass the horizontal
    (singular) position at t = 0.71. d(B0 height at 0.9 s)/d(bar length, initial speed) of the
    fixed-step run against central differences: the derivative stays the true one of the
    computed motion through the crossing (no rank decision to flip). On A02 N = 2's own (dense)
    factorization; the sparse one's derivative is checked on both paths by
    `test_gradient_on_a_redundant_parallelogram_matches_central_differences` (accelerations
    and projections) and through the factorization by tests/test_sparse_cholesky.py (forcing
    the sparse path here tripled this test's compile: 30 s against 10 s)."""

    def build(p):
        model = n_four_bar.build(2, length=p[0])
        return model, n_four_bar.velocity(np.pi / 2, -p[1], 2, length=p[0])

    def height(q):
        return q[1] + 0.5 * jnp.sin(q[2])  # crank 0's tip: centre + (L / 2) sin(phi)

    loss = _fixed_step_loss(build, 0.9, 6e-3, height)
    grad = _gradient_matches_central_differences(loss, jnp.asarray([1.0, 1.0]), 1e-6, 1e-6)
    assert np.all(np.isfinite(grad))


@pytest.mark.parametrize("path", ["sparse"], indirect=True)  # dense: every batch test's path
def test_vmapped_simulate_equals_single_runs(path):
    """jit(vmap(simulate)) over three initial crank speeds of A02 N = 2 through its first
    singular position (0.8 s) equals single runs: the batched sparse factorization and the
    batched adaptive steps give each member its own motion (to 1e-10 m: batched and single
    programs may round differently, and the step-size controller amplifies that little)."""
    model = n_four_bar.build(2)
    speeds = jnp.asarray([0.8, 1.0, 1.2])
    qd0s = jax.vmap(lambda w: n_four_bar.velocity(np.pi / 2, -w, 2))(speeds)
    ts = jnp.linspace(0.0, 0.8, 5)

    def run(qd0):
        return mb.simulate(model, model.q0, qd0, 0.8, ts=ts, formulation=FORMULATION).q

    batched = jax.jit(jax.vmap(run))(qd0s)
    single = jax.jit(run)
    for k in range(3):
        np.testing.assert_allclose(batched[k], single(qd0s[k]), rtol=0, atol=1e-10)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(iterations=0), "iterations must be an integer >= 1"),
        (dict(projection_iterations=1.5), "projection_iterations must be an integer >= 1"),
        (dict(penalty=-1.0), "penalty must be a positive finite number"),
        (dict(penalty=float("nan")), "penalty must be a positive finite number"),
        (dict(tol=0.0), "tol must be a positive finite number"),
        (dict(projection_tol=float("inf")), "projection_tol must be a positive finite number"),
    ],
)
def test_bad_options_are_refused_naming_the_option(options, message):
    with pytest.raises(ValueError, match=message):
        mb.AugmentedLagrangian(**options)


def test_explicit_stabilization_is_refused_not_ignored():
    """The augmented Lagrangian reads the exact gamma (its projections hold the constraints):
    an explicit Baumgarte stabilization would change nothing, so simulate refuses it with a
    message naming the alternatives, for the formulation and for simulate's default alike;
    None and the default are accepted; the null space takes it."""
    model = mb.models.slider_crank.build()
    qd0 = jnp.zeros(model.n)
    for formulation in ("augmented_lagrangian", "default"):
        with pytest.raises(ValueError, match="takes no stabilization.*mb.NullSpace"):
            mb.simulate(
                model,
                model.q0,
                qd0,
                0.1,
                formulation=formulation,
                stabilization=mb.Baumgarte(5.0, 5.0),
            )
    assert mb.Projection().stabilizable and mb.NullSpace().stabilizable
    assert not mb.AugmentedLagrangian().stabilizable


class _CountedAL(mb.AugmentedLagrangian):
    """The default formulation, counting its evaluations of the accelerations at run time."""

    def accelerations(self, model, terms):
        jax.debug.callback(_COUNT.append, 1)
        return super().accelerations(model, terms)


class _CountedFresh(_CountedAL):
    """The same, re-evaluating every first stage."""

    def reuses_last_stage(self, model):
        return False


_COUNT: list = []


def test_last_stage_is_kept_after_a_small_projection():
    """Small models keep Tsit5's last stage as the next step's first (`KeptFirstStage`): a
    batch of regular motions makes about 6 evaluations per batch step instead of 7 (counted
    at run time: the callback has no batched operand, so it runs once per batch evaluation),
    and its fastest member moves by less than the tolerance from the single run that
    re-evaluates every first stage (7 per step; the stale stage changes a step by about
    h b_1 L REUSE_FACTOR times an accepted local error). A batch evaluates a fresh first stage
    when any member needs one: with REUSE_FACTOR = 0.1 these 16 members needed it in about
    half of the steps (6.4 per step)."""
    model = slider_crank.build()
    speeds = jnp.linspace(2.0, 12.0, 16)
    ts = jnp.linspace(0, 1, 3)

    def run(formulation, speed):
        qd0 = mb.consistent_velocity(model, model.q0, jnp.zeros(model.n).at[2].set(speed))
        return mb.simulate(model, model.q0, qd0, 1.0, ts=ts, formulation=formulation)

    _COUNT.clear()
    kept = jax.vmap(lambda w: run(_CountedAL(), w))(speeds)
    jax.effects_barrier()
    kept_count = len(_COUNT)
    _COUNT.clear()
    fresh = run(_CountedFresh(), speeds[-1])
    jax.effects_barrier()
    assert len(_COUNT) >= 7 * int(fresh.num_steps)
    # 6 per batch step, plus re-evaluations after large projections
    assert kept_count <= 6.1 * int(jnp.max(kept.num_steps))
    np.testing.assert_allclose(kept.q[-1], fresh.q, rtol=0, atol=1e-8)


def test_kept_first_stage_is_selected_per_member():
    """`KeptFirstStage` under vmap: at the step's start (t0, y0) a member that keeps its stage
    gets it, the others the vector field's value; anywhere else every member gets the vector
    field's value (a batch evaluates the first stage for all members when one needs it)."""
    term = diffrax.ODETerm(lambda t, y, args: (y[1], -y[0] + t))
    y0 = (jnp.asarray([1.0, 2.0, 3.0]), jnp.asarray([0.5, 0.0, -0.5]))
    stage = (jnp.asarray([10.0, 20.0, 30.0]), jnp.asarray([-1.0, -2.0, -3.0]))
    keep = jnp.asarray([True, False, True])

    def value(t0, y0, keep, stage, t, y):
        return projecting.KeptFirstStage(term, t0, y0, keep, stage).vf(t, y, None)

    batched = jax.vmap(value, in_axes=(None, 0, 0, 0, None, 0))
    at_start = batched(0.25, y0, keep, stage, 0.25, y0)
    fresh = (y0[1], -y0[0] + 0.25)
    for kept, f, s in zip(at_start, fresh, stage):
        np.testing.assert_array_equal(kept, jnp.where(keep, s, f))
    later = batched(0.25, y0, keep, stage, 0.5, y0)  # a later stage at the same y
    np.testing.assert_array_equal(later[1], -y0[0] + 0.5)
    moved = (y0[0] + 1e-3, y0[1])  # the same t, another y
    np.testing.assert_array_equal(batched(0.25, y0, keep, stage, 0.25, moved)[0], moved[1])


def test_batch_members_keep_their_motion_beside_a_refused_member():
    """A refused start in a batch (it never steps) leaves the other members' motions bit for
    bit as beside a member that runs (one compiled program: the same batch size)."""
    model = slider_crank.build()
    speeds = jnp.asarray([2.0, 3.0, 4.0, 2.0])
    qd0s = jax.vmap(
        lambda w: mb.consistent_velocity(model, model.q0, jnp.zeros(model.n).at[2].set(w))
    )(speeds)
    ts = jnp.linspace(0.0, 0.5, 3)

    def run(q0, qd0):
        return mb.simulate(model, q0, qd0, 0.5, ts=ts, throw=False).q

    batch = jax.jit(jax.vmap(run))
    q0s = jnp.tile(model.q0, (4, 1))
    beside_a_run = batch(q0s, qd0s)
    beside_refused = batch(q0s.at[3, 0].set(jnp.nan), qd0s)  # refused: nonfinite_positions
    assert bool(jnp.all(jnp.isfinite(beside_a_run)))
    np.testing.assert_array_equal(beside_refused[:3], beside_a_run[:3])


@pytest.mark.parametrize("name", ["mobile_robot", "slider_crank"])  # Pfaffian rows; none
def test_velocity_blocks_equal_the_model_C_and_g(name):
    """The velocity projection's one pass (`velocity_blocks`: g and its tangents along the unit
    vectors of qd) gives `Model.C` (the Jacobian of g by jacfwd at qd = 0; g is linear in qd,
    so the tangents do not depend on where they are taken) and `Model.velocity_residual`, to
    round-off (1e-14 relative: the same products, another order)."""
    model = MODELS[name]()
    q, qd = _state(model, seed=3)
    pairs, groups = model._groups()
    blocks, g = al.velocity_blocks(
        pairs, groups, model.num_rows, model.kind, q, qd, jnp.asarray(0.2)
    )
    C = al._place_blocks(groups, list(blocks), model.num_rows, model.n, q.dtype, model.kind)
    C_ref = model.C(q, 0.2)
    np.testing.assert_allclose(C, C_ref, rtol=0, atol=1e-14 * float(jnp.max(jnp.abs(C_ref))))
    g_ref = model.velocity_residual(q, qd, 0.2)
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-14 * float(jnp.max(jnp.abs(g_ref)) + 1))
