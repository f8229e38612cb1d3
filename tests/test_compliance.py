"""Reaction methods as objects, and compliance-resolved reactions (`mb.Compliance`, issue 20).

References:
- the propped cantilever (a beam clamped by a weld at x = 0, propped by a revolute at x = L):
  the displacement method by hand (the beam rigid, the supports linear springs), a closed form;
- the null-space form lambda_p - N (N^T K^-1 N)^-1 N^T K^-1 lambda_p with N a RANDOM basis of
  null(C^T) from scipy (jaxmb computes the pseudo-inverse form K C (C^T K C)^+ f: a second
  formulation, and basis independence), for the triple-crank parallelogram; for the robot of
  seed 001 (knife edges) the two-stage version of it (the quasi-static rule of
  jaxmb/_reaction_methods/compliance.py);
- hand derivations: the rear axle's knife edges W3 and W4 share a lateral load in proportion
  to their damping (equal slip velocity on one axle line); in the robot every self-stress has a
  knife-edge part, so the bearings' stiffness changes no reaction;
- solvable pairs: the reactions of the min-norm method (any solution has them), for random K;
- gradients: central differences;
- method spellings: the method objects, bitwise; a user-defined method: numpy's lstsq;
- units (m, kg -> mm, t, forces in N in both): the physical transformation (forces equal,
  moments and angle-row multipliers times 1000).
"""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
from oracle.exact_compliance import exact_reference

import jaxmb as mb
from jaxmb import drive
from jaxmb.models import mobile_robot, parallelogram

ALG_TOL = 1e-9  # float64 algebra on O(1)-conditioned matrices
GRAD_RTOL = 1e-6  # central differences, step 1e-5 relative: truncation ~1e-10, round-off ~1e-11
ROBOT_PUSH = (4.0, 10.0)  # N, global: a push on the platform of the robot at rest


# ------------------------------------------------------------------------------------------
# models and references
# ------------------------------------------------------------------------------------------
def cantilever(L=2.0, a=1.3, load=(3.0, -40.0), mass=4.0, g=9.81):
    """A beam of length L (centre at (L/2, 0)) welded to the ground at x = 0 ("clamp") and
    pinned at x = L ("prop"), loaded at x = a and by gravity. p = 2 (5 rows, 3 coordinates)."""
    m = mb.Mechanism()
    beam = m.body("beam", mass=mass, inertia=mass * L**2 / 12, q=(L / 2, 0.0, 0.0))
    m.add(mb.Weld("clamp", m.ground, beam, s_i=(0.0, 0.0), s_j=(-L / 2, 0.0)))
    m.add(mb.Revolute("prop", m.ground, beam, s_i=(L, 0.0), s_j=(L / 2, 0.0)))
    m.add(mb.Force("P", beam, s=(a - L / 2, 0.0), f=load))
    m.add(mb.Gravity((0.0, -g)))
    return m.build()


CLAMP_K, PROP_K = (3e6, 5e6, 2e5), (4e6, 1e6)  # N/m, N/m, N m/rad; N/m, N/m


def cantilever_by_hand(L, a, load, mass, g, clamp_k, prop_k):
    """Displacement method: the clamp point moves by (u, v), the beam turns by th; the prop
    point moves by (u, v + L th). Minimum of the potential energy:
        (kx1 + kx2) u = Px,
        [ky1 + ky2, ky2 L; ky2 L, kph + ky2 L^2] [v; th] = [Py - m g; Py a - m g L/2].
    Support forces on the beam: clamp (-kx1 u, -ky1 v) and moment -kph th; prop
    (-kx2 u, -ky2 (v + L th)). Returns {pair: (fx, fy, torque about the beam's centre)}."""
    (kx1, ky1, kph), (kx2, ky2) = clamp_k, prop_k
    Px, Py = load
    u = Px / (kx1 + kx2)
    A = np.array([[ky1 + ky2, ky2 * L], [ky2 * L, kph + ky2 * L**2]])
    v, th = np.linalg.solve(A, [Py - mass * g, Py * a - mass * g * L / 2])
    clamp = np.array([-kx1 * u, -ky1 * v])
    prop = np.array([-kx2 * u, -ky2 * (v + L * th)])
    return {"clamp": (*clamp, -kph * th - L / 2 * clamp[1]), "prop": (*prop, L / 2 * prop[1])}


def null_space_reference(C, f, k, holonomic, seed=0):
    """The compliance multipliers from the null-space form with a random basis N of null(C^T)
    (numpy / scipy). Without knife edges: lambda_p - N (N^T W N)^-1 N^T W lambda_p,
    W = K^-1. With them, two stages: the knife-edge rows by D^-1 first, then among the
    remaining self-stresses (those without a knife-edge part) the holonomic rows by K^-1."""
    rng = np.random.default_rng(seed)
    lam = np.linalg.lstsq(C.T, f, rcond=None)[0]
    N = scipy.linalg.null_space(C.T)
    N = N @ rng.normal(size=(N.shape[1], N.shape[1]))  # any basis
    w = 1.0 / k
    knife = ~holonomic
    if knife.any():
        root = np.sqrt(w[knife])
        lam = lam - N @ np.linalg.lstsq(root[:, None] * N[knife], root * lam[knife], rcond=None)[0]
        N = N @ scipy.linalg.null_space(N[knife])
    if N.shape[1]:
        Nh, W = N[holonomic], np.diag(w[holonomic])
        lam = lam - N @ np.linalg.solve(Nh.T @ W @ Nh, Nh.T @ W @ lam[holonomic])
    return lam


