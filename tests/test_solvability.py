"""Solvability of reactions (issue 3; seed 001, sections 2.1, 3.2, 3.3, 4.2).

Independent references used below:
- the paper itself: eq. 35 (ranks), p = 2, and the B_X matrices of section 4.2 for the mobile
  robot at q0, together with a hand derivation of the left null space of C at q0 (below);
- `paper_qr`: the paper's QR method (eq. 21-27) written again in plain numpy/scipy
  (`scipy.linalg.qr(C, pivoting=True)`, Q~ = last p columns of Q, B_X = C_X^T Q~_X), with the
  direct-sum criterion rank(C_X) + rank(C_Y) = rank(C) (section 3.2) and
  `scipy.linalg.null_space(C^T)` as a second basis, on C taken from the model as a numpy array;
- structural invariances: a rigid motion of the whole mechanism and a renumbering of bodies and
  pairs (a builder in this file) change C into C T^T or P C Pi with T orthogonal and P, Pi
  permutations, which leave ranks, verdicts and |B_X|_F unchanged;
- hand derivations for the groups of the robot and for a parallelogram linkage with a third
  crank (self-stress of the linkage, derived in `test_parallelogram_hand_derivation`);
- numpy singular values for the rank margin of near-singular slider-crank and four-bar.

Hand derivation for the robot at q0 (a = 0.05 m; all bodies aligned with x0, so the knife-edge
normals are the global y axis). Writing v_y(P) for the y velocity of platform point P:
  W1 row = yd_2, B_y row = yd_2 - yd_1 - 4a phid_1   ->  W1 - B_y = v_y(B) = yd_1 + 4a phid_1,
  W2 row = yd_3, C_y row = yd_3 - yd_1 + 4a phid_1   ->  W2 - C_y = v_y(C) = yd_1 - 4a phid_1,
  W3 row = W4 row = yd_1 (both edges lie on the platform's y axis, normal along it).
So the left null space of C (p = 2) is spanned by the orthonormal
  n1 = (W3 - W4) / sqrt(2),   n2 = (W1 - B_y + W2 - C_y - W3 - W4) / sqrt(6),
and |B_X|_F = |C_X^T N_X|_F gives W1, W2: 1/sqrt(6) = 0.408; W3, W4: sqrt(1/2 + 1/6) =
sqrt(0.408^2 + 0.707^2) = sqrt(2/3); B, C: |B_y row| / sqrt(6) = sqrt((2 + 16 a^2) / 6) =
sqrt(2 * 0.408^2 + 0.082^2) = 0.5831 (the paper's entries 0.408, 0.707 and 0.082 = 4a/sqrt(6)).
"""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg as sla
from oracle.linalg import B_RTOL, RANK_RTOL, qr_solvability, rank
from oracle.planar import rigid_motion

import jaxmb as mb
from jaxmb import drive
from jaxmb.models import four_bar, mobile_robot, slider_crank

METHODS = ("qr", "svd", "rank")
SOLVABLE = ("A", "D", "E", "F", "G", "H", "driver", "W5")
UNSOLVABLE = ("B", "C", "W1", "W2", "W3", "W4")
ROBOT_GROUPS = {
    "rear axle": ("W3", "W4"),
    "steering": ("B", "C", "W1", "W2"),
    "wheels": ("B", "C", "W1", "W2", "W3", "W4"),
}
N_CONF = 100
ALG_TOL = 1e-9  # algebra on O(1) matrices
MARGIN_WARNING = 1e2
EPS = np.finfo(np.float64).eps
A = mobile_robot.A_UNIT
B_NORM_HAND = {
    "W1": 1 / np.sqrt(6),
    "W2": 1 / np.sqrt(6),
    "W3": np.sqrt(2 / 3),
    "W4": np.sqrt(2 / 3),
    "B": np.sqrt((2 + 16 * A**2) / 6),
    "C": np.sqrt((2 + 16 * A**2) / 6),
}


# ------------------------------------------------------------------------------------------
# independent numpy reference: the paper's QR method and the rank test
# ------------------------------------------------------------------------------------------
def rank_np(M, scale=None):
    """Rank with the same relative tolerance as the library (numpy SVD, `oracle.linalg`)."""
    return rank(M, RANK_RTOL, scale)


def paper_qr(C, masks):
    """Seed 001 eq. 21-27 in scipy (`oracle.linalg.qr_solvability`): C E = Q R with column
    pivoting; r = #(|R_kk| > rtol |R_00|); Q~ = the last p = rows - r columns of Q;
    B_X = C_X^T Q~_X for every row mask X; and the rank test of section 3.3.

    Returns r, [|B_X|_F], [B_X], [solvable by B_X = 0], [solvable by the rank test]."""
    r, Bs, norms, ok_b = qr_solvability(C, masks, RANK_RTOL, B_RTOL)
    r_svd = rank_np(C)
    ok_rank = [rank_np(C[mask]) + rank_np(C[~mask]) == r_svd for mask in masks]
    return r, norms, Bs, ok_b, np.array(ok_rank)


def null_space_b_norms(C, masks):
    """|C_X^T N_X|_F with N = scipy.linalg.null_space(C^T) (an SVD basis, not the QR one)."""
    N = sla.null_space(C.T, rcond=RANK_RTOL)
    return np.array([np.linalg.norm(C[m].T @ N[m]) for m in masks])


def masks_for(model, names_per_set):
    """Boolean row masks (numpy) for sets of pair names, from `model.rows`."""
    out = []
    for names in names_per_set:
        mask = np.zeros(model.num_rows, bool)
        for nm in names:
            mask[model.rows(nm)] = True
        out.append(mask)
    return out


def pick(tree, k):
    """Configuration k of a batched report (static fields kept)."""
    return jax.tree_util.tree_map(lambda x: x[k], tree)


# ------------------------------------------------------------------------------------------
# models built in this file
# ------------------------------------------------------------------------------------------
ROBOT_BODIES = ("platform", "holder_W1", "holder_W2", "link_4", "link_5", "slider", "trolley")
SHUFFLED_BODIES = ("link_5", "trolley", "holder_W2", "platform", "slider", "holder_W1", "link_4")
SHUFFLED_PAIRS = ("W4", "G", "driver", "A", "W1", "H", "C", "W5", "E", "B", "W3", "F", "D", "W2")


