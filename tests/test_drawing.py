"""Drawings, animations and the `plot` / `animate` commands (jaxmb.drawing, jaxmb.cli).

References: joint positions of the slider-crank in closed form (O = 0, A = r(cos, sin), B on the
x axis at r cos + sqrt(l^2 - r^2 sin^2)) and by hand with rotation matrices from q; the knife
edges of the rigidly rotated mobile robot by hand; the solvable pairs of seed 001 section 4.2;
the reactions of a pendulum hanging at rest (its weight); frame counts read back with PIL.
"""

import os
import subprocess
import sys
import types

import jax
import jax.numpy as jnp
import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib import animation as mpl_animation
from matplotlib.text import Text
from oracle.planar import rot
from PIL import Image

import jaxmb as mb
from jaxmb import cli, cli_parser, drawing, durations, plotting
from jaxmb.models import mobile_robot, slider_crank

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOL = 1e-12  # drawn coordinates are q mapped by r + A(phi) s in float64
R, L, THETA = 0.1, 0.3, 0.3
SEED_SOLVABLE = {"A", "D", "E", "F", "G", "H", "driver", "W5"}  # seed 001 section 4.2


def artist(ax, gid):
    found = [a for a in ax.get_children() if a.get_gid() == gid]
    assert len(found) == 1, (gid, len(found))
    return found[0]


@pytest.fixture(scope="module")
def crank():
    return slider_crank.build(r=R, l=L, theta0=THETA, omega=2.0)


@pytest.fixture(scope="module")
def robot():
    model = mobile_robot.build()
    return model, jax.jit(mb.solvability)(model, model.q0).solvable_dict()  # jit compiles faster


def test_slider_crank_drawing_matches_hand_geometry(crank):
    """Links run between the joints, pins, slider box and labels sit on them, ground hatching
    lies under the pivot O and the guide of P; all points agree with the closed form and with
    r + A(phi) s computed by hand from q."""
    q = np.asarray(crank.q0)
    O = np.zeros(2)
    A = R * np.array([np.cos(THETA), np.sin(THETA)])
    B = np.array([A[0] + np.sqrt(L**2 - A[1] ** 2), 0.0])
    by_hand = {
        "O": q[0:2] + rot(q[2]) @ [-R / 2, 0.0],
        "A": q[3:5] + rot(q[5]) @ [-L / 2, 0.0],
        "B": q[3:5] + rot(q[5]) @ [L / 2, 0.0],
    }
    for name, p in {"O": O, "A": A, "B": B}.items():
        np.testing.assert_allclose(by_hand[name], p, atol=TOL)
    np.testing.assert_allclose(q[0:2] + rot(q[2]) @ [R / 2, 0.0], A, atol=TOL)

    ax = drawing.draw_mechanism(crank, q)
    for body, ends in {"crank": (O, A), "rod": (A, B)}.items():
        xy = artist(ax, f"body:{body}").get_xydata()
        if np.linalg.norm(xy[0] - ends[0]) > np.linalg.norm(xy[0] - ends[1]):
            xy = xy[::-1]
        np.testing.assert_allclose(xy, np.array(ends), atol=TOL)
    for name, p in {"O": O, "A": A, "B": B}.items():
        np.testing.assert_allclose(artist(ax, f"pin:{name}").center, p, atol=TOL)
    np.testing.assert_allclose(artist(ax, "slider:P").get_xy()[:4].mean(axis=0), B, atol=TOL)
    for k, body in enumerate(crank.body_names):
        np.testing.assert_allclose(
            artist(ax, f"com:{body}").get_xydata()[0], q[3 * k : 3 * k + 2], atol=TOL
        )
    for name, p in {"O": O, "A": A, "B": B, "P": B}.items():
        label = artist(ax, f"label:{name}")
        assert label.get_text() == name
        np.testing.assert_allclose(label.xy, p, atol=TOL)
    assert artist(ax, "label:motor").get_text() == "motor"
    artist(ax, "driver:motor")
    support, guide = artist(ax, "support:O"), artist(ax, "guide:P")
    assert support.get_hatch() == guide.get_hatch() == "////"
    assert np.all(support.get_xy()[:, 1] < O[1])  # under the ground pivot
    assert np.all(guide.get_xy()[:, 1] < B[1])  # under the slider
    assert guide.get_xy()[:, 0].min() < B[0] < guide.get_xy()[:, 0].max()
    plt.close(ax.figure)