def row_values(model, stiffness):
    return np.concatenate([np.broadcast_to(stiffness[p.name], (p.num_rows,)) for p in model.pairs])


def random_stiffness(model, rng, low=1e2, high=1e8):
    """One log-uniform number per row of every pair."""
    return {
        p.name: 10 ** rng.uniform(np.log10(low), np.log10(high), p.num_rows) for p in model.pairs
    }


# ------------------------------------------------------------------------------------------
# fixtures: one compiled program each
# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def para():
    """The triple-crank parallelogram held by its motor, under gravity and a load."""
    return parallelogram.build(load=(3.0, -5.0))


@pytest.fixture(scope="module")
def robot_state():
    """The robot of seed 001 at rest at q0 (eq. 34), pushed by a force ROBOT_PUSH at a point
    of its platform: the knife edges and the steering linkage hold it."""
    model = mobile_robot.build()
    platform = model.pair("W3").body
    push = mb.Force("push", platform, s=(0.1, 0.05), f=ROBOT_PUSH)
    model = eqx.tree_at(lambda m: m.force_elements, model, (push,))
    return model, model.q0, jnp.zeros(model.n)


def _terms(model, q, qd, t, qdd):
    C = np.asarray(model.C(q, t))
    f = np.asarray(model.forces(q, qd, t) - model.mass_matrix() @ qdd)
    return C, f


# ------------------------------------------------------------------------------------------
# method objects (item 5)
# ------------------------------------------------------------------------------------------
class LeastSquares(mb.AbstractReactionMethod):
    """A user-defined method, written without touching jaxmb: lambda from jnp.linalg.lstsq."""

    name = "lstsq"
    physical = False

    def bind(self, model):
        return self

    def multipliers(self, model, terms, qdd):
        qdd = (
            mb.accelerations(model, jnp.zeros(model.n), jnp.zeros(model.n)) if qdd is None else qdd
        )
        return qdd, jnp.linalg.lstsq(terms.C.T, terms.F - terms.M @ qdd)[0]


def test_spellings_are_method_objects(para):
    """ "min_norm" and "auto" give bitwise the results of mb.MinNorm() and mb.Auto(); every
    method is an mb.AbstractReactionMethod and names itself in Reactions.method."""
    q, qd = para.q0, jnp.zeros(para.n)
    for spelled, obj in (("min_norm", mb.MinNorm()), ("auto", mb.Auto())):
        a, b = (mb.reactions(para, q, qd, method=m) for m in (spelled, obj))
        np.testing.assert_array_equal(a.lam, b.lam)
        assert a.method == b.method == spelled
    methods = (mb.MinNorm(), mb.Auto(), mb.Eliminate((5, 20)), mb.Compliance(default=1.0))
    assert all(isinstance(m, mb.AbstractReactionMethod) for m in methods)
    assert [m.name for m in methods] == [
        "min_norm",
        "auto",
        "Eliminate(rows=(5, 20))",
        "Compliance(default)",
    ]
    with pytest.raises(
        ValueError,
        match="reactions: method must be 'min_norm', 'auto', "
        r"mb.Eliminate\(rows\), mb.Compliance",
    ):
        mb.reactions(para, q, qd, method="least_squares")


def test_user_defined_method(para):
    """A method defined outside jaxmb works in statics: numpy's lstsq (minimum-norm solution
    of C^T lambda = F) is the reference."""
    q = para.q0
    rx = mb.statics(para, q, method=LeastSquares())
    C, f = _terms(para, q, jnp.zeros(para.n), 0.0, jnp.zeros(para.n))
    ref = np.linalg.lstsq(C.T, f, rcond=None)[0]
    np.testing.assert_allclose(rx.lam, ref, rtol=0, atol=ALG_TOL * np.max(np.abs(ref)))
    assert rx.method == "lstsq"


