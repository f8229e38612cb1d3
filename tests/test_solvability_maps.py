"""Solvability maps (issue 6 item 3): examples/solvability_maps.py and models/n_four_bar.py.

References:
- hand derivations (the family docstrings of the example, the module docstring of
  `jaxmb.models.n_four_bar`), restated in each test with the numbers they predict;
- the benchmark's own statement (IFToMM A02, N-four-bar): at the horizontal position the number
  of degrees of freedom increases from 1 to N + 1;
- numpy: `np.linalg.matrix_rank` of C = model.C(q) evaluated outside the batched maps, and
  singular values of C for the margins;
- a Python loop of `mb.solvability`, one configuration at a time, against the batched maps.

The example runs once (--quick) in a module fixture; its compiled batched functions are built
once per family.
"""

import contextlib
import importlib.util
import io
import os

import jax
import numpy as np
import pytest
from oracle.linalg import RANK_RTOL, rank as rank_np

import jaxmb as mb
from jaxmb.models import n_four_bar

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALG_TOL = 1e-9
N = 3
FB_REVOLUTES = ("O2", "A", "B", "O4")


def load_example():
    path = os.path.join(ROOT, "examples", "solvability_maps.py")
    spec = importlib.util.spec_from_file_location("solvability_maps_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ex():
    return load_example()


@pytest.fixture(scope="module")
def maps(ex, tmp_path_factory):
    """examples/solvability_maps.py --quick, run in this process: (results, stdout, out dir)."""
    out = tmp_path_factory.mktemp("solvability_maps")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = ex.main(["--quick", "--out", str(out), "--N", str(N)])
    return res, buf.getvalue(), out


@pytest.fixture(scope="module")
def single():
    """jit(model, q -> report fields) of one configuration: the Python-loop reference (one
    compilation per model structure)."""
    return jax.jit(
        lambda model, q: {
            k: getattr(mb.solvability(model, q), k)
            for k in ("rank", "solvable", "b_norm", "unique_count", "margin", "warning")
        }
    )


C_of = jax.jit(lambda model, q: model.C(q))


def joint_gaps(q, n_win, rigid, L=1.0):
    """Largest distance between the two points each revolute joins (numpy geometry of the
    bars' end points): ground pivots at (k L, 0), crank tips on the couplers' ends."""
    poses = q.reshape(-1, 3)
    ends = [
        (
            p[:2] - L / 2 * np.array([np.cos(p[2]), np.sin(p[2])]),
            p[:2] + L / 2 * np.array([np.cos(p[2]), np.sin(p[2])]),
        )
        for p in poses[: n_win + 1]
    ]
    gaps = [np.linalg.norm(foot - np.array([k * L, 0.0])) for k, (foot, _) in enumerate(ends)]
    if rigid:
        x, y, phi = poses[n_win + 1]
        u = np.array([np.cos(phi), np.sin(phi)])
        gaps += [
            np.linalg.norm(tip - (np.array([x, y]) + (k - n_win / 2) * L * u))
            for k, (_, tip) in enumerate(ends)
        ]
    else:
        for j in range(n_win):
            x, y, phi = poses[n_win + 1 + j]
            u = L / 2 * np.array([np.cos(phi), np.sin(phi)])
            gaps += [
                np.linalg.norm(ends[j][1] - (np.array([x, y]) - u)),
                np.linalg.norm(ends[j + 1][1] - (np.array([x, y]) + u)),
            ]
    return max(gaps)


# ------------------------------------------------------------------------------------------
# the N-four-bar model (jaxmb/models/n_four_bar.py)
# ------------------------------------------------------------------------------------------
def test_n_four_bar_counts_numpy():
    """Reference: hand counting (module docstring) and numpy ranks of model.C. Split couplers:
    n = 6N + 3, 6N + 2 rows, rank 6N + 2 (p 0, dof 1) in general, 5N + 2 (p N, dof N + 1) when
    horizontal; rigid coupler: n = 3N + 6, 4N + 4 rows, p N - 1 / N, dof 1 / 2. q closes every
    joint (numpy geometry) and the benchmark's start velocity (B0 at 1 m/s along +x) satisfies
    C qd = 0."""
    expected = {  # (N, rigid): (n, rows, rank, p, dof) in general, then horizontal
        (1, False): ((9, 8, 8, 0, 1), (9, 8, 7, 1, 2)),
        (2, False): ((15, 14, 14, 0, 1), (15, 14, 12, 2, 3)),
        (2, True): ((12, 12, 11, 1, 1), (12, 12, 10, 2, 2)),
    }
    for (n_win, rigid), both in expected.items():
        model = n_four_bar.build(n_win, rigid_coupler=rigid)
        for hor, counts in zip((False, True), both):
            assert n_four_bar.counts(n_win, horizontal=hor, rigid_coupler=rigid) == counts
            q = np.asarray(
                n_four_bar.configuration(0.0 if hor else 1.1, n_win, rigid_coupler=rigid)
            )
            C = np.asarray(C_of(model, q))
            assert C.shape == counts[1::-1]
            assert rank_np(C) == counts[2], (n_win, rigid, hor)
            assert joint_gaps(q, n_win, rigid) < 1e-15
    model = n_four_bar.build(2)  # the benchmark: N = 2, cranks vertical
    qd = np.asarray(n_four_bar.velocity(np.pi / 2, -1.0, 2))
    C = np.asarray(C_of(model, model.q0))
    assert np.max(np.abs(C @ qd)) < 1e-15
    tip_x = qd[0] - np.sin(np.pi / 2) * 0.5 * qd[2]  # B0 = crank0 centre + A(phi) (L/2, 0)
    assert abs(tip_x - 1.0) < 1e-15
    assert model.body_names == ("crank0", "crank1", "crank2", "coupler0", "coupler1")
    assert model.pair_names == ("A0", "A1", "A2", "B0c0", "B1c0", "B1c1", "B2c1")
    with pytest.raises(ValueError, match="N must be an integer >= 1"):
        n_four_bar.build(0)


# ------------------------------------------------------------------------------------------
# 1. four-bar -> parallelogram
# ------------------------------------------------------------------------------------------
def test_four_bar_family_hand_derivation(ex, maps):
    """Reference: `four_bar_family` docstring. Assembled region |b - c| <= |O4 - A| <= b + c;
    free rank 8 (p 0, dof 1) and driven rank 9 (p 0, dof 0) with every reaction unique, except
    s = 0 at theta = 0, +-pi (all links collinear): free rank 7, p 1, dof 2, driven rank 8, p 1,
    dof 1; the four revolutes NOT unique (one unique component each), the motor unique."""
    fb = maps[0]["four_bar"]
    g = fb["grid"]
    s, th = fb["grid_s"], fb["grid_theta"]
    a, b, c, d = (np.asarray(v) * np.ones_like(s) for v in ex.fb_lengths(s))
    dist = np.sqrt(a**2 + d**2 - 2 * a * d * np.cos(th))  # |O4 - A|
    closes = (dist >= np.abs(b - c)) & (dist <= b + c)
    clear = np.minimum(np.abs(dist - np.abs(b - c)), np.abs(dist - (b + c))) > 1e-6
    assert np.array_equal(g["assembled"][clear], closes[clear])
    assert np.all(g["assembled"][s >= 0])
    assert 0 < np.sum(~g["assembled"]) < len(s) // 3
    ok = g["assembled"]
    collinear = (s == 0.0) & np.isin(np.abs(th), (0.0, np.pi))
    assert collinear.sum() == 3
    for model, generic in (("free", 8), ("driven", 9)):
        mp = g[model]
        rank = np.where(collinear, generic - 1, generic)
        assert np.array_equal(mp["rank"][ok], rank[ok]), model
        assert np.array_equal(mp["redundancy"][ok], (rank[ok] < generic).astype(int))
        assert np.array_equal(mp["dof"][ok], mp["n"] - rank[ok])
        assert np.all(mp["solvable"][ok & ~collinear])
        assert np.all(mp["unique_count"][ok & ~collinear][:, :4] == 2)
        assert not np.any(mp["warning"][ok])
    assert not g["free"]["solvable"][collinear].any()
    assert np.array_equal(g["driven"]["solvable"][collinear], np.tile([0, 0, 0, 0, 1], (3, 1)))
    assert np.all(g["driven"]["unique_count"][collinear] == 1)
    assert g["driven"]["pair_names"] == FB_REVOLUTES + ("motor",)
    names = {
        (e["model"], e["name"], e["s"], e["theta"])
        for e in fb["singular"]
        if "toggle" not in e["name"]
    }
    towards = "parallelogram, all links collinear, crank towards O4"
    away = "parallelogram, all links collinear, crank away from O4"
    assert names == {
        (m, nm, 0.0, t)
        for m in ("free", "driven")
        for nm, t in ((towards, 0.0), (away, np.pi), (away, -np.pi))
    }


def test_four_bar_toggles_and_approach(maps):
    """Reference: `four_bar_family` docstring. At the toggles of s < 0 (coupler and rocker
    collinear, built exactly) the driven linkage has rank 8, p 1, dof 1 and no unique reaction,
    motor included; the free one stays regular (rank 8, all unique). Towards the parallelogram
    at theta = 0, pi the coupler-rocker triangle has height ~ sqrt(s): the margin grows like
    sqrt(s) (log-log slope 1/2); at s = 1e-16 (1 + s == 1) the rank has dropped."""
    fb = maps[0]["four_bar"]
    tog = fb["toggle"]
    assert len(fb["toggles"]) >= 8 and np.all(tog["assembled"])
    assert np.all(tog["driven"]["rank"] == 8) and np.all(tog["driven"]["dof"] == 1)
    assert not tog["driven"]["solvable"].any()
    assert np.all(tog["free"]["rank"] == 8) and tog["free"]["solvable"].all()
    toggles = [e for e in fb["singular"] if "toggle" in e["name"]]
    assert len(toggles) == len(fb["toggles"])
    assert all(
        e["model"] == "driven" and e["unsolvable"] == list(FB_REVOLUTES) + ["motor"]
        for e in toggles
    )
    s_app, ap = fb["approach_s"], fb["approach"]
    k = len(s_app)
    fit = (s_app >= 1e-12) & (s_app <= 1e-5)
    for model in ("free", "driven"):
        for part in (slice(0, k), slice(k, None)):
            margin = ap[model]["margin"][part]
            slope = np.polyfit(np.log10(s_app[fit]), np.log10(margin[fit]), 1)[0]
            assert abs(slope - 0.5) < 0.05, (model, slope)
            assert ap[model]["rank"][part][0] == ap[model]["generic_rank"] - 1  # s = 1e-16
            assert np.all(ap[model]["rank"][part][s_app >= 1e-15] == ap[model]["generic_rank"])


def test_four_bar_numpy_reference(ex, maps):
    """Reference: numpy matrix_rank of model.C evaluated outside the map (jit of model.C, the
    models rebuilt for each s), at generic, collinear and toggle points: C agrees with the map's
    C and the ranks with the map's ranks."""
    fb = maps[0]["four_bar"]
    nth = len(fb["theta"])
    i0 = int(np.flatnonzero(fb["s"] == 0.0)[0])
    idx = [i0 * nth + nth // 2, i0 * nth, (i0 + 1) * nth + 7, len(fb["s"]) * nth - 9]
    points = [(fb["grid_s"][k], fb["q"][k], "grid", k) for k in idx]
    points += [
        (t[0], fb["q"][len(fb["grid_s"]) + len(fb["approach_s"]) * 2 + j], "toggle", j)
        for j, t in enumerate(fb["toggles"][:2])
    ]
    for s, q, part, k in points:
        for model, mb_model in zip(("free", "driven"), ex.fb_models(s)):
            C = np.asarray(C_of(mb_model, q))
            np.testing.assert_allclose(C, fb[part][model]["C"][k], rtol=0, atol=1e-14)
            assert rank_np(C) == fb[part][model]["rank"][k], (s, part, k, model)


# ------------------------------------------------------------------------------------------
# 2. slider-crank through dead centre
# ------------------------------------------------------------------------------------------
def test_slider_crank_hand_derivation(maps):
    """Reference: `slider_crank_family` docstring. Free: rank 8 (p 0, dof 1) and crank-driven:
    rank 9 (p 0, dof 0) at every crank angle, dead centres included, all reactions unique.
    Slider-driven: rank 9 except at theta = 0, +-pi: rank 8, p 1, dof 1, where O, A, B and push
    are NOT unique (one, one, one and zero unique components) and P is unique (two)."""
    sc = maps[0]["slider_crank"]
    th = sc["theta"]
    dead = np.isin(np.abs(th), (0.0, np.pi))
    assert dead.sum() == 3
    for model, rank in (("free", 8), ("crank_driven", 9)):
        mp = sc[model]
        assert np.all(mp["rank"] == rank) and np.all(mp["redundancy"] == 0)
        assert mp["solvable"].all() and not mp["warning"].any()
    mp = sc["slider_driven"]
    assert mp["pair_names"] == ("O", "A", "B", "P", "push")
    assert np.array_equal(mp["rank"], np.where(dead, 8, 9))
    assert np.array_equal(mp["dof"], np.where(dead, 1, 0))
    assert np.array_equal(mp["redundancy"], np.where(dead, 1, 0))
    assert np.array_equal(mp["solvable"][dead], np.tile([0, 0, 0, 1, 0], (3, 1)))
    assert np.array_equal(mp["unique_count"][dead], np.tile([1, 1, 1, 2, 0], (3, 1)))
    assert mp["solvable"][~dead].all()
    for k in np.flatnonzero(dead):
        assert rank_np(mp["C"][k]) == 8 and rank_np(mp["C"][k][:8]) == 8
    names = {(e["model"], e["name"], e["theta"]) for e in sc["singular"]}
    ext = "dead centre, extended (crank and rod aligned, slider outermost)"
    fold = "dead centre, folded (rod over the crank, slider innermost)"
    assert names == {
        ("slider_driven", ext, 0.0),
        ("slider_driven", fold, np.pi),
        ("slider_driven", fold, -np.pi),
    }


def test_slider_crank_margin_near_dead_centre(maps):
    """Reference: numpy singular values of C. Slider-driven: sigma_r / sigma_max is
    proportional to the distance d from the dead centre (constant ratio / d to 5 %); the rank
    drops for small d and is full for d >= 1e-6; `warning` is set exactly in a band between,
    where the numpy margin (sigma ratio / 1e-9 or its inverse) is below 1e3, and never where it
    is above 1e3 away from the band. Free and crank-driven: never a warning, rank full."""
    sc = maps[0]["slider_crank"]
    deltas = sc["deltas"]
    k = len(deltas)
    for model in ("free", "crank_driven"):
        mp = sc[model + "_approach"]
        assert np.all(mp["rank"] == mp["generic_rank"]) and not mp["warning"].any()
    mp = sc["slider_driven_approach"]
    for j in range(4):
        part = slice(j * k, (j + 1) * k)
        ratio = mp["sigma_ratio"][part] / deltas
        fit = (deltas >= 1e-12) & (deltas <= 1e-3)
        assert np.ptp(np.log(ratio[fit])) < 0.05, ratio[fit]
        rank = mp["rank"][part]
        assert rank[0] == 8 and np.all(rank[deltas >= 1e-6] == 9)
        assert np.all(np.diff(rank) >= 0)  # one change from dropped to full
        warn = mp["warning"][part]
        assert warn.any() and not warn[deltas >= 1e-4].any() and not warn[deltas <= 1e-12].any()
        r = mp["sigma_ratio"][part] / RANK_RTOL
        margin_np = np.minimum(r, 1 / r)
        assert np.all(margin_np[warn] < 1e3) and not warn[margin_np > 1e3].any()
    band = sc["bands"]["slider_driven"]
    assert 1e-10 <= band["rank_dropped_up_to"] <= 1e-7
    assert band["warning_from"] <= band["warning_to"] <= 1e-5


# ------------------------------------------------------------------------------------------
# 3. N-four-bar maps
# ------------------------------------------------------------------------------------------
def test_n_four_bar_family_hand_derivation(maps):
    """Reference: `jaxmb.models.n_four_bar` docstring and the benchmark statement (dof 1 ->
    N + 1 at the horizontal position), N = 3. Split couplers: rank 20, p 0, dof 1, all unique;
    horizontal (angle 0, +-pi): rank 17, p 3, dof 4, no revolute unique (one unique component
    each). Rigid coupler: rank 14, p 2, dof 1 in general, rank 13, p 3, dof 2 horizontal, no
    revolute unique anywhere (axial crank forces: one unique component each)."""
    nfb = maps[0]["n_four_bar"]
    ang = nfb["angle"]
    hor = np.isin(np.abs(ang), (0.0, np.pi))
    assert hor.sum() == 3
    split, rigid = nfb["split"], nfb["rigid"]
    assert (split["n"], split["num_rows"], rigid["n"], rigid["num_rows"]) == (21, 20, 15, 16)
    assert np.array_equal(split["rank"], np.where(hor, 17, 20))
    assert np.array_equal(split["dof"], np.where(hor, N + 1, 1))
    assert np.array_equal(split["redundancy"], np.where(hor, N, 0))
    assert split["solvable"][~hor].all() and not split["solvable"][hor].any()
    assert np.all(split["unique_count"][hor] == 1) and np.all(split["unique_count"][~hor] == 2)
    assert np.array_equal(rigid["rank"], np.where(hor, 13, 14))
    assert np.array_equal(rigid["redundancy"], np.where(hor, N, N - 1))
    assert np.array_equal(rigid["dof"], np.where(hor, 2, 1))
    assert not rigid["solvable"].any() and np.all(rigid["unique_count"] == 1)
    for mp in (split, rigid):
        assert not mp["warning"].any()
        for k in (0, len(ang) // 2, len(ang) // 3):
            assert rank_np(mp["C"][k]) == mp["rank"][k]
    names = {(e["model"], e["name"], e["angle"]) for e in nfb["singular"]}
    plus, minus = n_four_bar.SINGULAR_ANGLES
    assert names == {
        (m, nm, a)
        for m in ("split", "rigid")
        for nm, a in ((plus, 0.0), (minus, np.pi), (minus, -np.pi))
    }
    for model in ("split", "rigid"):
        band = nfb["bands"][model]
        assert 1e-11 <= band["rank_dropped_up_to"] <= 1e-7
        assert band["warning_to"] <= 1e-5
    # the map's C is model.C: numpy rank at two angles from an independent evaluation
    model = n_four_bar.build(N, gravity=None)
    for k in (len(ang) // 2, len(ang) // 5):
        q = n_four_bar.configuration(ang[k], N)
        C = np.asarray(C_of(model, q))
        np.testing.assert_allclose(C, split["C"][k], rtol=0, atol=1e-14)
        assert rank_np(C) == split["rank"][k]


# ------------------------------------------------------------------------------------------
# batched map == Python loop; the example's output
# ------------------------------------------------------------------------------------------
ROUNDOFF_MARGIN = 1e-9 / (100 * np.finfo(np.float64).eps)
"""A margin above this is set by a pivot dropped within 100 eps of the largest: round-off of an
exact redundancy, whose value depends on the order of the factorization's operations (LAPACK
geqp3 for a single call, jaxmb's interleaved kernel under vmap: 4.5e6 and 3.4e6 at one point),
not on the configuration."""


def _check_point(single, model, q, mp, k):
    ref = single(model, q)
    assert int(ref["rank"]) == mp["rank"][k]
    assert np.array_equal(np.asarray(ref["solvable"]), mp["solvable"][k])
    assert np.array_equal(np.asarray(ref["unique_count"]), mp["unique_count"][k])
    assert bool(ref["warning"]) == mp["warning"][k]
    np.testing.assert_allclose(np.asarray(ref["b_norm"]), mp["b_norm"][k], rtol=0, atol=ALG_TOL)
    margins = float(ref["margin"]), float(mp["margin"][k])
    if min(margins) < ROUNDOFF_MARGIN:  # a decision the configuration sets: equal
        np.testing.assert_allclose(*margins, rtol=1e-6)


def test_batched_maps_equal_python_loop(ex, maps, single):
    """Reference: `mb.solvability` on one configuration at a time (a Python loop, jit per
    model): ranks, verdicts, unique counts, warnings, |B_X| and margins equal the batched maps
    at generic and singular points of each family."""
    res = maps[0]
    fb = res["four_bar"]
    nth = len(fb["theta"])
    i0 = int(np.flatnonzero(fb["s"] == 0.0)[0])
    for k in (i0 * nth + nth // 2, (i0 + 2) * nth + 5):
        _check_point(single, ex.fb_models(fb["grid_s"][k])[1], fb["q"][k], fb["grid"]["driven"], k)
    sc = res["slider_crank"]
    slider = ex.sc_models()[2]
    for k in (len(sc["theta"]) // 2, 5):
        _check_point(single, slider, ex.sc_configuration(sc["theta"][k]), sc["slider_driven"], k)
    nfb = res["n_four_bar"]
    split = ex.nfb_models(N)[0]
    for k in (len(nfb["angle"]) // 2, 11):
        q = n_four_bar.configuration(nfb["angle"][k], N)
        _check_point(single, split, q, nfb["split"], k)


def test_example_writes_figures_and_names(ex, maps):
    """Reference: the hand derivations above. The --quick run writes its three figures, prints
    every singular configuration by name with its NOT-unique pairs and names none 'unnamed'."""
    res, text, out = maps
    assert len(res["figures"]) == 3
    for path in res["figures"]:
        assert os.path.dirname(path) == str(out) and os.path.getsize(path) > 20_000
    assert all(e["name"] != "unnamed" for e in res["singular"])
    assert "parallelogram, all links collinear, crank towards O4" in text
    assert "dead centre, extended" in text and "toggle (folded)" in text
    assert "[split] cranks horizontal, pointing +x (all bars collinear): angle = 0" in text
    assert "rank 17, p = 3, dof = 4; NOT unique: A0, A1, A2, A3, B0c0" in text
    assert "[slider_driven] dead centre" in text and "NOT unique: O, A, B, push" in text