def test_robot_solvability_is_drawn_distinctly(robot):
    """mb.solvability agrees with seed 001; every pair gets a ring: solid green when its
    reaction is unique, dashed red with the label "NAME (not unique)" when it is not. The
    robot is drawn rigidly rotated by alpha: the knife edges W3, W4 sit at R(alpha)
    (20a, -+4a) with blades along R(alpha) (1, 0) (perpendicular to n = (0, 1)), by hand."""
    model, flags = robot
    assert {name for name, ok in flags.items() if ok} == SEED_SOLVABLE
    alpha, a = 0.4, mobile_robot.A_UNIT
    q = np.asarray(model.q0).reshape(-1, 3).copy()
    q[:, :2] = q[:, :2] @ rot(alpha).T
    q[:, 2] += alpha
    ax = drawing.draw_mechanism(model, q.ravel(), solvable=flags)
    for name in model.pair_names:
        ring, label = artist(ax, f"flag:{name}"), artist(ax, f"label:{name}")
        unique = name in SEED_SOLVABLE
        color = drawing.UNIQUE_COLOR if unique else drawing.NOT_UNIQUE_COLOR
        assert mcolors.same_color(ring.get_edgecolor(), color), name
        assert ring.get_linestyle() in (("-", "solid") if unique else ("--", "dashed")), name
        assert label.get_text() == (name if unique else f"{name} (not unique)")
        assert mcolors.same_color(label.get_color(), color), name
    for name, y in (("W3", -4 * a), ("W4", 4 * a)):
        xy = artist(ax, f"knife:{name}").get_xydata()
        np.testing.assert_allclose(xy.mean(axis=0), rot(alpha) @ [20 * a, y], atol=TOL)
        blade = (xy[1] - xy[0]) / np.linalg.norm(xy[1] - xy[0])
        assert abs(blade @ (rot(alpha) @ [0.0, 1.0])) < TOL
        np.testing.assert_allclose(artist(ax, f"flag:{name}").center, xy.mean(axis=0), atol=TOL)
    plt.close(ax.figure)


def label_boxes(ax):
    """{pair name: (x0, y0, x1, y1)} of the drawn labels' text, in pixels, after a draw."""
    ax.figure.canvas.draw()
    renderer = ax.figure.canvas.get_renderer()
    return {
        a.get_gid()[len("label:") :]: Text.get_window_extent(a, renderer).extents
        for a in ax.get_children()
        if str(a.get_gid()).startswith("label:")
    }


def overlap(a, b):
    """Area (px^2) shared by two boxes (x0, y0, x1, y1)."""
    dx = min(a[2], b[2]) - max(a[0], b[0])
    dy = min(a[3], b[3]) - max(a[1], b[1])
    return max(dx, 0.0) * max(dy, 0.0)


@pytest.mark.parametrize("size", [(7.5, 5.5), (11.0, 9.0)])
def test_labels_of_the_crowded_robot_do_not_collide(robot, size):
    """The demo's drawing (the robot at q0, every pair flagged, its centre crowded: F and G on
    one point, the driver, W4, B and W1 around it): measured with matplotlib's renderer, no two
    label texts overlap, none covers the point of a pair, and each lies inside the axes. The
    reference, each label drawn centred on its point, does collide (F and G share one)."""
    model, flags = robot
    fig, ax = plt.subplots(figsize=size)
    try:
        drawing.draw_mechanism(model, model.q0, ax, solvable=flags)
        boxes = label_boxes(ax)
        assert set(boxes) == set(model.pair_names)
        names = sorted(boxes)
        shared = [
            (a, b)
            for k, a in enumerate(names)
            for b in names[k + 1 :]
            if overlap(boxes[a], boxes[b]) > 0
        ]
        assert shared == []
        points = {n: ax.transData.transform(artist(ax, f"label:{n}").xy) for n in names}
        covered = [
            (n, m)
            for n in names
            for m in names
            if boxes[n][0] <= points[m][0] <= boxes[n][2]
            and boxes[n][1] <= points[m][1] <= boxes[n][3]
        ]
        assert covered == []
        x0, y0, x1, y1 = ax.bbox.extents
        assert all(x0 <= b[0] and b[2] <= x1 and y0 <= b[1] and b[3] <= y1 for b in boxes.values())
        centred = {
            n: np.concatenate([points[n] - (b[2:] - b[:2]) / 2, points[n] + (b[2:] - b[:2]) / 2])
            for n, b in boxes.items()
        }
        assert overlap(centred["F"], centred["G"]) > 0
    finally:
        plt.close(fig)