def shuffled_robot(a=A):
    """The robot of `models/mobile_robot.py` (seed 001 Table 1 and 3), with bodies and pairs added
    in a different order and revolute A written the other way round (trolley as body j)."""
    bx, by, cx, cy = mobile_robot.geometry(a)
    dx, dy = cx / 2, cy / 2 - by
    q0 = {
        "platform": (20 * a, 0.0, 0.0),
        "holder_W1": (24 * a, 0.0, 0.0),
        "holder_W2": (16 * a, 0.0, 0.0),
        "link_4": (20 * a + dx, dy, 0.0),
        "link_5": (20 * a - dx, dy, 0.0),
        "slider": (20 * a, 0.0, 0.0),
        "trolley": (5 * a, 0.0, 0.0),
    }
    m = mb.Mechanism()
    b = {nm: m.body(nm, mass=1.0, inertia=0.01, q=q0[nm]) for nm in SHUFFLED_BODIES}
    p1, p2, p3, p4, p5, p6, p7 = (b[nm] for nm in ROBOT_BODIES)
    v = jnp.array
    s_P, s_Q = v([0.0, 10 * a]), v([0.0, -10 * a])
    n = v([0.0, 1.0])
    pairs = {
        "A": mb.Revolute("A", p1, p7, s_i=v([-8 * a, 0.0]), s_j=v([7 * a, 0.0])),
        "B": mb.Revolute("B", p2, p1, s_i=v([0.0, 0.0]), s_j=v([4 * a, 0.0])),
        "C": mb.Revolute("C", p3, p1, s_i=v([0.0, 0.0]), s_j=v([-4 * a, 0.0])),
        "D": mb.Revolute("D", p4, p2, s_i=v([cx / 2, -cy / 2]), s_j=v([-bx, -by])),
        "E": mb.Revolute("E", p5, p3, s_i=v([-cx / 2, -cy / 2]), s_j=v([bx, -by])),
        "F": mb.Revolute("F", p6, p4, s_i=v([0.0, cy - by]), s_j=v([-cx / 2, cy / 2])),
        "G": mb.Revolute("G", p6, p5, s_i=v([0.0, cy - by]), s_j=v([cx / 2, cy / 2])),
        "H": mb.Translational("H", p6, p1, s_i=s_P, s_j=s_Q, v=v([1.0, 0.0])),
        # C does not depend on d(t), so a constant slider distance stands in for the steering
        "driver": mb.TranslationalDriver(
            "driver", p6, p1, s_i=s_P, s_j=s_Q, u=v([0.0, -1.0]), d=drive.Constant(20 * a)
        ),
        "W1": mb.KnifeEdge("W1", p2, s=v([0.0, 0.0]), n=n),
        "W2": mb.KnifeEdge("W2", p3, s=v([0.0, 0.0]), n=n),
        "W3": mb.KnifeEdge("W3", p1, s=v([0.0, -4 * a]), n=n),
        "W4": mb.KnifeEdge("W4", p1, s=v([0.0, 4 * a]), n=n),
        "W5": mb.KnifeEdge("W5", p7, s=v([0.0, 0.0]), n=n),
    }
    for nm in SHUFFLED_PAIRS:
        m.add(pairs[nm])
    return m.build()


def parallelogram(
    L=0.2,
    d=0.4,
    theta=0.7,
    *,
    alpha=0.0,
    shift=(0.0, 0.0),
    motor=False,
    body_order=("crank1", "crank2", "crank3", "coupler"),
    pair_order=("O1", "O2", "O3", "A1", "A2", "A3"),
):
    """Parallelogram linkage with a redundant third crank: cranks of length L pivoted to the
    ground at (0, 0), (d, 0) and (d/2, 0), all at angle theta, joined to a coupler of length d
    at its ends and at its middle (its centre of mass). `alpha`, `shift`: the whole mechanism,
    ground points included, rotated by alpha and translated. `motor`: a crank-1 angle driver."""
    c, s = jnp.cos(alpha), jnp.sin(alpha)
    R = jnp.array([[c, -s], [s, c]])
    shift = jnp.asarray(shift, jnp.float64)
    u = jnp.stack([jnp.cos(theta), jnp.sin(theta)])
    pivots = {"1": jnp.array([0.0, 0.0]), "2": jnp.array([d, 0.0]), "3": jnp.array([d / 2, 0.0])}
    poses = {
        f"crank{k}": jnp.concatenate([R @ (x + L / 2 * u) + shift, jnp.stack([theta + alpha])])
        for k, x in pivots.items()
    }
    poses["coupler"] = jnp.concatenate(
        [R @ (jnp.array([d / 2, 0.0]) + L * u) + shift, jnp.stack([alpha + 0.0 * theta])]
    )
    m = mb.Mechanism()
    b = {nm: m.body(nm, mass=1.0, inertia=0.01, q=poses[nm]) for nm in body_order}
    offsets = {"1": -d / 2, "2": d / 2, "3": 0.0}
    pairs = {}
    for k, x in pivots.items():
        pairs[f"O{k}"] = mb.Revolute(
            f"O{k}", m.ground, b[f"crank{k}"], s_i=R @ x + shift, s_j=(-L / 2, 0.0)
        )
        pairs[f"A{k}"] = mb.Revolute(
            f"A{k}", b[f"crank{k}"], b["coupler"], s_i=(L / 2, 0.0), s_j=(offsets[k], 0.0)
        )
    for nm in pair_order:
        m.add(pairs[nm])
    if motor:
        m.add(
            mb.RelativeAngleDriver(
                "motor", m.ground, b["crank1"], f=drive.Constant(theta + alpha + 0.0)
            )
        )
    return m.build()