# ------------------------------------------------------------------------------------------
# Compliance (item 1)
# ------------------------------------------------------------------------------------------
def test_propped_cantilever_matches_displacement_method():
    """Reference: `cantilever_by_hand` (closed form). Anisotropic per-row stiffness; each
    support's force and torque on the beam to 1e-9 relative; min-norm differs (it is not the
    physical answer)."""
    args = dict(L=2.0, a=1.3, load=(3.0, -40.0), mass=4.0, g=9.81)
    model = cantilever(**args)
    method = mb.Compliance({"clamp": CLAMP_K, "prop": PROP_K})
    rx = mb.statics(model, model.q0, method=method)
    hand = cantilever_by_hand(**args, clamp_k=CLAMP_K, prop_k=PROP_K)
    scale = np.max(np.abs(np.concatenate(list(hand.values()))))
    for pair, ref in hand.items():
        np.testing.assert_allclose(
            rx.on_body(pair, "beam"), ref, rtol=0, atol=ALG_TOL * scale, err_msg=pair
        )
    other = mb.statics(model, model.q0)
    assert np.max(np.abs(np.asarray(other.on_body("prop", "beam")) - hand["prop"])) > 0.1


def test_parallelogram_matches_null_space_form_with_any_basis(para):
    """Reference: `null_space_reference` with two different random bases of null(C^T), and
    random per-row stiffness spanning six decades: jaxmb's lambda to 1e-9 relative."""
    rng = np.random.default_rng(3)
    q = para.q0
    for draw in range(2):
        stiffness = random_stiffness(para, rng)
        rx = mb.statics(para, q, method=mb.Compliance(stiffness))
        C, f = _terms(para, q, jnp.zeros(para.n), 0.0, jnp.zeros(para.n))
        ref = null_space_reference(C, f, row_values(para, stiffness), para.holonomic_rows, draw)
        np.testing.assert_allclose(rx.lam, ref, rtol=0, atol=ALG_TOL * np.max(np.abs(ref)))


KNIFE_CASE = {"W1": 2e3, "W2": 3e3, "W3": 1e3, "W4": 4e3, "B": 1e7, "C": 1e7}
"""Tyre dampings (N s/m) and bearing stiffness (N/m) of `test_robot_knife_edges_share_by_damping`
(every other pair 1e8); the same with B 1e10 and C 1e5."""


@pytest.fixture(scope="module")
def robot_draws(robot_state):
    """Compliance reactions of the turning robot for 6 random stiffness draws and the two
    `KNIFE_CASE` variants (one vmapped program)."""
    model, q, qd = robot_state
    rng = np.random.default_rng(11)
    draws = [random_stiffness(model, rng) for _ in range(6)]
    for case in (KNIFE_CASE, dict(KNIFE_CASE, B=1e10, C=1e5)):
        draws.append({p.name: np.full(p.num_rows, case.get(p.name, 1e8)) for p in model.pairs})
    stacked = {n: jnp.stack([d[n] for d in draws]) for n in model.pair_names}
    many = eqx.filter_jit(jax.vmap(lambda s: mb.reactions(model, q, qd, method=mb.Compliance(s))))(
        stacked
    )
    C, f = _terms(model, q, qd, 0.0, many.qdd[0])
    return draws, many, (C, f)


def test_robot_matches_two_stage_null_space_form(robot_state, robot_draws):
    """Reference: the two-stage null-space form (knife edges by their damping first, then the
    holonomic rows), random basis; every draw to 1e-9 relative."""
    model, q, qd = robot_state
    draws, many, (C, f) = robot_draws
    for k, stiffness in enumerate(draws):
        ref = null_space_reference(C, f, row_values(model, stiffness), model.holonomic_rows, k)
        np.testing.assert_allclose(many.lam[k], ref, rtol=0, atol=ALG_TOL * np.max(np.abs(ref)))


def test_solvable_reactions_do_not_depend_on_stiffness(robot_state, robot_draws):
    """Reference: the generalized reactions -C_X^T lambda_X of the pairs flagged solvable from
    numpy's minimum-norm lstsq solution (every solution of C^T lambda = F - M qdd has them).
    For every stiffness draw they agree to 1e-9 of the largest reaction, the total
    -C^T lambda equals M qdd - F, and the non-unique pairs (B, C, W1-W4, seed 001 section
    4.2) do change with the stiffness."""
    model, q, qd = robot_state
    _, many, (C, f) = robot_draws
    lam = np.linalg.lstsq(C.T, f, rcond=None)[0]
    ref = np.stack([-C[model.rows(n)].T @ lam[model.rows(n)] for n in model.pair_names])
    solvable = np.asarray(many.solvable_array[0])
    assert [n for n, s in zip(model.pair_names, solvable) if not s] == [
        "B",
        "C",
        "W1",
        "W2",
        "W3",
        "W4",
    ]
    scale = np.max(np.abs(ref))
    gen = np.asarray(many.generalized_array)
    for k in range(len(gen)):
        np.testing.assert_allclose(gen[k][solvable], ref[solvable], rtol=0, atol=ALG_TOL * scale)
        np.testing.assert_allclose(gen[k].sum(axis=0), -f, rtol=0, atol=ALG_TOL * scale)
    spread = np.max(np.abs(gen[:, ~solvable] - gen[:1, ~solvable]))
    assert spread > 1e-3 * scale