def test_reaction_curves_and_paths_get_pairwise_distinct_styles(robot):
    """The robot's 14 reaction curves: every (colour, dash, marker) differs from every other;
    the unique ones solid, the others dashed. `curve_styles` stays pairwise distinct beyond the
    10 colours, with dashes or (where the dash carries meaning) with markers."""
    model, flags = robot
    styles = plotting.pair_styles(model.pair_names, flags)
    keys = {
        n: (mcolors.to_hex(s["color"]), str(s["linestyle"]), s.get("marker", ""))
        for n, s in styles.items()
    }
    assert len(keys) == 14 and len(set(keys.values())) == 14
    assert all(styles[n]["linestyle"] == ("-" if flags[n] else "--") for n in model.pair_names)
    for count, dashes in ((45, True), (30, False)):
        drawn = [
            (mcolors.to_hex(s["color"]), str(s.get("linestyle")), s.get("marker", ""))
            for s in plotting.curve_styles(count, dashes=dashes)
        ]
        assert len(set(drawn)) == count
        assert all((s == "None") != dashes for _, s, _ in drawn)
    fig, ax = plt.subplots()
    paths = {f"p{k}": np.column_stack([np.arange(3.0), np.full(3, k)]) for k in range(12)}
    plotting.plot_paths(ax, paths)
    lines = [line for line in ax.get_lines() if line.get_label() in paths]
    assert (
        len({(mcolors.to_hex(line.get_color()), str(line.get_linestyle())) for line in lines}) == 12
    )
    plt.close(fig)


def test_fan_of_paths_has_a_colour_bar():
    """Colour carries the value of each path, so the figure has a colour bar that reads it
    back: the bar's mappable is the paths, titled with the quantity, its scale symmetric about
    `center`; each path's colour is the bar's colour of its value."""
    fig, ax = plt.subplots()
    paths = np.stack(
        [
            np.column_stack([np.linspace(0, 1, 5), v * np.linspace(0, 1, 5)])
            for v in (-0.02, 0.01, 0.03)
        ]
    )
    values = np.array([-0.02, 0.01, 0.03])
    bar = plotting.plot_fan(ax, paths, values, "steering amplitude (m)", center=0.0)
    assert len(fig.axes) == 2 and bar.ax in fig.axes
    assert bar.ax.get_ylabel() == "steering amplitude (m)"
    assert bar.mappable.get_clim() == pytest.approx((-0.03, 0.03))
    colors = bar.mappable.get_colors() if len(bar.mappable.get_colors()) == 3 else None
    expected = bar.cmap(bar.norm(values))
    np.testing.assert_allclose(
        colors if colors is not None else bar.mappable.to_rgba(values), expected
    )
    plt.close(fig)


def test_default_duration_shows_one_cycle_or_the_drive():
    """One turn of a crank driven at 2 rad/s (pi s); one period of the double pendulum's
    harmonic drives (2 pi / (pi / 6) = 12 s); the robot's steering manoeuvre (ends at 17 s of
    20, plus 15%, rounded: 20 s); an undriven four-bar under gravity: two pendulum periods of
    its size, rounded up; nothing to go by: 1 s. The plot and animate commands take it when
    --t1 is not given."""
    from jaxmb.models import composed_pendulum, four_bar

    assert durations.default_duration(slider_crank.build(omega=2.0)) == pytest.approx(np.pi)
    assert durations.default_duration(composed_pendulum.build()) == pytest.approx(12.0)
    assert durations.default_duration(mobile_robot.build()) == pytest.approx(20.0)
    bar = four_bar.build()
    size = drawing.mechanism_size(bar, np.asarray(bar.q0))
    estimate = 4 * np.pi * np.sqrt(size / 9.81)
    assert estimate <= durations.default_duration(bar) <= 1.25 * estimate
    m = mb.Mechanism()
    m.body("free", mass=1.0, inertia=0.1, q=(0.0, 0.0, 0.0))
    assert durations.default_duration(m.build()) == 1.0
    for command in ("plot", "animate"):
        ext = "png" if command == "plot" else "gif"
        args = cli_parser.parse_args([command, "slider_crank", "--out", f"x.{ext}"])
        assert args.t1 is None