def slider_driven_slider_crank(r=0.1, l=0.3):
    """Slider-crank of `models/slider_crank.py` driven by the slider's x (AbsoluteDriver): C is
    square (9 x 9) and singular at dead centre, where crank and rod are collinear."""
    m = mb.Mechanism()
    qc, qr, qs = slider_crank.configuration(jnp.asarray(0.5), r, l)
    crank = m.body("crank", mass=1.0, inertia=0.01, q=qc)
    rod = m.body("rod", mass=1.0, inertia=0.01, q=qr)
    slider = m.body("slider", mass=1.0, inertia=0.01, q=qs)
    m.add(mb.Revolute("O", m.ground, crank, s_i=(0.0, 0.0), s_j=(-r / 2, 0.0)))
    m.add(mb.Revolute("A", crank, rod, s_i=(r / 2, 0.0), s_j=(-l / 2, 0.0)))
    m.add(mb.Revolute("B", rod, slider, s_i=(l / 2, 0.0), s_j=(0.0, 0.0)))
    m.add(mb.Translational("P", slider, m.ground, s_i=(0.0, 0.0), s_j=(0.0, 0.0), v=(0.0, 1.0)))
    m.add(mb.AbsoluteDriver("push", slider, 0, drive.Constant(0.35)))
    return m.build()


# ------------------------------------------------------------------------------------------
# module fixtures: every compiled function is built once
# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def robot():
    return mobile_robot.build()


@pytest.fixture(scope="module")
def motion(robot):
    """100 configurations along the steering manoeuvre of seed 001 (Fig. 2), 0 to 20 s,
    integrated as seed 001 does (null space, Baumgarte)."""
    sim = jax.jit(
        lambda m, q, qd: mb.simulate(
            m, q, qd, 20.0, ts=jnp.linspace(0.0, 20.0, N_CONF), formulation="null_space"
        )
    )
    traj = sim(robot, robot.q0, mobile_robot.initial_velocity(robot))
    return np.asarray(traj.q), np.asarray(traj.ts)


def _chunked(f):
    """jit(vmap(f)) over (q, t): one batch of any size (no batched LAPACK call, jaxmb._linalg.dense)."""
    return jax.jit(jax.vmap(f))


def batched(model, method, groups=None):
    """jit(vmap(q, t -> (solvability report, C))) for one model and method."""
    return _chunked(
        lambda q, t: (mb.solvability(model, q, t, method=method, groups=groups), model.C(q, t))
    )


def batched_all(model, groups=None):
    """jit(vmap(q, t -> ({method: report}, C))): the three methods in one compiled function."""
    return _chunked(
        lambda q, t: (
            {meth: mb.solvability(model, q, t, method=meth, groups=groups) for meth in METHODS},
            model.C(q, t),
        )
    )


@pytest.fixture(scope="module")
def robot_fn(robot):
    return batched_all(robot, ROBOT_GROUPS)


@pytest.fixture(scope="module")
def reports(robot, motion, robot_fn):
    """method -> (batched report, C as numpy) at the 100 configurations."""
    reps, C = robot_fn(*motion)
    return {meth: (reps[meth], np.asarray(C)) for meth in METHODS}


@pytest.fixture(scope="module")
def reference(robot, reports):
    """The numpy paper_qr reference at every configuration (pairs, then groups)."""
    _, Cs = reports["qr"]
    sets = [(nm,) for nm in robot.pair_names] + list(ROBOT_GROUPS.values())
    masks = masks_for(robot, sets)
    return [paper_qr(C, masks) + (null_space_b_norms(C, masks),) for C in Cs], masks


# ------------------------------------------------------------------------------------------
# 1. seed 001 section 4.2
# ------------------------------------------------------------------------------------------
def test_hand_null_space_at_q0(robot, reports):
    """Reference: the hand derivation in the module docstring. n1, n2 are orthonormal, satisfy
    C^T n = 0 at q0, and C has exactly p = 2 such directions (numpy SVD)."""
    _, Cs = reports["qr"]
    C = Cs[0]
    rows = {nm: robot.rows(nm).start for nm in robot.pair_names}
    e = np.eye(robot.num_rows)
    By, Cy = e[rows["B"] + 1], e[rows["C"] + 1]
    n1 = (e[rows["W3"]] - e[rows["W4"]]) / np.sqrt(2)
    n2 = (e[rows["W1"]] - By + e[rows["W2"]] - Cy - e[rows["W3"]] - e[rows["W4"]]) / np.sqrt(6)
    N = np.stack([n1, n2], axis=1)
    assert np.max(np.abs(C.T @ N)) < 1e-14
    assert np.max(np.abs(N.T @ N - np.eye(2))) < 1e-15
    assert robot.num_rows - rank_np(C) == 2
    for nm, expected in B_NORM_HAND.items():
        mask = masks_for(robot, [(nm,)])[0]
        assert abs(np.linalg.norm(C[mask].T @ N[mask]) - expected) < 1e-14, nm


@pytest.mark.parametrize("method", METHODS)
def test_seed001_section_4_2_at_q0(robot, motion, reports, method):
    """Reference: seed 001 eq. 35 (rank Phi_q = 17, rank Psi = 4, r = 20, p = 2), the list of
    solvable / unsolvable pairs of section 4.2, and the paper's B_X norms (0.408, sqrt(0.408^2 +
    0.707^2), sqrt(2 * 0.408^2 + 0.082^2)) in their exact hand-derived form (module docstring)."""
    qs, ts = motion
    assert ts[0] == 0.0 and np.max(np.abs(qs[0] - np.asarray(robot.q0))) < 1e-12
    rep = pick(reports[method][0], 0)
    assert rep.method == method
    assert (int(rep.rank_holonomic), int(rep.rank_nonholonomic), int(rep.rank)) == (17, 4, 20)
    assert (int(rep.redundancy), int(rep.dof)) == (2, 1)
    assert (robot.m, robot.h, robot.n) == (17, 5, 21)
    flags = rep.solvable_dict()
    assert [nm for nm in robot.pair_names if flags[nm]] == list(SOLVABLE)
    assert [nm for nm in robot.pair_names if not flags[nm]] == list(UNSOLVABLE)
    b = dict(zip(robot.pair_names, np.asarray(rep.b_norm)))
    for nm, expected in B_NORM_HAND.items():
        assert abs(b[nm] - expected) < ALG_TOL, (nm, b[nm], expected)
    # the rounded values printed in the paper
    assert round(b["W1"], 3) == round(b["W2"], 3) == 0.408
    assert abs(b["W3"] - np.hypot(0.408, 0.707)) < 1e-3
    assert abs(b["B"] - np.sqrt(2 * 0.408**2 + 0.082**2)) < 1e-3
    assert round(b["B"], 4) == round(b["C"], 4) == 0.5831
    for nm in SOLVABLE:
        assert b[nm] < ALG_TOL, nm