def test_robot_knife_edges_share_by_damping(robot_state, robot_draws):
    """Hand derivations for the robot (every self-stress has a knife-edge part):
    - W3 and W4 sit on one axle line of the platform, so their slip velocities are equal and
      lambda_W3 / d_W3 = lambda_W4 / d_W4;
    - the bearings' stiffness selects nothing: scaling k_B by 1e3 and k_C by 1e-2 changes no
      reaction (1e-9)."""
    model, _, _ = robot_state
    _, many, _ = robot_draws
    base, stiffer = np.asarray(many.lam[-2]), np.asarray(many.lam[-1])
    scale = np.max(np.abs(base))
    w3, w4 = base[model.rows("W3")], base[model.rows("W4")]
    np.testing.assert_allclose(
        w3 / KNIFE_CASE["W3"],
        w4 / KNIFE_CASE["W4"],
        rtol=0,
        atol=ALG_TOL * scale / KNIFE_CASE["W3"],
    )
    assert abs(w3[0]) > 1e-3 * scale
    np.testing.assert_allclose(stiffer, base, rtol=0, atol=ALG_TOL * scale)


def test_gradients_match_central_differences():
    """d(reaction)/d(log stiffness) and d(reaction)/d(length) of the propped cantilever's
    non-unique support reactions (the clamp's rotational stiffness, the beam's length) by
    reverse mode against central differences (step 1e-5 relative), to 1e-6 relative."""

    def loss(params):
        log_k, L = params
        model = cantilever(L=L)
        method = mb.Compliance({"clamp": jnp.stack([3e6, 5e6, jnp.exp(log_k)]), "prop": PROP_K})
        rx = mb.statics(model, model.q0, method=method)
        return rx.on_body("prop", "beam")[1] + 0.1 * rx.on_body("clamp", "beam")[2]

    x0 = jnp.array([np.log(2e5), 2.0])
    value, grad = jax.jit(jax.value_and_grad(loss))(x0)
    steps = 1e-5 * np.maximum(np.abs(np.asarray(x0)), 1.0)
    f = jax.jit(jax.vmap(loss))
    shifts = np.concatenate([np.diag(steps), -np.diag(steps)])
    values = np.asarray(f(x0[None, :] + shifts))
    fd = (values[:2] - values[2:]) / (2 * steps)
    assert np.all(np.abs(fd) > 1e-3 * abs(float(value)))  # both parameters matter
    np.testing.assert_allclose(grad, fd, rtol=GRAD_RTOL)


def test_inverse_dynamics_and_along_a_trajectory(para):
    """The driven parallelogram (motor angle 0.7 + 0.4 sin 3t): inverse_dynamics with
    Compliance equals the null-space form with a random basis (kinematic qdd)."""
    model = parallelogram.build(motor=drive.Harmonic(0.4, 3.0, -np.pi / 2, 0.7), load=(3.0, -5.0))
    method = mb.Compliance({"O1": 2e6, "O2": 5e6, "A3": 3e5}, default=1e6)
    ts = jnp.linspace(0.0, 1.0, 5)
    traj, rx = mb.inverse_dynamics(model, ts, method=method)
    scale = np.max(np.abs(rx.lam))
    C, f = _terms(model, traj.q[3], traj.qd[3], ts[3], rx.qdd[3])
    k = row_values(model, {n: method.stiffness.get(n, 1e6) for n in model.pair_names})
    ref = null_space_reference(C, f, k, model.holonomic_rows)
    np.testing.assert_allclose(rx.lam[3], ref, rtol=0, atol=ALG_TOL * scale)


def test_compliance_bad_input(para):
    """Each mistake names the pair and the problem: unknown pair (with a suggestion), a pair
    without stiffness and no default, a wrong number of values, a non-positive value (at
    construction, and traced inside jit)."""
    q = para.q0
    with pytest.raises(
        ValueError,
        match=r"statics: Compliance names unknown pair\(s\) \['A22'\] "
        r"\(did you mean 'A2'\?\)",
    ):
        mb.statics(para, q, method=mb.Compliance({"A22": 1.0}, default=1.0))
    with pytest.raises(
        ValueError,
        match=r"no stiffness for pair\(s\) \['A1', 'A2', 'A3', "
        r"'motor'\] and no default",
    ):
        mb.statics(para, q, method=mb.Compliance({"O1": 1.0, "O2": 1.0, "O3": 1.0}))
    with pytest.raises(
        ValueError,
        match=r"stiffness of pair 'O1' has shape \(3,\); give one "
        r"number or one per row \(2\)",
    ):
        mb.statics(para, q, method=mb.Compliance({"O1": (1.0, 2.0, 3.0)}, default=1.0))
    with pytest.raises(
        ValueError,
        match=r"Compliance: stiffness of pair 'A2' = -5.0 must be "
        "positive and finite",
    ):
        mb.Compliance({"A2": -5.0})
    traced = eqx.filter_jit(
        lambda k: mb.statics(para, q, method=mb.Compliance({"A2": k}, default=1.0)).lam
    )
    assert np.all(np.isfinite(traced(2.0)))
    with pytest.raises(
        RuntimeError, match="Compliance: the stiffness of pair 'A2' must be positive, finite"
    ):
        traced(0.0)