def test_every_element_type_is_drawn_at_its_points():
    """A gallery model (need not be assembled) with a pin-in-slot, distance, weld, gear, spring,
    force, torque, bushing and absolute driver: each symbol sits at r + A(phi) s computed by
    hand."""
    m = mb.Mechanism()
    arm = m.body("arm", mass=1.0, inertia=0.1, q=(0.3, 0.1, 0.5))
    block = m.body("block", mass=1.0, inertia=0.1, q=(0.8, 0.2, -0.2))
    plate = m.body("plate", mass=1.0, inertia=0.1, q=(0.5, -0.3, 0.1))
    m.add(
        mb.Revolute(
            "O",
            m.ground,
            arm,
            s_i=(0.3 - 0.3 * np.cos(0.5), 0.1 - 0.3 * np.sin(0.5)),
            s_j=(-0.3, 0.0),
        )
    )
    m.add(mb.PinInSlot("S", arm, block, s_i=(0.1, 0.0), s_j=(0.0, 0.0), a_i=(1.0, 0.0)))
    m.add(mb.Distance("D", plate, m.ground, s_i=(0.1, 0.0), s_j=(1.0, -0.5), length=0.5))
    m.add(mb.Weld("W", plate, arm, s_i=(-0.1, 0.0), s_j=(0.0, 0.0)))
    m.add(mb.Gear("Z", arm, block, ratio=2.0))
    m.add(mb.AbsoluteDriver("ax", plate, 0, mb.drive.Constant(0.5)))
    m.add(
        mb.SpringDamper(
            "k",
            m.ground,
            block,
            s_i=(1.2, 0.5),
            s_j=(0.05, 0.0),
            stiffness=10.0,
            damping=0.1,
            free_length=0.3,
        )
    )
    m.add(mb.Force("push", block, s=(0.05, 0.02), f=(3.0, 4.0)))
    m.add(mb.Torque("tau", plate, 1.0))
    m.add(
        mb.Bushing(
            "bu", plate, m.ground, s_i=(0.05, 0.0), s_j=(0.9, -0.1), stiffness=(1e3, 1e3, 0.0)
        )
    )
    model = m.build()
    q = np.asarray(model.q0)
    r = {name: q[3 * k : 3 * k + 2] for k, name in enumerate(model.body_names)}
    ph = {name: q[3 * k + 2] for k, name in enumerate(model.body_names)}

    def at(body, s):
        return r[body] + rot(ph[body]) @ np.asarray(s)

    ax = drawing.draw_mechanism(model, q, t=0.0)
    np.testing.assert_allclose(
        sorted(map(tuple, artist(ax, "body:arm").get_xydata())),
        sorted([tuple(at("arm", (-0.3, 0.0))), tuple(r["arm"])]),
        atol=TOL,
    )
    np.testing.assert_allclose(
        sorted(map(tuple, artist(ax, "body:plate").get_xydata())),
        sorted([tuple(at("plate", (-0.1, 0.0))), tuple(at("plate", (0.1, 0.0)))]),
        atol=TOL,
    )
    box = artist(ax, "slider:S").get_xy()[:4]
    np.testing.assert_allclose(box.mean(axis=0), r["block"], atol=TOL)
    edge = (box[1] - box[0]) / np.linalg.norm(box[1] - box[0])
    np.testing.assert_allclose(edge, rot(ph["arm"]) @ [1.0, 0.0], atol=TOL)  # along the slot
    np.testing.assert_allclose(
        artist(ax, "link:D").get_xydata(), [at("plate", (0.1, 0.0)), (1.0, -0.5)], atol=TOL
    )
    np.testing.assert_allclose(
        artist(ax, "weld:W").get_xydata()[0], at("plate", (-0.1, 0.0)), atol=TOL
    )
    np.testing.assert_allclose(artist(ax, "pair:Z").get_xydata(), [r["arm"], r["block"]], atol=TOL)
    zigzag = artist(ax, "force:k").get_xydata()
    np.testing.assert_allclose(zigzag[[0, -1]], [(1.2, 0.5), at("block", (0.05, 0.0))], atol=TOL)
    tip = np.asarray(artist(ax, "label:push").xy) - at("block", (0.05, 0.02))
    assert abs(tip[0] * 4.0 - tip[1] * 3.0) < TOL and tip @ [3.0, 4.0] > 0  # along f
    np.testing.assert_allclose(artist(ax, "force:bu").center, at("plate", (0.05, 0.0)), atol=TOL)
    np.testing.assert_allclose(
        artist(ax, "force:bu:link").get_xydata()[[0, -1]],
        [at("plate", (0.05, 0.0)), (0.9, -0.1)],
        atol=TOL,
    )
    for gid in ("driver:ax", "force:tau", "pin:O", "label:ax", "label:tau", "label:k", "label:bu"):
        artist(ax, gid)
    plt.close(ax.figure)