def test_seed001_along_motion_methods_agree(robot, motion, reports):
    """Reference: seed 001 section 4.2 ("the same results can be obtained for any other
    nonsingular configuration"): at all 100 configurations of the steering manoeuvre the three
    methods give r = 20 (17 + 4 by parts), p = 2, dof = 1 and the paper's verdicts, and the
    basis-independent |B_X|_F of the QR and SVD bases agree."""
    qs, _ = motion
    # the manoeuvre really steers: the wheel holders turn relative to the platform
    steer = qs[:, 5] - qs[:, 2]
    assert np.ptp(steer) > 0.2
    expected = np.array([nm in SOLVABLE for nm in robot.pair_names])
    ref_rep = reports["qr"][0]
    for method in METHODS:
        rep = reports[method][0]
        assert np.all(np.asarray(rep.rank) == 20), method
        assert np.all(np.asarray(rep.rank_holonomic) == 17), method
        assert np.all(np.asarray(rep.rank_nonholonomic) == 4), method
        assert np.all(np.asarray(rep.redundancy) == 2) and np.all(np.asarray(rep.dof) == 1)
        assert np.array_equal(np.asarray(rep.solvable), np.tile(expected, (N_CONF, 1))), method
        m_np = np.array([margin_np(C)[0] for C in reports[method][1]])
        assert np.array_equal(np.asarray(rep.warning), m_np < MARGIN_WARNING), method
        np.testing.assert_allclose(rep.b_norm, ref_rep.b_norm, rtol=0, atol=ALG_TOL)
        np.testing.assert_allclose(rep.group_b_norm, ref_rep.group_b_norm, rtol=0, atol=ALG_TOL)
        assert np.array_equal(np.asarray(rep.unique_count), np.asarray(ref_rep.unique_count))
    b = np.asarray(ref_rep.b_norm)
    assert np.all(b[:, expected] < ALG_TOL)
    assert np.all(b[:, ~expected] > 0.1)


# ------------------------------------------------------------------------------------------
# 2. independent numpy reference of the paper's QR method
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_matches_numpy_paper_qr(robot, reports, reference, method):
    """Reference: `paper_qr` (scipy pivoted QR, B_X = C_X^T Q~_X, eq. 21-27), the rank test
    rank(C_X) + rank(C_rest) = rank(C) and B_X with a scipy null_space basis, at the 100
    configurations: ranks, verdicts and |B_X|_F (pairs and groups) to 1e-9."""
    rep, Cs = reports[method]
    refs, masks = reference
    npair = len(robot.pair_names)
    hol = np.asarray(robot.holonomic_rows)
    for k, (r, norms, _, ok_b, ok_rank, ns_norms) in enumerate(refs):
        C = Cs[k]
        assert int(rep.rank[k]) == r == rank_np(C)
        assert int(rep.rank_holonomic[k]) == rank_np(C[hol])
        assert int(rep.rank_nonholonomic[k]) == rank_np(C[~hol])
        assert np.array_equal(ok_b, ok_rank)  # the two tests of the reference agree
        assert np.array_equal(np.asarray(rep.solvable[k]), ok_b[:npair]), k
        assert np.array_equal(np.asarray(rep.group_solvable[k]), ok_b[npair:]), k
        np.testing.assert_allclose(rep.b_norm[k], norms[:npair], rtol=0, atol=ALG_TOL)
        np.testing.assert_allclose(rep.group_b_norm[k], norms[npair:], rtol=0, atol=ALG_TOL)
        np.testing.assert_allclose(ns_norms, norms, rtol=0, atol=ALG_TOL)
        c_norm = np.array([np.linalg.norm(C[m]) for m in masks[:npair]])
        np.testing.assert_allclose(rep.b_relative[k], norms[:npair] / c_norm, rtol=0, atol=ALG_TOL)


def test_unique_directions(robot, reports, reference):
    """Reference: numpy. For every pair, the unique directions E are orthonormal, lie in
    range(C_X^T), are orthogonal to range(B_X) (so e^T f_X = e^T C_X^T lambda_X is the same for
    every multiplier solution lambda + Q~ z), and there are rank(C_X) - rank(B_X) of them."""
    rep, Cs = reports["qr"]
    refs, masks = reference
    npair = len(robot.pair_names)
    E_all, counts = np.asarray(rep.unique_directions), np.asarray(rep.unique_count)
    for k in range(0, N_CONF, 7):
        Bs = refs[k][2]
        for j in range(npair):
            CX_T = Cs[k][masks[j]].T
            E = E_all[k, j]
            live = np.linalg.norm(E, axis=0) > 0.5
            Ek = E[:, live]
            rank_B = rank_np(Bs[j], scale=B_RTOL / RANK_RTOL * np.linalg.norm(CX_T))
            assert counts[k, j] == live.sum() == rank_np(CX_T) - rank_B, (k, j)
            assert np.all(E[:, ~live] == 0.0)
            P = CX_T @ np.linalg.pinv(CX_T)  # projector onto range(C_X^T)
            assert np.allclose(Ek.T @ Ek, np.eye(live.sum()), rtol=0, atol=ALG_TOL)
            assert np.allclose(P @ Ek, Ek, rtol=0, atol=ALG_TOL)
            assert np.allclose(Ek.T @ Bs[j], 0.0, rtol=0, atol=ALG_TOL)
    # the paper's pairs: B and C keep one unique component, the edges W1-W4 none
    uc = dict(zip(robot.pair_names, counts[0]))
    assert (uc["B"], uc["C"], uc["W1"], uc["W2"], uc["W3"], uc["W4"]) == (1, 1, 0, 0, 0, 0)
    assert (uc["A"], uc["H"], uc["driver"], uc["W5"]) == (2, 2, 1, 1)


def test_empty_group_is_refused(robot):
    """A group without pairs has no reaction to test: a clear error naming it, before any
    tracing (it used to reach an index array without an integer dtype)."""
    with pytest.raises(ValueError, match="group 'nothing' has no pairs"):
        mb.solvability(robot, robot.q0, groups={"nothing": ()})