# ------------------------------------------------------------------------------------------
# units and the warning (item 4)
# ------------------------------------------------------------------------------------------
def test_units_m_to_mm():
    """The propped cantilever in m, kg, s (N) and in mm, t, s (N, the FE unit system): lengths
    x 1000, masses / 1000, gravity 9810 mm/s^2; stiffness N/m -> N/mm (/ 1000), N m/rad ->
    N mm/rad (x 1000). Physics says the support forces stay the same and the moments (and the
    weld's angle-row multiplier) grow 1000 times: Compliance does so to 1e-9. Its self-stresses
    mix N and N m rows (a prop force against a clamp moment), so the minimum-norm answer changes
    with the unit by far more (> 1 % of the largest force)."""
    si = dict(L=2.0, a=1.3, load=(3.0, -40.0), mass=4.0, g=9.81)
    mm = dict(L=2000.0, a=1300.0, load=(3.0, -40.0), mass=4e-3, g=9810.0)
    k_si = {"clamp": CLAMP_K, "prop": PROP_K}
    k_mm = {
        "clamp": (CLAMP_K[0] / 1e3, CLAMP_K[1] / 1e3, CLAMP_K[2] * 1e3),
        "prop": (PROP_K[0] / 1e3, PROP_K[1] / 1e3),
    }
    unit = np.array([1.0, 1.0, 1e3])  # fx, fy, torque (N, N, N m -> N mm)
    results = {}
    for label, args, k in (("si", si, k_si), ("mm", mm, k_mm)):
        model = cantilever(**args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mb.NonUniqueReactionWarning)
            results[label] = [
                mb.statics(model, model.q0, method=m) for m in (mb.Compliance(k), mb.MinNorm())
            ]
    (comp_si, norm_si), (comp_mm, norm_mm) = results["si"], results["mm"]
    scale = np.max(np.abs(comp_si.on_body("clamp", "beam")))
    for pair in ("clamp", "prop"):
        np.testing.assert_allclose(
            comp_mm.on_body(pair, "beam"),
            unit * np.asarray(comp_si.on_body(pair, "beam")),
            rtol=0,
            atol=ALG_TOL * 1e3 * scale,
            err_msg=pair,
        )
    np.testing.assert_allclose(
        comp_mm.lam, np.array([1, 1, 1e3, 1, 1]) * comp_si.lam, rtol=0, atol=ALG_TOL * 1e3 * scale
    )
    moved = np.abs(
        np.asarray(norm_mm.on_body("prop", "beam")) - np.asarray(norm_si.on_body("prop", "beam"))
    )
    assert np.max(moved[:2]) > 1e-2 * scale


def test_warning_names_non_unique_pairs_once_per_call_site(para, rng):
    """Eager min-norm and elimination answers for a model with non-unique reactions warn
    (NonUniqueReactionWarning), naming those pairs and pointing to mb.Compliance, once per call
    site under the default filter; Compliance does not warn, nor does a traced call (its
    flags are unknown while tracing)."""
    q, qd = para.q0, jnp.zeros(para.n)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):  # one call site, three calls
            mb.reactions(para, q, qd, method="min_norm")
        mb.reactions(para, q, qd, method=mb.Auto())  # a second call site
        mb.statics(para, q, method=mb.Compliance(random_stiffness(para, rng)))
        jax.jit(lambda q: mb.reactions(para, q, qd).lam)(q)
    found = [w for w in caught if issubclass(w.category, mb.NonUniqueReactionWarning)]
    assert len(found) == 2, [str(w.message) for w in found]
    first, second = (str(w.message) for w in found)
    assert first.startswith("reactions: the reactions of O1, O2, O3, A1, A2, A3 are not unique")
    assert "'min_norm'" in first and "mb.Compliance(stiffness, default)" in first
    assert second.startswith("reactions: the reactions of O1, O2, O3, A1, A2, A3")
    assert "'auto'" in second
    assert all(w.filename == __file__ for w in found)  # attributed to the caller's line


# ------------------------------------------------------------------------------------------
# the sparse path of large holonomic models (no pseudo-inverse, no rank decision)


@pytest.fixture(scope="module")
def grid():
    """A 6 x 6 rotating-squares linkage (36 bodies > DENSE_BODIES, 123 rows, p = 16), random
    row stiffness over a decade and a random load in range(C^T)."""
    from jaxmb.models import auxetic

    model = auxetic.build(6)
    C = model.C(model.q0, 0.0)
    rng = np.random.default_rng(0)
    f = C.T @ jnp.asarray(rng.normal(size=model.num_rows))
    k = jnp.asarray(rng.uniform(1.0, 10.0, size=model.num_rows))
    return model, C, f, k