def test_drawing_errors_name_the_problem(crank):
    with pytest.raises(ValueError, match=r"q must have shape \(9,\)"):
        drawing.draw_mechanism(crank, np.zeros(8))
    with pytest.raises(ValueError, match="unknown pairs \\['Z'\\]"):
        drawing.draw_mechanism(crank, crank.q0, solvable={"O": True, "Z": False})
    plt.close("all")


def test_reaction_panel_dashes_method_dependent_pairs():
    """A rod hanging at rest from two coincident pivots O1, O2 (redundant: not unique) carries a
    welded bob (W: unique). Its panel (flags from the Reactions) draws O1, O2 dashed and
    labelled method-dependent, W solid; |F_W| on the rod is the bob's weight, and the min-norm
    split of the symmetric pivots gives each half the total weight; no torques (every force
    acts along the rod)."""
    m_rod, m_bob, g = 2.0, 0.5, 9.81
    m = mb.Mechanism()
    rod = m.body("rod", mass=m_rod, inertia=m_rod * L**2 / 12, q=(0.0, -L / 2, -np.pi / 2))
    bob = m.body("bob", mass=m_bob, inertia=1e-3, q=(0.0, -L, -np.pi / 2))
    for name in ("O1", "O2"):
        m.add(mb.Revolute(name, m.ground, rod, s_i=(0.0, 0.0), s_j=(-L / 2, 0.0)))
    m.add(mb.Weld("W", rod, bob, s_i=(L / 2, 0.0), s_j=(0.0, 0.0)))
    m.add(mb.Gravity((0.0, -g)))
    model = m.build()
    rx = jax.jit(lambda q: mb.reactions(model, q, jnp.zeros(model.n), 0.0))(model.q0)
    assert {name: bool(v) for name, v in rx.solvable.items()} == {
        "O1": False,
        "O2": False,
        "W": True,
    }
    rx = jax.tree.map(lambda x: jnp.stack([x, x]), rx)  # two instants at rest
    ts = np.array([0.0, 1.0])
    fig, (ax_f, ax_t) = plt.subplots(1, 2)
    plotting.plot_pair_reactions(ax_f, ts, rx, model)
    plotting.plot_pair_reactions(ax_t, ts, rx, model, torque=True)
    lines = {line.get_label(): line for line in ax_f.get_lines()}
    assert set(lines) == {
        "O1 on rod (method-dependent)",
        "O2 on rod (method-dependent)",
        "W on rod",
    }
    assert lines["W on rod"].get_linestyle() == "-"
    np.testing.assert_allclose(lines["W on rod"].get_ydata(), m_bob * g, rtol=1e-9)
    for name in ("O1", "O2"):
        line = lines[f"{name} on rod (method-dependent)"]
        assert line.get_linestyle() == "--"
        np.testing.assert_allclose(line.get_ydata(), (m_rod + m_bob) * g / 2, rtol=1e-9)
    for line in ax_t.get_lines():
        assert np.max(np.abs(line.get_ydata())) < 1e-9 * (m_rod + m_bob) * g * L
    plt.close(fig)


def crank_trajectory(num):
    """Closed-form slider-crank configurations over one crank turn (slider_crank.configuration)."""
    thetas = THETA + np.linspace(0.0, 2 * np.pi, num)
    q = np.array(
        [
            np.concatenate([np.asarray(c) for c in slider_crank.configuration(th, R, L)])
            for th in thetas
        ]
    )
    return types.SimpleNamespace(ts=np.linspace(0.0, 1.0, num), q=q)