# ------------------------------------------------------------------------------------------
# 3. redundant rows
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_redundant_rows(robot, reports, method):
    """Reference: numpy ranks. Removing the p rows `redundant_rows` leaves rank(C) unchanged and
    an independent (full row rank) set, at every configuration; they are rows of unsolvable
    pairs only (a solvable pair with full-rank C_X takes part in no dependency)."""
    rep, Cs = reports[method]
    order = np.asarray(rep.row_order)
    unsolvable_rows = set(np.flatnonzero(masks_for(robot, [UNSOLVABLE])[0]))
    for k in range(N_CONF):
        r = int(rep.rank[k])
        drop = np.sort(order[k, r:])
        assert len(drop) == 2 and set(drop) <= unsolvable_rows
        keep = np.setdiff1d(np.arange(robot.num_rows), drop)
        assert rank_np(Cs[k][keep]) == rank_np(Cs[k]) == len(keep) == 20
    single = pick(rep, 0)
    assert single.redundant_rows == tuple(sorted(int(i) for i in order[0, 20:]))
    with pytest.raises(ValueError, match="single configuration"):
        rep.redundant_rows  # noqa: B018  (a batch has no single row set)


# ------------------------------------------------------------------------------------------
# 4. invariance under rigid motion and renumbering
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_rigid_motion_invariance_robot(robot, motion, reports, robot_fn, method):
    """Reference: the unmoved analysis. The robot has no ground pairs and knife-edge normals are
    body-frame vectors, so moving every body by one rigid motion (rotation alpha, translation)
    maps C to C T^T with T orthogonal: ranks, verdicts and |B_X|_F are unchanged (1e-9)."""
    qs, ts = motion
    rng = np.random.default_rng(7)
    alphas = rng.uniform(-np.pi, np.pi, N_CONF)
    shifts = rng.uniform(-5.0, 5.0, (N_CONF, 2))
    moved = np.stack([rigid_motion(q, al, sh) for q, al, sh in zip(qs, alphas, shifts)])
    reps, C = robot_fn(moved, ts)
    rep = reps[method]
    ref, C0 = reports[method]
    # the moved C really differs from the unmoved one (the test is not vacuous)
    assert np.max(np.abs(np.asarray(C) - C0)) > 0.5
    assert np.array_equal(np.asarray(rep.rank), np.asarray(ref.rank))
    assert np.array_equal(np.asarray(rep.solvable), np.asarray(ref.solvable))
    assert np.array_equal(np.asarray(rep.group_solvable), np.asarray(ref.group_solvable))
    assert np.array_equal(np.asarray(rep.unique_count), np.asarray(ref.unique_count))
    np.testing.assert_allclose(rep.b_norm, ref.b_norm, rtol=0, atol=ALG_TOL)
    np.testing.assert_allclose(rep.group_b_norm, ref.group_b_norm, rtol=0, atol=ALG_TOL)


def test_renumbering_invariance_robot(robot, motion, reports):
    """Reference: the analysis of `models/mobile_robot.py`. `shuffled_robot` adds bodies and
    pairs in another order and writes revolute A the other way round; at the same physical
    configurations (coordinates permuted body by body), C becomes P C Pi (rows of A negated),
    so ranks, verdicts and |B_X|_F per pair name are unchanged (1e-9)."""
    qs, ts = motion
    model = shuffled_robot()
    assert model.pair_names == SHUFFLED_PAIRS and model.body_names == SHUFFLED_BODIES
    perm = np.concatenate([3 * ROBOT_BODIES.index(nm) + np.arange(3) for nm in SHUFFLED_BODIES])
    assert np.max(np.abs(np.asarray(model.q0) - np.asarray(robot.q0)[perm])) < 1e-15
    rep, C = batched(model, "qr", ROBOT_GROUPS)(qs[:, perm], ts)
    ref, _ = reports["qr"]
    idx = [robot.pair_names.index(nm) for nm in model.pair_names]
    assert np.array_equal(np.asarray(rep.rank), np.asarray(ref.rank))
    assert np.array_equal(np.asarray(rep.solvable), np.asarray(ref.solvable)[:, idx])
    assert np.array_equal(np.asarray(rep.group_solvable), np.asarray(ref.group_solvable))
    assert np.array_equal(np.asarray(rep.unique_count), np.asarray(ref.unique_count)[:, idx])
    np.testing.assert_allclose(rep.b_norm, np.asarray(ref.b_norm)[:, idx], rtol=0, atol=ALG_TOL)
    np.testing.assert_allclose(rep.group_b_norm, ref.group_b_norm, rtol=0, atol=ALG_TOL)
    # redundant rows differ in numbering but are again a valid removable set
    order, C = np.asarray(rep.row_order), np.asarray(C)
    for k in range(0, N_CONF, 11):
        keep = np.sort(order[k, :20])
        assert rank_np(C[k][keep]) == 20