def test_sparse_path_matches_the_dense_pseudo_inverse(grid):
    """Reference: the dense formula lambda* = K^(1/2) (C^T K^(1/2))^+ f by SVD
    (`compliance_multipliers`): 1e-12 of the largest multiplier; C^T lambda = f to 1e-12."""
    from jaxmb._reaction_methods import compliance as cp

    model, C, f, k = grid
    sparse = jax.jit(lambda C, f, k: cp.sparse_compliance_multipliers(model, C, f, k))(C, f, k)
    dense = cp.compliance_multipliers(C, f, k, model.holonomic_rows)
    scale = float(jnp.max(jnp.abs(dense)))
    np.testing.assert_allclose(sparse, dense, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(C.T @ sparse, f, rtol=0, atol=1e-12 * scale)


def test_sparse_path_matches_scipy_sparse(grid):
    """Reference: scipy.sparse, independent of jaxmb's factorization: lambda* = K C y with
    C^T K C y = f solved by LSQR on K^(1/2) C (the least-squares solution of
    K^(1/2) C y = K^(-1/2) lambda_p for a particular lambda_p, whose normal equations are those),
    to 1e-9 relative (LSQR's tolerance 1e-14)."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    from jaxmb._reaction_methods import compliance as cp

    model, C, f, k = grid
    Cn, fn, kn = np.asarray(C), np.asarray(f), np.asarray(k)
    lam_p = np.linalg.lstsq(Cn.T, fn, rcond=None)[0]  # any particular solution
    A = sp.diags(np.sqrt(kn)) @ sp.csr_matrix(Cn)
    y = spla.lsqr(A, lam_p / np.sqrt(kn), atol=1e-14, btol=1e-14, iter_lim=100_000)[0]
    reference = kn * (Cn @ y)
    sparse = np.asarray(cp.sparse_compliance_multipliers(model, C, f, k))
    np.testing.assert_allclose(sparse, reference, rtol=0, atol=1e-9 * np.max(np.abs(reference)))


def test_sparse_path_gradient_matches_the_dense_one(grid):
    """d/dk and d/d(theta, side) of a scalar of lambda*, the grid rebuilt at (theta, side) (a
    configuration on the constraints: off them C gains rank and lambda* is not differentiable)
    with the load f = C^T lambda_0 moving with it: the sparse iteration (implicit solves)
    against the dense pseudo-inverse's derivative rule and against central differences, 1e-6
    relative (h = 1e-6)."""
    from jaxmb._reaction_methods import compliance as cp
    from jaxmb.models import auxetic

    model, _, _, k = grid
    rng = np.random.default_rng(3)
    w = jnp.asarray(rng.normal(size=model.num_rows))
    lam0 = jnp.asarray(rng.normal(size=model.num_rows))

    def loss(k, geometry, path):
        built = auxetic.build(6, theta=geometry[0], side=geometry[1])
        Cq = built.C(built.q0, 0.0)
        f = Cq.T @ lam0
        if path == "sparse":
            lam = cp.sparse_compliance_multipliers(built, Cq, f, k)
        else:
            lam = cp.compliance_multipliers(Cq, f, k, built.holonomic_rows)
        return jnp.sum(w * lam)

    geometry = jnp.asarray([0.3, 1.0])
    # one program per path, its values also the differences' (a separate compile of the
    # forward loss costs more than the extra backward passes)
    value_and_grad = jax.jit(jax.value_and_grad(loss, (0, 1)), static_argnums=2)
    gs = value_and_grad(k, geometry, "sparse")[1]
    gd = value_and_grad(k, geometry, "dense")[1]
    for a, b in zip(gs, gd):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-8 * float(jnp.max(jnp.abs(b))))
    h = 1e-6
    value = lambda g: value_and_grad(k, g, "sparse")[0]  # noqa: E731
    fd = [
        (value(geometry.at[i].add(h)) - value(geometry.at[i].add(-h))) / (2 * h) for i in range(2)
    ]
    # (lambda* does not depend on the side: C's rows scale with it, and f with them; there the
    # difference is round-off of the loss over 2h: a hundred ulps of |L| allowed, 21 measured)
    noise = 100 * np.finfo(np.float64).eps * abs(float(value(geometry))) / (2 * h)
    np.testing.assert_allclose(gs[1], fd, rtol=1e-6, atol=noise)


def test_compliance_takes_the_sparse_path_for_large_models(grid, count_calls):
    """mb.Compliance and mb.MinNorm on a model above DENSE_BODIES (MinNorm: also with knife
    edges) call the sparse path (counted), and give the dense answers (the SVD formula; numpy's
    pseudo-inverse)."""
    from jaxmb._reaction_methods import compliance as cp

    model, C, f, k = grid
    calls = count_calls(cp, "sparse_compliance_multipliers")
    terms = mb.EquationTerms(jnp.diag(model.mass_diagonal()), f, C, jnp.zeros(model.num_rows))
    method = mb.Compliance(default=2.0)
    _, lam = method.multipliers(model, terms, jnp.zeros(model.n))
    assert calls
    dense = cp.compliance_multipliers(C, f, jnp.full(model.num_rows, 2.0), model.holonomic_rows)
    np.testing.assert_allclose(lam, dense, rtol=0, atol=1e-12 * float(jnp.max(jnp.abs(dense))))
    # MinNorm is the same solve with equal stiffness (C (C^T C)^+ f): sparse too, and equal to
    # the pseudo-inverse's answer
    from jaxmb._reaction_methods import min_norm

    calls = count_calls(min_norm, "sparse_compliance_multipliers")
    _, lam = mb.MinNorm().multipliers(model, terms, jnp.zeros(model.n))
    assert calls
    pinv = np.linalg.pinv(np.asarray(C).T) @ np.asarray(f)
    np.testing.assert_allclose(lam, pinv, rtol=0, atol=1e-12 * float(np.max(np.abs(pinv))))


def test_subnormal_stiffness_is_refused_eagerly_and_traced():
    """Compliance({}, default=5e-324) used to give nan reactions without an error: XLA flushes
    subnormal numbers to zero, so k / max(k) was 0 / 0. Below the smallest normal float64 the
    number is refused, eagerly (ValueError) and traced (the run-time error names the pair);
    the smallest normal itself works and gives the answer of any other uniform stiffness."""
    model = parallelogram.build()
    with pytest.raises(ValueError, match="below 2.22507e-308.*scale them all up"):
        mb.Compliance({}, default=5e-324)

    @jax.jit
    def lam(k):
        return mb.statics(model, model.q0, method=mb.Compliance({}, default=k)).lam

    with pytest.raises(RuntimeError, match="stiffness of pair .* smallest normal float64"):
        lam(jnp.asarray(5e-324))
    tiny = float(np.finfo(np.float64).tiny)
    np.testing.assert_allclose(lam(jnp.asarray(tiny)), lam(jnp.asarray(1.0)), rtol=1e-12)


# ------------------------------------------------------------------------------------------
# derivatives with respect to the numbers of Compliance, eager and under jit
# ------------------------------------------------------------------------------------------
STIFFNESS_INPUTS = {  # k -> the method; k at K0 is the point of differentiation
    "pair": lambda k: mb.Compliance({"O3": k, "A3": k}, default=1e8),
    "pair rows": lambda k: mb.Compliance({"O3": jnp.stack([k, 2.0 * k]), "A3": 3e7}, default=1e8),
    "default": lambda k: mb.Compliance({"O3": 2e7, "A3": 5e7}, default=k),
}
ANALYSES = {  # (model, method) -> a non-unique reaction (the parallelogram's O3 is not unique)
    "statics": lambda model, method: mb.statics(model, model.q0, method=method).on_body(
        "O3", "crank3"
    )[1],
    "reactions": lambda model, method: mb.reactions(
        model,
        model.q0,
        mb.consistent_velocity(model, model.q0, jnp.zeros(model.n)),  # the motor's rate
        0.0,
        method=method,
    ).on_body("O3", "crank3")[1],
    "inverse_dynamics": lambda model, method: mb.inverse_dynamics(
        model, jnp.asarray([0.0, 0.3]), method=method
    )[1].on_body("O3", "crank3")[1][1],
}
K0 = 1e8


@pytest.fixture(scope="module")
def plain_para():
    """The parallelogram, its motor driven (inverse dynamics needs a driven model)."""
    return parallelogram.build(motor=drive.Harmonic(0.4, 3.0, -np.pi / 2, 0.7))


@pytest.mark.parametrize(
    "given,analysis",
    [(g, a) for g in sorted(STIFFNESS_INPUTS) for a in ("statics", "reactions")]
    + [("pair", "inverse_dynamics")],  # (its other inputs: the same Compliance path)
)
def test_stiffness_derivatives_eager_and_jit(plain_para, analysis, given):
    """d(reaction)/d(stiffness) of a pair (one number, one per row) and of `default`, by
    statics, reactions and inverse dynamics: eagerly it was exactly 0 (`bind` packed the numbers
    of an eager jax.grad as a constant), under jit 1.58e-8 for the pair. Both now equal central
    differences (step 1e-5 relative; truncation ~1e-10, round-off ~1e-11 relative of a
    derivative of size |f| / k: GRAD_RTOL = 1e-6), and eager equals jit to 1e-12 (the same
    formula, compiled in other fusions: round-off only)."""

    def f(k):
        return ANALYSES[analysis](plain_para, STIFFNESS_INPUTS[given](k))

    eager = float(jax.grad(f)(K0))
    jitted = float(jax.jit(jax.grad(f))(K0))
    h = 1e-5 * K0
    plus, minus = np.asarray(jax.jit(jax.vmap(f))(jnp.asarray([K0 + h, K0 - h])))
    fd = (plus - minus) / (2 * h)
    assert abs(fd) * K0 > 1e-3 * abs(float(f(K0)))  # the stiffness matters
    np.testing.assert_allclose(jitted, fd, rtol=GRAD_RTOL)
    np.testing.assert_allclose(eager, jitted, rtol=1e-12)


# ------------------------------------------------------------------------------------------
# the ratio limits, against an exact reference
# ------------------------------------------------------------------------------------------
def _one_pair_apart(model, pair, inside, outside):
    """Every row `outside`, the rows of `pair` `inside`: (the method, the row numbers)."""
    method = mb.Compliance({pair: inside}, default=outside)
    rows = np.asarray(model.row_pair_index) == model.pair_names.index(pair)
    return method, np.where(rows, inside, outside)


def test_stiffness_ratio_limit(para):
    """MAX_STIFFNESS_RATIO (1e12) where the error reaches 1e-5 of the largest reaction: the
    parallelogram's worst case (its motor soft among stiff pairs) is 1.1e-6 at the limit
    against the exact reference, 2.7e-5 at 3e12 (the measurement in the constant's docstring).
    At the limit accepted (eagerly and traced), a hair above refused both ways."""
    from jaxmb._reaction_methods.compliance import MAX_STIFFNESS_RATIO as LIMIT

    C, f = _terms(para, para.q0, jnp.zeros(para.n), 0.0, jnp.zeros(para.n))
    method, k = _one_pair_apart(para, "motor", 1.0, LIMIT)
    ref = exact_reference(C, f, k, para.holonomic_rows)
    lam = mb.statics(para, para.q0, method=method).lam
    np.testing.assert_allclose(lam, ref, rtol=0, atol=1e-5 * np.max(np.abs(ref)))
    traced = eqx.filter_jit(
        lambda r: mb.statics(para, para.q0, method=mb.Compliance({"motor": 1.0}, default=r)).lam
    )
    np.testing.assert_allclose(traced(jnp.asarray(LIMIT)), lam, rtol=1e-12)
    above = LIMIT * (1 + 1e-9)
    with pytest.raises(ValueError, match=r"Compliance stiffness ratio 1e\+12 \(pair 'O1'.*exceeds"):
        mb.statics(para, para.q0, method=mb.Compliance({"motor": 1.0}, default=above))
    with pytest.raises(Exception, match=r"smallest stiffness exceeds 1e\+12 \(traced value\)"):
        traced(jnp.asarray(above))


def test_knife_edge_damping_ratio_limit(robot_state):
    """MAX_DAMPING_RATIO (1e11): the robot's reactions with one knife edge's damping that much
    above the others' equal the exact two-stage reference to 1e-9 of the largest reaction
    (measured 3e-10; at 1e12 they were wrong by 4e3 times it); above it refused. The ratio of
    a knife edge's damping to a pair's stiffness is not limited: 1e13 gives the reference."""
    from jaxmb._reaction_methods.compliance import MAX_DAMPING_RATIO as LIMIT

    model, q, qd = robot_state
    qdd = mb.accelerations(model, q, qd)
    C, f = _terms(model, q, qd, 0.0, qdd)
    knives = [p.name for p in model.pairs if not p.holonomic]
    hol = np.asarray(model.holonomic_rows)
    cases = [
        _one_pair_apart(model, "W5", LIMIT, 1.0),
        (mb.Compliance(dict.fromkeys(knives, 1e-4), default=1e9), np.where(hol, 1e9, 1e-4)),
    ]
    for method, k in cases:
        ref = exact_reference(C, f, k, hol)
        lam = mb.reactions(model, q, qd, method=method).lam
        np.testing.assert_allclose(lam, ref, rtol=0, atol=1e-9 * np.max(np.abs(ref)))
    with pytest.raises(ValueError, match=r"knife-edge damping ratio 1e\+11 \(pair 'W5'.*exceeds"):
        mb.reactions(model, q, qd, method=mb.Compliance({"W5": LIMIT * (1 + 1e-9)}, default=1.0))


def test_robot_pairs_far_apart(robot_state):
    """The robot's holonomic pairs one by one 1e6 stiffer than the rest: the reactions were
    wrong by up to 15 times the largest (the quasi-static rule's first stage weighed the
    knife edges in a space scaled by K, whose round-off it took for a self-stress); now the
    exact two-stage reference to 1e-9 of the largest reaction (measured below 1e-11)."""
    model, q, qd = robot_state
    qdd = mb.accelerations(model, q, qd)
    C, f = _terms(model, q, qd, 0.0, qdd)
    names = model.pair_names
    lam = jax.jit(
        lambda ks: mb.reactions(model, q, qd, method=mb.Compliance(dict(zip(names, ks)))).lam
    )  # one program for every draw
    for pair in ("A", "C", "G", "driver"):
        _, k = _one_pair_apart(model, pair, 1e6, 1.0)
        ref = exact_reference(C, f, k, model.holonomic_rows)
        ks = jnp.asarray([1e6 if n == pair else 1.0 for n in names])
        np.testing.assert_allclose(lam(ks), ref, rtol=0, atol=1e-9 * np.max(np.abs(ref)))