def test_animate_writes_the_requested_frames(crank, tmp_path, monkeypatch):
    """25 saved states shown in 5 frames: indices round(linspace(0, 24, 5)) = 0, 6, 12, 18, 24;
    the GIF read back with PIL has 5 distinct frames, 8 in wide at 100 dpi less the cropped
    margins: the drawn content reaches within 10 pixels of every edge."""
    np.testing.assert_array_equal(drawing.frame_indices(10, 4), [0, 3, 6, 9])
    np.testing.assert_array_equal(drawing.frame_indices(3, 5), [0, 1, 2])
    traj = crank_trajectory(25)
    out = tmp_path / "crank.gif"
    info = drawing.animate(crank, traj, out, frames=5, trace=("A",))
    np.testing.assert_array_equal(info["frames"], [0, 6, 12, 18, 24])
    with Image.open(out) as gif:
        assert gif.n_frames == 5
        assert 700 <= gif.size[0] <= 800 and gif.size[1] >= 250
        frames = []
        for k in range(gif.n_frames):
            gif.seek(k)
            frames.append(np.asarray(gif.convert("RGB"), dtype=float))
    assert all(np.abs(f1 - f0).sum() > 0 for f0, f1 in zip(frames, frames[1:]))
    ink = np.any(frames[0] < 200, axis=2)  # darker than the white background
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    height, width = ink.shape
    assert rows[0] <= 10 and cols[0] <= 10 and height - 1 - rows[-1] <= 10
    assert width - 1 - cols[-1] <= 10
    with pytest.raises(ValueError, match="expected a .gif or .mp4"):
        drawing.animate(crank, traj, tmp_path / "crank.avi", frames=2)
    monkeypatch.setattr(mpl_animation.FFMpegWriter, "isAvailable", classmethod(lambda c: False))
    with pytest.raises(RuntimeError, match="needs ffmpeg"):
        drawing.animate(crank, traj, tmp_path / "crank.mp4", frames=2)
    with pytest.raises(ValueError, match="frames must be >= 1"):
        drawing.animate(crank, traj, out, frames=0)


def test_gif_frames_equal_a_full_redraw(robot):
    """animate's GIF frames are the axes rendered once with each frame's artists drawn over
    them (`drawing._blit`). Reference: a full redraw of the same figure. They may differ only
    where the mechanism crosses the axes' spines and ticks (drawn under it by a full redraw):
    under 0.5% of the pixels, where the mechanism itself covers more than 3%."""
    model, flags = robot
    q = np.asarray(model.q0)
    scale = drawing.mechanism_size(model, q)
    xlim, ylim = drawing._limits(model, q[None], scale)
    fig, ax = plt.subplots(figsize=(8.0, 6.0), dpi=80)
    try:
        kept = drawing._animation_axes(ax, model, q, scale, xlim, ylim)
        fig.canvas.draw()
        background = fig.canvas.copy_from_bbox(fig.bbox)
        empty = np.array(fig.canvas.buffer_rgba())[..., :3].astype(int)
        with drawing._fixed_data_limits(ax):
            drawing.draw_mechanism(
                model, q, ax, solvable=flags, scale=scale, legend=False, frame=False
            )
        ax.set_title("t = 0.000 s")
        blitted = np.asarray(drawing._blit(fig, ax, background, kept)).astype(int)
        fig.canvas.draw()
        full = np.array(fig.canvas.buffer_rgba())[..., :3].astype(int)
    finally:
        plt.close(fig)
    differs = lambda a, b: np.mean(np.any(np.abs(a - b) > 8, axis=2))  # noqa: E731
    assert differs(empty, full) > 0.03  # the drawing is there to compare
    assert differs(blitted, full) < 0.005
    # the frame grows no data limits and keeps the axes as set up (the fixed tick locations)
    assert ax.get_xlim() == pytest.approx(xlim) and ax.get_ylim() == pytest.approx(ylim)


def run_cli(*args):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(
        [sys.executable, "-m", "jaxmb.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def test_cli_plot_and_animate_end_to_end(tmp_path):
    """`jaxmb plot` writes the overview 15 in wide at 120 dpi (the slider-crank is wide: its
    drawing across the top); `jaxmb animate --frames 4` a GIF with 4 frames; a wrong file type
    is refused before any simulation."""
    fig = tmp_path / "fig.png"
    proc = run_cli("plot", "slider_crank", "--out", str(fig), "--t1", "0.2", "--num-saves", "11")
    assert proc.returncode == 0, proc.stderr
    with Image.open(fig) as image:
        assert image.size[0] == 1800 and 900 <= image.size[1] <= 1500
    anim = tmp_path / "anim.gif"
    proc = run_cli("animate", "slider_crank", "--out", str(anim), "--t1", "0.2", "--frames", "4")
    assert proc.returncode == 0, proc.stderr
    assert "4 frames" in proc.stdout
    with Image.open(anim) as gif:
        assert gif.n_frames == 4
    with pytest.raises(SystemExit, match="expected a .gif or .mp4"):  # in-process: cheap
        cli.main(["animate", "slider_crank", "--out", str(tmp_path / "anim.txt")])
    with pytest.raises(SystemExit, match="expected an image file name"):
        cli.main(["plot", "slider_crank", "--out", str(tmp_path / "fig.npz")])