# ------------------------------------------------------------------------------------------
# 5. groups and a second overconstrained mechanism
# ------------------------------------------------------------------------------------------
def test_robot_groups_hand_derivation(robot, reports, reference):
    """Reference: hand derivation with n1, n2 of the module docstring (q0).

    - "rear axle" (W3, W4): both rows equal c = yd_1, so f_X = (lambda_3 + lambda_4) c. Along n1
      the sum does not change, along n2 it changes by -2 / sqrt(6): C_X^T N_X = c (0, -2/sqrt(6)),
      |B|_F = 2 / sqrt(6) = sqrt(2/3), NOT unique; range(C_X^T) = span(c) is all in range(B), so
      no unique component (count 0): how the platform's lateral load splits between the rear
      axle and the steered wheels is undetermined.
    - "steering" (B, C, W1, W2): C_X^T N_X = (0, (W1 - B_y + W2 - C_y) / sqrt(6)) = (0, 2 c /
      sqrt(6)): |B|_F = sqrt(2/3), NOT unique; rank C_X = 6 (six independent rows), one
      direction lost: 5 unique components.
    - "wheels" (B, C, W1-W4): both null vectors live on these rows only, so C_X^T N_X = C^T N
      = 0: the combined reaction IS unique, with rank C_X = 8 - 2 = 6 unique components.
    Along the motion the same verdicts hold and the norms match `paper_qr`."""
    rep = pick(reports["qr"][0], 0)
    assert rep.group_names == tuple(ROBOT_GROUPS)
    assert rep.group_members == tuple(ROBOT_GROUPS.values())
    g_ok = dict(zip(rep.group_names, np.asarray(rep.group_solvable)))
    g_b = dict(zip(rep.group_names, np.asarray(rep.group_b_norm)))
    g_u = dict(zip(rep.group_names, np.asarray(rep.group_unique_count)))
    assert (g_ok["rear axle"], g_ok["steering"], g_ok["wheels"]) == (False, False, True)
    assert abs(g_b["rear axle"] - np.sqrt(2 / 3)) < ALG_TOL
    assert abs(g_b["steering"] - np.sqrt(2 / 3)) < ALG_TOL
    assert g_b["wheels"] < ALG_TOL
    assert (g_u["rear axle"], g_u["steering"], g_u["wheels"]) == (0, 5, 6)
    batch = reports["qr"][0]
    assert np.array_equal(
        np.asarray(batch.group_solvable), np.tile([False, False, True], (N_CONF, 1))
    )
    assert np.all(np.asarray(batch.group_unique_count) == np.array([0, 5, 6]))
    d = rep.to_dict()["groups"]
    assert d["rear axle"] == {
        "members": ["W3", "W4"],
        "solvable": False,
        "b_norm": pytest.approx(np.sqrt(2 / 3), abs=ALG_TOL),
    }


PARA_L, PARA_D = 0.2, 0.4


def para_hand(theta):
    """Hand derivation for `parallelogram` (the cranks are two-force members).

    A self-stress (lambda with C^T lambda = 0) is a set of joint forces in equilibrium on every
    body with no load. Each crank carries an axial force t_k along u = (cos th, sin th). The
    coupler is horizontal with its joints at x = -d/2, +d/2, 0 of its centre: forces sum
    t1 + t2 + t3 = 0, moments (about the centre) d/2 (t2 - t1) sin th = 0, so t1 = t2 = t,
    t3 = -2t: one self-stress (p = 1; n = 12, 12 rows, rank 11, dof 1) involving every joint,
    so NO revolute reaction is unique. |lambda|^2 = 2 (t^2 + t^2 + 4 t^2) = 12 t^2, and with
    |C_X^T lambda_X| the generalized force (force, moment about each body's centre):
      O1, O2: |t| on the crank, no moment (axial through the centre) -> 1 / sqrt(12);
      O3: 2 / sqrt(12);
      A1, A2: |t| on the crank, |t| and moment (d/2) |t| sin th on the coupler
              -> sqrt(2 + (d/2)^2 sin^2 th) / sqrt(12);
      A3: 2|t| on crank 3 and on the coupler, no moment -> 2 sqrt(2) / sqrt(12).
    The stress is axial, so each joint keeps one unique component (the transverse force).
    A crank-1 motor carries no part of it: its torque is unique (p = 1, rank 12, dof 0).
    Group "middle crank" (O3, A3): the forces on crank 3 cancel and -t3 u acts at the coupler
    centre: |B| = 2 / sqrt(12), NOT unique; rank C_X = 4, so 3 unique components.
    Group "all joints": C_X^T N_X = C^T N = 0, unique, rank 11 unique components."""
    s = np.sin(theta)
    a12 = np.sqrt(2 + (PARA_D / 2) ** 2 * s**2) / np.sqrt(12)
    return {
        "O1": 1 / np.sqrt(12),
        "O2": 1 / np.sqrt(12),
        "O3": 2 / np.sqrt(12),
        "A1": a12,
        "A2": a12,
        "A3": 2 * np.sqrt(2) / np.sqrt(12),
        "motor": 0.0,
    }


PARA_GROUPS = {"middle crank": ("O3", "A3"), "all joints": ("O1", "O2", "O3", "A1", "A2", "A3")}
PARA_THETAS = (0.3, 0.7, 1.2, 2.0, -1.0)


@pytest.fixture(scope="module")
def para_fn():
    """jit(vmap) over (L, d, theta, alpha, shift) of the parallelogram's report (motor on)."""

    def one(theta, alpha, shift):
        model = parallelogram(PARA_L, PARA_D, theta, alpha=alpha, shift=shift, motor=True)
        return mb.solvability(model, model.q0, groups=PARA_GROUPS), model.C(model.q0)

    return jax.jit(jax.vmap(one))


def test_parallelogram_hand_derivation(para_fn):
    """Reference: the hand derivation in `para_hand` (self-stress of the linkage), with and
    without the motor, at several crank angles; verdicts, ranks, p, dof, |B_X|_F, unique
    component counts and the two groups."""
    th = np.array(PARA_THETAS)
    rep, Cs = para_fn(th, np.zeros_like(th), np.zeros((len(th), 2)))
    names = rep.pair_names
    assert names == ("O1", "O2", "O3", "A1", "A2", "A3", "motor")
    assert np.all(np.asarray(rep.rank) == 12) and np.all(np.asarray(rep.redundancy) == 1)
    assert np.all(np.asarray(rep.dof) == 0) and not np.any(np.asarray(rep.warning))
    for k, theta in enumerate(PARA_THETAS):
        hand = para_hand(theta)
        flags = dict(zip(names, np.asarray(rep.solvable[k])))
        assert flags == {nm: nm == "motor" for nm in names}, theta
        np.testing.assert_allclose(rep.b_norm[k], [hand[nm] for nm in names], rtol=0, atol=ALG_TOL)
        assert list(np.asarray(rep.unique_count[k])) == [1, 1, 1, 1, 1, 1, 1]
        assert list(np.asarray(rep.group_solvable[k])) == [False, True]
        np.testing.assert_allclose(
            rep.group_b_norm[k], [2 / np.sqrt(12), 0.0], rtol=0, atol=ALG_TOL
        )
        assert list(np.asarray(rep.group_unique_count[k])) == [3, 11]
    # without the motor: the same verdicts, rank 11, p = 1, dof = 1 (numpy reference)
    model = parallelogram(PARA_L, PARA_D, 0.7)
    C = np.asarray(Cs[1])[:12]
    assert model.num_rows == 12 and rank_np(C) == 11 and model.n - rank_np(C) == 1
    masks = masks_for(model, [(nm,) for nm in model.pair_names])
    r, norms, _, ok_b, ok_rank = paper_qr(C, masks)
    assert r == 11 and not ok_b.any() and not ok_rank.any()
    hand = para_hand(0.7)
    np.testing.assert_allclose(norms, [hand[nm] for nm in model.pair_names], rtol=0, atol=ALG_TOL)


def test_parallelogram_rigid_motion_and_renumbering(para_fn):
    """Reference: the unmoved, default-ordered parallelogram. Rebuilt in rotated and translated
    coordinates (ground pivots moved too), and rebuilt with bodies and pairs added in another
    order, the verdicts, ranks and |B_X|_F per pair are unchanged (1e-9)."""
    th = np.full(len(PARA_THETAS), 0.7)  # same shapes and dtypes as above: no recompilation
    alphas = np.array([0.0, 0.4, -2.5, 3.0, 1.0])
    shifts = np.array([[0.0, 0.0], [1.0, -2.0], [-3.0, 0.5], [10.0, 10.0], [0.0, -7.0]])
    rep, Cs = para_fn(th, alphas, shifts)
    assert np.max(np.abs(np.asarray(Cs[2]) - np.asarray(Cs[0]))) > 0.1  # C really changes
    for k in range(1, len(th)):
        assert int(rep.rank[k]) == int(rep.rank[0])
        assert np.array_equal(np.asarray(rep.solvable[k]), np.asarray(rep.solvable[0]))
        np.testing.assert_allclose(rep.b_norm[k], rep.b_norm[0], rtol=0, atol=ALG_TOL)
        np.testing.assert_allclose(rep.group_b_norm[k], rep.group_b_norm[0], rtol=0, atol=ALG_TOL)
    model = parallelogram(
        PARA_L,
        PARA_D,
        0.7,
        body_order=("coupler", "crank3", "crank1", "crank2"),
        pair_order=("A3", "O2", "A1", "O3", "A2", "O1"),
        motor=True,
    )
    C = np.asarray(jax.jit(lambda q: model.C(q))(model.q0))
    masks = masks_for(model, [(nm,) for nm in model.pair_names])
    r, norms, _, ok_b, _ = paper_qr(C, masks)
    base = dict(zip(rep.pair_names, np.asarray(rep.b_norm[0])))
    assert r == int(rep.rank[0])
    np.testing.assert_allclose(norms, [base[nm] for nm in model.pair_names], rtol=0, atol=ALG_TOL)
    assert list(ok_b) == [nm == "motor" for nm in model.pair_names]


# ------------------------------------------------------------------------------------------
# 6. fixed shapes: jit and vmap over many configurations and over a model parameter
# ------------------------------------------------------------------------------------------
def test_vmap_10000_configurations(robot, motion, reports, rng):
    """Reference: the 100-configuration analysis and rigid-motion invariance. 10,000
    configurations (each of the 100 moved by 100 random rigid motions) in one jit(vmap) call
    give the same ranks, verdicts and |B_X|_F as their unmoved originals. (Only ranks, verdicts,
    norms, margins and row order are returned, so XLA drops the unique-direction SVDs; those are
    checked on the 100 configurations above.)"""
    qs, ts = motion
    reps = 100
    alphas = rng.uniform(-np.pi, np.pi, (reps, N_CONF))
    shifts = rng.uniform(-10.0, 10.0, (reps, N_CONF, 2))
    big_q = np.stack(
        [
            rigid_motion(q, al, sh)
            for k in range(reps)
            for q, al, sh in zip(qs, alphas[k], shifts[k])
        ]
    )
    big_t = np.tile(ts, reps)
    assert big_q.shape == (10_000, 21)

    def one(q, t):
        r = mb.solvability(robot, q, t)
        return r.rank, r.solvable, r.b_norm, r.warning, r.row_order

    # one 10,000-wide vmap: it used to deadlock jaxlib 0.10.2's batched LAPACK (issue 18)
    analyse = jax.jit(jax.vmap(one))
    rank, ok, b, warn, order = analyse(big_q, big_t)
    ref = reports["qr"][0]
    assert rank.shape == (10_000,) and ok.shape == (10_000, 14) and order.shape == (10_000, 22)
    assert np.array_equal(np.asarray(rank), np.tile(np.asarray(ref.rank), reps))
    assert np.array_equal(np.asarray(ok), np.tile(np.asarray(ref.solvable), (reps, 1)))
    np.testing.assert_allclose(b, np.tile(np.asarray(ref.b_norm), (reps, 1)), rtol=0, atol=ALG_TOL)


def test_vmap_over_length_unit(robot):
    """Reference: hand derivation (module docstring) with the length unit a as a parameter:
    |B_B| = |B_C| = sqrt((2 + 16 a^2) / 6), |B_W1| = 1/sqrt(6), |B_W3| = sqrt(2/3) for every a,
    and `paper_qr` on the C returned by the same call. vmap over a builds each robot inside the
    traced function (`mobile_robot.build(a)`)."""
    a = jnp.array([0.02, 0.05, 0.1, 0.3])

    @jax.jit
    @jax.vmap
    def analyse(a):
        model = mobile_robot.build(a)
        return mb.solvability(model, model.q0), model.C(model.q0)

    rep, Cs = analyse(a)
    names = robot.pair_names
    expected = np.array([nm in SOLVABLE for nm in names])
    masks = masks_for(robot, [(nm,) for nm in names])
    for k, ak in enumerate(np.asarray(a)):
        assert (int(rep.rank[k]), int(rep.redundancy[k]), int(rep.dof[k])) == (20, 2, 1)
        assert np.array_equal(np.asarray(rep.solvable[k]), expected)
        b = dict(zip(names, np.asarray(rep.b_norm[k])))
        for nm in ("B", "C"):
            assert abs(b[nm] - np.sqrt((2 + 16 * ak**2) / 6)) < ALG_TOL
        for nm in ("W1", "W2"):
            assert abs(b[nm] - 1 / np.sqrt(6)) < ALG_TOL
        for nm in ("W3", "W4"):
            assert abs(b[nm] - np.sqrt(2 / 3)) < ALG_TOL
        r, norms, _, ok_b, _ = paper_qr(np.asarray(Cs[k]), masks)
        assert r == 20 and np.array_equal(ok_b, expected)
        np.testing.assert_allclose(rep.b_norm[k], norms, rtol=0, atol=ALG_TOL)


# ------------------------------------------------------------------------------------------
# 7. margin and warning near singular configurations
# ------------------------------------------------------------------------------------------
def margin_np(C):
    """Margin from numpy singular values, as documented: t = rtol * s_max; min(smallest kept /
    t, t / largest dropped), dropped floored at eps * s_max (zero rows count as dropped)."""
    s = np.zeros(C.shape[0])
    sv = np.linalg.svd(C, compute_uv=False)
    s[: sv.size] = sv
    t = RANK_RTOL * s.max()
    kept, dropped = s[s > t], s[s <= t]
    dmax = max(dropped.max() if dropped.size else 0.0, EPS * s.max())
    return min(kept.min() / t, t / dmax), sv[-1] / sv[0]


def test_margin_and_warning_near_singular():
    """Reference: numpy singular values of C. A slider-crank driven at the slider is singular at
    dead centre (crank and rod collinear, theta = 0): the smallest singular value falls like
    theta; a crank-driven non-Grashof four-bar is singular at its limit crank angle (coupler
    and rocker collinear). Close to those configurations the margin drops under 1e2 and
    `warning` is set (every method); away from them it is not. At an exactly singular
    configuration the drop is a clean rank change (no warning)."""
    sc = slider_driven_slider_crank()
    thetas = np.array([0.5, 1e-2, 1e-4, 1e-6, 1e-8, 1e-10, 0.0])
    q_sc = np.stack(
        [np.concatenate(slider_crank.configuration(jnp.asarray(th), 0.1, 0.3)) for th in thetas]
    )
    expect_warn = np.array([False, False, False, True, True, False, False])
    # non-Grashof four-bar (a = 0.3, b = 0.2, c = 0.3, d = 0.35): the crank reaches its limit
    # when |O4 - A| = b + c: cos th = (a^2 + d^2 - (b + c)^2) / (2 a d)
    a, b, c, d = 0.3, 0.2, 0.3, 0.35
    th_lim = np.arccos((a**2 + d**2 - (b + c) ** 2) / (2 * a * d))
    fb = four_bar.build(a, b, c, d, theta0=0.3, omega=1.0, gravity=None)
    ths = np.array([th_lim - 0.5, th_lim - 1e-3, th_lim - 1e-13])
    q_fb = np.stack(
        [np.concatenate(four_bar.configuration(jnp.asarray(th), a, b, c, d)) for th in ths]
    )
    fb_warn = np.array([False, False, True])
    for model, qs, warn in ((sc, q_sc, expect_warn), (fb, q_fb, fb_warn)):
        reps, C = batched_all(model)(qs, np.zeros(len(qs)))
        for method, rep in reps.items():
            assert np.array_equal(np.asarray(rep.warning), warn), (method, model.pair_names)
            for k in range(len(qs)):
                m_np, smin = margin_np(np.asarray(C[k]))
                assert bool(rep.warning[k]) == (m_np < MARGIN_WARNING)
                if method == "svd":
                    assert float(rep.margin[k]) == pytest.approx(m_np, rel=1e-4)
                assert int(rep.rank[k]) == rank_np(np.asarray(C[k]))


def test_no_warning_at_robot_q0(reports):
    """Reference: numpy singular values of C at q0: the robot's dropped values are round-off
    (~1e-17 s_max) and the smallest kept one is ~1e-2 s_max, far from the rank threshold."""
    for method in METHODS:
        rep, Cs = reports[method]
        single = pick(rep, 0)
        assert not bool(single.warning)
        m_np, _ = margin_np(Cs[0])
        assert m_np > 1e6 and float(single.margin) > 1e6


# ------------------------------------------------------------------------------------------
# 8. printing and plain-Python export
# ------------------------------------------------------------------------------------------
def test_str_and_to_dict(robot, reports):
    """Reference: the verdicts checked above. Every pair's line in str(report) names the pair
    and its verdict; to_dict() is plain Python and survives json.dumps / json.loads."""
    batch = reports["qr"][0]
    rep = pick(batch, 0)
    text = str(rep)
    lines = text.splitlines()
    assert "rank C = 20" in text and "redundancy p = 2, dof = 1" in text
    assert "WARNING" not in text
    for nm in robot.pair_names:
        (line,) = [ln for ln in lines if ln.split() and ln.split()[0] == nm]
        assert ("NOT unique" in line) == (nm in UNSOLVABLE), line
        assert "unique" in line
    assert "group 'rear axle' (W3+W4): combined reaction NOT unique" in text
    assert "group 'wheels'" in text and "combined reaction unique" in text
    assert "batch of 100" in str(batch)

    d = rep.to_dict()
    back = json.loads(json.dumps(d))
    assert back == d

    def plain(x):
        if isinstance(x, dict):
            return all(isinstance(k, str) and plain(v) for k, v in x.items())
        if isinstance(x, list):
            return all(plain(v) for v in x)
        return type(x) in (str, int, float, bool)

    assert plain(d)
    assert (d["rank"], d["redundancy"], d["dof"], d["method"]) == (20, 2, 1, "qr")
    assert d["redundant_rows"] == list(rep.redundant_rows)
    assert list(d["pairs"]) == list(robot.pair_names)
    assert {nm for nm, v in d["pairs"].items() if v["solvable"]} == set(SOLVABLE)
    assert d["pairs"]["W1"]["b_norm"] == pytest.approx(1 / np.sqrt(6), abs=ALG_TOL)
    assert d["pairs"]["B"]["unique_components"] == 1


def test_bad_arguments(robot):
    """Reference: the API contract (method is "qr", "svd" or "rank"; groups name pairs).
    Checked by abstract tracing only (jax.eval_shape), nothing is compiled."""
    with pytest.raises(ValueError, match="method"):
        mb.solvability(robot, robot.q0, method="lu")
    with pytest.raises(KeyError, match="W9"):
        jax.eval_shape(lambda q: mb.solvability(robot, q, groups={"g": ("W1", "W9")}), robot.q0)
