"""Solvability maps: `mb.solvability` vmapped over configurations and geometric parameters.

Three families (issue 6, item 3); the hand derivations are in each family's docstring, the maps
are computed by one compiled, batched function per family and checked against them:

1. `four_bar_family`: crank a = L, coupler b = D, ground d = D, rocker c = L (1 + s), swept over
   s and the crank angle theta; s = 0 is an exact parallelogram, singular when all links are
   collinear (theta = 0, pi). Free (dof 1) and crank-driven (dof 0) variants.
2. `slider_crank_family`: the slider-crank through its dead centres, free, crank-driven and
   slider-driven; only the slider drive loses rank there.
3. `n_four_bar_family`: the IFToMM N-four-bar (benchmark A02, `jaxmb.models.n_four_bar`), swept
   over the crank angle; singular with the cranks horizontal (dof 1 -> N + 1).

Plots of rank / redundancy / dof, the solvable pairs and the rank margin against the swept
parameter go into --out (default out/); the singular configurations found on the grids are
printed by name and value. `main(argv)` returns every map as numpy arrays.

    python examples/solvability_maps.py             # full grids
    python examples/solvability_maps.py --quick     # coarse grids (a few seconds after compiling)

Batches are one `jax.jit(jax.vmap(...))` over blocks of a fixed number of points (one
compilation per family); any block size is safe, since jaxmb hands LAPACK one matrix at a time
under vmap (`jaxmb._linalg.dense`).
"""

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxmb as mb  # first: float64 and the XLA CPU flags
from jaxmb import drive
from jaxmb.models import four_bar, n_four_bar, slider_crank

ASSEMBLY_TOL = 1e-9
SIGNATURE = ("rank", "solvable", "b_norm", "unique_count", "margin", "warning")


# ------------------------------------------------------------------------------------------
# batched evaluation
# ------------------------------------------------------------------------------------------
def analyse(model, q):
    """The fields of `mb.solvability(model, q)` kept in the maps (fixed shapes, no empty
    arrays), with C itself for the numpy cross-checks."""
    report = mb.solvability(model, q)
    return {**{k: getattr(report, k) for k in SIGNATURE}, "C": model.C(q)}


class BatchedMap:
    """`one(*xs)` mapped over the leading axis of xs: jit(vmap(one)) on blocks of fixed length
    (inputs padded with their last entry), so every call of one family reuses one compiled
    function."""

    def __init__(self, one, models, block=512):
        del models  # any block size is safe: no batched LAPACK call (jaxmb._linalg.dense)
        self.block = block
        self.fn = jax.jit(jax.vmap(lambda x: one(*x)))

    def __call__(self, *xs):
        xs = tuple(np.asarray(x, np.float64) for x in xs)
        total = len(xs[0])
        pad = (-total) % self.block
        xs = tuple(np.concatenate([x, np.repeat(x[-1:], pad, axis=0)]) for x in xs)
        outs = [
            self.fn(tuple(x[k : k + self.block] for x in xs))
            for k in range(0, total + pad, self.block)
        ]
        out = jax.tree_util.tree_map(lambda *a: np.concatenate([np.asarray(v) for v in a]), *outs)
        return jax.tree_util.tree_map(lambda a: a[:total], out)


def model_map(model, raw, generic_rank):
    """Numpy map of one model: the report fields, redundancy p, dof, and (numpy SVD of C) the
    ratio sigma_r / sigma_max of the singular value that vanishes when the rank drops below
    the generic rank r (the report's margin, from |R_kk| of pivoted QR, follows this ratio /
    1e-9 up to its cap rtol / eps = 4.5e6)."""
    out = {k: np.asarray(v) for k, v in raw.items()}
    out["redundancy"] = model.num_rows - out["rank"]
    out["dof"] = model.n - out["rank"]
    out["pair_names"] = model.pair_names
    out["n"], out["num_rows"], out["generic_rank"] = model.n, model.num_rows, generic_rank
    sv = np.linalg.svd(out["C"], compute_uv=False)
    out["sigma_ratio"] = sv[:, generic_rank - 1] / sv[:, 0]
    return out


def split_map(mp, parts):
    """{part: the map restricted to the points of slice `parts[part]`}."""
    return {
        part: {k: (v[sl] if isinstance(v, np.ndarray) else v) for k, v in mp.items()}
        for part, sl in parts.items()
    }


def unsolvable(mp, k):
    return [nm for nm, ok in zip(mp["pair_names"], mp["solvable"][k]) if not ok]


def singular_entry(family, model_name, mp, k, name, **params):
    return {
        "family": family,
        "model": model_name,
        "name": name,
        **params,
        "rank": int(mp["rank"][k]),
        "redundancy": int(mp["redundancy"][k]),
        "dof": int(mp["dof"][k]),
        "unsolvable": unsolvable(mp, k),
        "margin": float(mp["margin"][k]),
        "warning": bool(mp["warning"][k]),
    }


def angle_grid(per_half_turn):
    """theta = pi k / K, k = -K..K: exact 0 and +-pi."""
    k = np.arange(-per_half_turn, per_half_turn + 1)
    return np.pi * k / per_half_turn


def approach(values, deltas):
    """Points values + d and values - d for every d (log-spaced distances to a singular value)."""
    return np.concatenate([v + sign * deltas for v in values for sign in (1.0, -1.0)])


# ------------------------------------------------------------------------------------------
# 1. four-bar -> parallelogram
# ------------------------------------------------------------------------------------------
FB_L, FB_D = 0.5, 1.0  # dyadic lengths: the closed form is exact at the collinear configurations


def fb_lengths(s):
    """(a, b, c, d) = (L, D, L (1 + s), D): crank, coupler, rocker, ground."""
    return FB_L, FB_D, FB_L * (1.0 + s), FB_D


def fb_configuration(s, theta):
    """q (9,) of the open circuit (`four_bar.configuration`, branch +1) at crank angle theta.
    Where the links cannot close it returns a non-assembled q (its residual shows it)."""
    return jnp.concatenate(four_bar.configuration(theta, *fb_lengths(s)))


def fb_toggle_angles(s):
    """Crank angles of the toggle positions (coupler and rocker collinear) for s < 0, where the
    crank is a rocker: |O4 - A| = b - c (folded) or b + c (extended), A = L (cos, sin)."""
    a, b, c, d = fb_lengths(s)
    fold = np.arccos((a**2 + d**2 - (b - c) ** 2) / (2 * a * d))
    ext = np.arccos((a**2 + d**2 - (b + c) ** 2) / (2 * a * d))
    return {"folded": fold, "extended": ext}


def fb_collinear_configuration(s, theta):
    """q with the coupler and rocker exactly on the line A O4 (B = A + b u, u the unit vector
    from A to O4): assembled at the toggle angles, built without the square root of the closed
    form (which turns a rounding error eps into sqrt(eps))."""
    a, b, c, d = fb_lengths(s)
    A = a * np.array([np.cos(theta), np.sin(theta)])
    O4 = np.array([d, 0.0])
    u = (O4 - A) / np.linalg.norm(O4 - A)
    B = A + b * u
    w = B - O4
    return np.concatenate(
        [
            [A[0] / 2, A[1] / 2, theta],
            (A + B) / 2,
            [np.arctan2(u[1], u[0])],
            (O4 + B) / 2,
            [np.arctan2(w[1], w[0])],
        ]
    )


def fb_models(s):
    a, b, c, d = fb_lengths(s)
    free = four_bar.build(a, b, c, d, theta0=0.0, gravity=None)
    driven = four_bar.build(a, b, c, d, theta0=0.0, omega=1.0, gravity=None)
    return free, driven


FB_MODELS = ("free", "driven")
FB_GENERIC_RANK = {"free": 8, "driven": 9}


def _fb_one(s, q):
    free, driven = fb_models(s)
    return {
        "free": analyse(free, q),
        "driven": analyse(driven, q),
        "residual": jnp.max(jnp.abs(free.phi(q))),
    }


_BATCHED = {}


def batched(family):
    """The compiled batched function of a family (built once per process)."""
    if family not in _BATCHED:
        if family == "four_bar":
            _BATCHED[family] = BatchedMap(_fb_one, fb_models(0.0))
        elif family == "slider_crank":
            _BATCHED[family] = BatchedMap(_sc_one, sc_models())
        else:
            N = int(family.split(":")[1])
            _BATCHED[family] = BatchedMap(lambda angle: _nfb_one(N, angle), nfb_models(N))
    return _BATCHED[family]


def fb_evaluate(s, q):
    """Maps of the free and driven four-bar at the points (s_k, q_k)."""
    raw = batched("four_bar")(s, q)
    out = {
        nm: model_map(m, raw[nm], FB_GENERIC_RANK[nm]) for nm, m in zip(FB_MODELS, fb_models(0.0))
    }
    out["assembled"] = raw["residual"] < ASSEMBLY_TOL
    return out


FB_NAMES = {
    0.0: "parallelogram, all links collinear, crank towards O4",
    np.pi: "parallelogram, all links collinear, crank away from O4",
    -np.pi: "parallelogram, all links collinear, crank away from O4",
}


def four_bar_family(quick=False):
    """Four-bar with a = L, b = d = D, c = L (1 + s) (L = 0.5, D = 1), swept over s and theta.

    Hand derivation. n = 9; four revolutes: 8 rows (9 with the crank motor). The closure
    velocity equations in the link angles have the 2 x 3 Jacobian [a e(th2), b e(th3), -c e(th4)]
    (e = unit normal of each link), of rank 2 unless all three links are parallel.
    - s != 0 (a plain four-bar; crank-rocker for s > 0): never all collinear, so free: rank 8,
      p = 0, dof 1; driven: rank 9, p = 0, dof 0; every reaction unique. For s < 0 the rocker c
      is the shortest link and the crank only rocks: it cannot reach theta = 0 or pi, and at its
      limits (toggles, coupler and rocker collinear, `fb_toggle_angles`) the driven linkage is
      singular: rank 8 of 9, p = 1, dof 1; the self-stress is an axial force in coupler and
      rocker that loads the crank off its axis, so the motor torque and all four revolutes are
      NOT unique. The free linkage stays regular there (rank 8).
    - s = 0 (parallelogram): the same as above except at theta = 0 and pi, where all links lie
      on the x axis: free rank 7, p = 1, dof 2 (the parallelogram / anti-parallelogram
      bifurcation); driven rank 8, p = 1, dof 1. The self-stress is one axial force t in every
      link, so O2, A, B, O4 are NOT unique (each keeps one unique component, the force across
      the line); it needs no motor torque, so the motor's reaction stays unique. The circuit
      used (`four_bar.configuration`, branch +1, the limit of the s > 0 crank-rocker) is the
      parallelogram for 0 < theta < pi and the anti-parallelogram for -pi < theta < 0: the two
      assembly modes meet at theta = 0, pi, both regular elsewhere.
    Approaching the parallelogram (s -> 0+ at theta = 0 or pi) the coupler-rocker triangle
    flattens with height ~ sqrt(s): the smallest singular value and the margin fall like
    sqrt(s) (measured: `warning` only for s below about 1e-12; at s = 1e-16, 1 + s == 1 and
    the rank has dropped).
    """
    per_half, ns = (36, 4) if quick else (180, 20)
    s_grid = 0.2 * np.arange(-ns, ns + 1) / ns
    theta = angle_grid(per_half)
    S, TH = np.meshgrid(s_grid, theta, indexing="ij")
    s_pts, th_pts = S.ravel(), TH.ravel()
    # approach to the parallelogram at theta = 0 and pi, and exact toggles for s < 0
    s_app = np.logspace(-16, -1, 16 if quick else 31)
    app_s = np.concatenate([s_app, s_app])
    app_th = np.concatenate([np.zeros_like(s_app), np.full_like(s_app, np.pi)])
    s_tog = s_grid[(s_grid < 0) & (s_grid > -0.2 + 1e-12)][:: 2 if quick else 5]
    tog = [
        (s, kind, sign * ang)
        for s in s_tog
        for kind, ang in fb_toggle_angles(s).items()
        for sign in (1.0, -1.0)
    ]
    conf = jax.jit(jax.vmap(fb_configuration))
    q = np.concatenate(
        [
            np.asarray(conf(s_pts, th_pts)),
            np.asarray(conf(app_s, app_th)),
            np.stack([fb_collinear_configuration(s, th) for s, _, th in tog]),
        ]
    )
    s_all = np.concatenate([s_pts, app_s, [t[0] for t in tog]])
    res = fb_evaluate(s_all, q)
    ng, na = len(s_pts), len(app_s)
    parts = {"grid": slice(0, ng), "approach": slice(ng, ng + na), "toggle": slice(ng + na, None)}
    out = {
        "s": s_grid,
        "theta": theta,
        "approach_s": s_app,
        "toggles": tog,
        "q": q,
        "grid_s": s_pts,
        "grid_theta": th_pts,
    }
    for part, sl in parts.items():
        out[part] = {"assembled": res["assembled"][sl]}
    for model in FB_MODELS:
        for part, mp in split_map(res[model], parts).items():
            out[part][model] = mp
    shape = S.shape
    for model in FB_MODELS:
        for k in ("rank", "redundancy", "dof", "margin", "warning", "sigma_ratio"):
            out["grid"][model][k + "_map"] = out["grid"][model][k].reshape(shape)
    out["grid"]["assembled_map"] = out["grid"]["assembled"].reshape(shape)
    generic = FB_GENERIC_RANK
    singular = []
    for model in FB_MODELS:
        mp = out["grid"][model]
        for k in np.flatnonzero(out["grid"]["assembled"] & (mp["rank"] < generic[model])):
            name = FB_NAMES.get(th_pts[k], "unnamed") if s_pts[k] == 0.0 else "unnamed"
            singular.append(
                singular_entry(
                    "four_bar", model, mp, k, name, s=float(s_pts[k]), theta=float(th_pts[k])
                )
            )
        mp = out["toggle"][model]
        for k, (s, kind, th) in enumerate(tog):
            if mp["rank"][k] < generic[model]:
                singular.append(
                    singular_entry(
                        "four_bar", model, mp, k, f"toggle ({kind})", s=float(s), theta=float(th)
                    )
                )
    out["singular"] = singular
    fit = (s_app >= 1e-12) & (s_app <= 1e-5)
    out["approach_slope"] = {
        (model, th): float(
            np.polyfit(
                np.log10(s_app[fit]), np.log10(out["approach"][model]["margin"][part][fit]), 1
            )[0]
        )
        for model in FB_MODELS
        for th, part in ((0.0, slice(0, len(s_app))), (np.pi, slice(len(s_app), None)))
    }
    return out


# ------------------------------------------------------------------------------------------
# 2. slider-crank through dead centre
# ------------------------------------------------------------------------------------------
SC_R, SC_L = 0.1, 0.3


def sc_models():
    """(free, crank-driven, slider-driven) slider-cranks of `models/slider_crank.py`; the
    slider drive is an AbsoluteDriver "push" on the slider's x."""
    free = slider_crank.build(SC_R, SC_L, gravity=None)
    crank = slider_crank.build(SC_R, SC_L, gravity=None, omega=1.0)
    m = mb.Mechanism()
    qc, qr, qs = slider_crank.configuration(jnp.asarray(0.3), SC_R, SC_L)
    c = m.body("crank", mass=1.0, inertia=SC_R**2 / 12, q=qc)
    r = m.body("rod", mass=2.0, inertia=2.0 * SC_L**2 / 12, q=qr)
    sl = m.body("slider", mass=0.5, inertia=1e-3, q=qs)
    m.add(mb.Revolute("O", m.ground, c, s_i=(0.0, 0.0), s_j=(-SC_R / 2, 0.0)))
    m.add(mb.Revolute("A", c, r, s_i=(SC_R / 2, 0.0), s_j=(-SC_L / 2, 0.0)))
    m.add(mb.Revolute("B", r, sl, s_i=(SC_L / 2, 0.0), s_j=(0.0, 0.0)))
    m.add(mb.Translational("P", sl, m.ground, s_i=(0.0, 0.0), s_j=(0.0, 0.0), v=(0.0, 1.0)))
    m.add(mb.AbsoluteDriver("push", sl, 0, drive.Constant(0.35)))
    return free, crank, m.build()


SC_MODELS = ("free", "crank_driven", "slider_driven")


def sc_configuration(theta):
    return jnp.concatenate([jnp.stack(p) for p in slider_crank.configuration(theta, SC_R, SC_L)])


SC_GENERIC_RANK = {"free": 8, "crank_driven": 9, "slider_driven": 9}


def _sc_one(theta):
    q = sc_configuration(theta)
    return {nm: analyse(m, q) for nm, m in zip(SC_MODELS, sc_models())}


SC_NAMES = {
    0.0: "dead centre, extended (crank and rod aligned, slider outermost)",
    np.pi: "dead centre, folded (rod over the crank, slider innermost)",
    -np.pi: "dead centre, folded (rod over the crank, slider innermost)",
}


def slider_crank_family(quick=False):
    """Slider-crank (r = 0.1, l = 0.3) swept through both dead centres.

    Hand derivation (n = 9; O, A, B: 2 rows each, P: 2, driver 1). Crank angle th, rod angle
    b, slider x: closure r cos th + l cos b = x, r sin th + l sin b = 0, Jacobian in (th, b, x)
    [[-r sin th, -l sin b, -1], [r cos th, l cos b, 0]].
    - free: rank 2 everywhere (the x column), so rank C = 8, p = 0, dof 1, all unique, dead
      centres included (crank and rod can move; the slider is instantaneously at rest).
    - crank driven: the (b, x) minor has det = l cos b, never 0 for l > r: rank 9 everywhere,
      p = 0, dof 0: the dead centre is no singularity for a crank drive.
    - slider driven ("push" fixes x): the (th, b) minor has det = r l sin(b - th), zero at both
      dead centres (th = 0 and pi, crank and rod collinear): rank 8 of 9, p = 1, dof 1 (the push
      cannot move the crank). Self-stress: an axial force through crank and rod, balanced at the
      slider by the push and at the ground by O; the translational pair P carries no part of it
      (its reactions are a normal force and a moment). So O, A, B and push are NOT unique (each
      revolute keeps the transverse force, the push none), P is unique.
    The smallest singular value of the slider-driven C falls like d = |th - th_dc| (measured:
    the rank drops for d below about 3e-8 rad, `warning` is set for about 3e-10 < d < 3e-6).
    """
    theta = angle_grid(36 if quick else 180)
    deltas = np.logspace(-15, -1, 15 if quick else 57)
    th_app = approach([0.0, np.pi], deltas)
    res = batched("slider_crank")(np.concatenate([theta, th_app]))
    out = {"theta": theta, "deltas": deltas, "approach_theta": th_app}
    parts = {"grid": slice(0, len(theta)), "approach": slice(len(theta), None)}
    generic = SC_GENERIC_RANK
    for nm, m in zip(SC_MODELS, sc_models()):
        maps = split_map(model_map(m, res[nm], generic[nm]), parts)
        out[nm], out[nm + "_approach"] = maps["grid"], maps["approach"]
    singular = []
    for nm in SC_MODELS:
        mp = out[nm]
        for k in np.flatnonzero(mp["rank"] < generic[nm]):
            singular.append(
                singular_entry(
                    "slider_crank",
                    nm,
                    mp,
                    k,
                    SC_NAMES.get(theta[k], "unnamed"),
                    theta=float(theta[k]),
                )
            )
    out["singular"] = singular
    out["bands"] = {
        nm: approach_bands(deltas, out[nm + "_approach"], generic[nm]) for nm in SC_MODELS
    }
    return out


def _band(band):
    dropped = (
        f"rank dropped up to {band['rank_dropped_up_to']:.1e} rad"
        if band["rank_dropped_up_to"]
        else "rank never dropped"
    )
    if band["warning_from"] is None:
        return dropped + ", no warning"
    return dropped + f", warning for {band['warning_from']:.1e} .. {band['warning_to']:.1e} rad"


def approach_bands(deltas, mp, generic_rank):
    """From the approach sweep (d then -d for each singular value): the largest distance at
    which the rank is dropped, and the range of distances with `warning` set."""
    k = len(deltas)
    dropped = (mp["rank"] < generic_rank).reshape(-1, k)
    warn = mp["warning"].reshape(-1, k)
    d = np.tile(deltas, (dropped.shape[0], 1))
    return {
        "rank_dropped_up_to": float(d[dropped].max()) if dropped.any() else 0.0,
        "warning_from": float(d[warn].min()) if warn.any() else None,
        "warning_to": float(d[warn].max()) if warn.any() else None,
    }


# ------------------------------------------------------------------------------------------
# 3. IFToMM N-four-bar
# ------------------------------------------------------------------------------------------
NFB_MODELS = ("split", "rigid")


def nfb_models(N):
    """The benchmark (N couplers) and the rigid-coupler variant, both without gravity."""
    return (
        n_four_bar.build(N, gravity=None),
        n_four_bar.build(N, gravity=None, rigid_coupler=True),
    )


def _nfb_one(N, angle):
    return {
        nm: analyse(m, n_four_bar.configuration(angle, N, rigid_coupler=nm == "rigid"))
        for nm, m in zip(NFB_MODELS, nfb_models(N))
    }


def n_four_bar_family(N=3, quick=False):
    """The N-four-bar (all bars 1 m) swept over the crank angle (from +x).

    Hand derivation (module docstring of `jaxmb.models.n_four_bar`): with N couplers, n = 6N + 3,
    6N + 2 rows; general position rank 6N + 2, p = 0, dof 1, every reaction unique; cranks
    horizontal (angle 0 or pi): rank 5N + 2, p = N, dof N + 1, no revolute reaction unique.
    With one rigid coupler: p = N - 1 (dof 1) in general, p = N (dof 2) when horizontal.
    Near the horizontal the smallest kept singular value falls like the angle (measured, N = 3:
    rank dropped below about 3e-9 rad, `warning` for about 3e-11 .. 3e-7 rad).
    """
    angle = angle_grid(36 if quick else 180)
    deltas = np.logspace(-15, -1, 15 if quick else 57)
    app = approach([0.0, np.pi], deltas)
    res = batched(f"n_four_bar:{N}")(np.concatenate([angle, app]))
    out = {"N": N, "angle": angle, "deltas": deltas, "approach_angle": app}
    parts = {"grid": slice(0, len(angle)), "approach": slice(len(angle), None)}
    names = {abs(v): k for k, v in n_four_bar.SINGULAR_ANGLES.items()}
    singular = []
    for nm, m in zip(NFB_MODELS, nfb_models(N)):
        generic = n_four_bar.counts(N, rigid_coupler=nm == "rigid")[2]
        maps = split_map(model_map(m, res[nm], generic), parts)
        out[nm], out[nm + "_approach"] = maps["grid"], maps["approach"]
        for k in np.flatnonzero(out[nm]["rank"] < generic):
            singular.append(
                singular_entry(
                    "n_four_bar",
                    nm,
                    out[nm],
                    k,
                    names.get(abs(angle[k]), "unnamed"),
                    angle=float(angle[k]),
                )
            )
    out["singular"] = singular
    out["bands"] = {
        nm: approach_bands(deltas, out[nm + "_approach"], out[nm]["generic_rank"])
        for nm in NFB_MODELS
    }
    return out


# ------------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------------
UNIQUE_COLORS = ("#b2182b", "#d9f0d3")


def _raster(ax, x, flags, names, title, xlabel):
    """Pairs (rows) against the swept parameter: unique (green) or NOT unique (red)."""
    from matplotlib.colors import ListedColormap

    dx = (x[1] - x[0]) / 2
    ax.imshow(
        np.asarray(flags, float).T,
        aspect="auto",
        cmap=ListedColormap(UNIQUE_COLORS),
        vmin=0,
        vmax=1,
        interpolation="nearest",
        extent=(x[0] - dx, x[-1] + dx, len(names) - 0.5, -0.5),
    )
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize="x-small")
    ax.set_title(title + "  (green: unique, red: NOT unique)", fontsize="small")
    ax.set_xlabel(xlabel)


def _margins(ax, x, maps, xlabel, title):
    """Margin (capped at 4.5e6) and sigma_r / (1e-9 sigma_max) (uncapped) against x."""
    for (label, mp), color in zip(maps.items(), ("C0", "C1", "C2")):
        ax.semilogy(
            x, np.clip(mp["margin"], 1e-3, 1e12), "-", color=color, label=f"{label}: margin"
        )
        ax.semilogy(
            x,
            np.clip(mp["sigma_ratio"] / 1e-9, 1e-3, 1e12),
            ":",
            color=color,
            label=f"{label}: sigma_r / (1e-9 sigma_max)",
        )
    _warning_line(ax)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize="small")
    ax.legend(fontsize="x-small")


def _approach(ax, deltas, maps, labels, xlabel, title):
    """Margin against the distance to a singular value (loglog); rank-dropped points marked x."""
    k = len(deltas)
    for (name, mp), ls in zip(maps.items(), ("-", "--", ":")):
        for j, label in enumerate(labels):
            part = slice(j * k, (j + 1) * k)
            (line,) = ax.loglog(
                deltas, np.clip(mp["margin"][part], 1e-3, 1e12), ls, label=f"{name}, {label}"
            )
            drop = mp["rank"][part] < mp["generic_rank"]
            ax.loglog(
                deltas[drop],
                np.clip(mp["margin"][part][drop], 1e-3, 1e12),
                "x",
                color=line.get_color(),
            )
    _warning_line(ax)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("rank margin")
    ax.set_title(title + " (x: rank dropped)", fontsize="small")
    ax.legend(fontsize="x-small", ncol=2)


def _warning_line(ax):
    ax.axhline(1e2, color="k", ls=":", lw=1)
    ax.text(0.01, 1.3e2, "warning below", transform=ax.get_yaxis_transform(), fontsize="x-small")


def _counts(ax, x, maps, xlabel, title):
    for (label, mp), ls in zip(maps.items(), ("-", "--", ":")):
        ax.plot(x, mp["redundancy"], ls, label=f"p ({label})")
        ax.plot(x, mp["dof"], ls, label=f"dof ({label})")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize="small")
    ax.legend(fontsize="x-small")


def plot_four_bar(fb, path):
    from jaxmb.plotting import new_figure, save_figure

    fig, ax = new_figure(2, 3, size=(5.2, 3.9))
    deg = np.degrees(fb["theta"])
    ext = (deg[0], deg[-1], fb["s"][0], fb["s"][-1])
    g = fb["grid"]
    mask = ~g["assembled_map"]
    images = [
        (g["free"]["rank_map"], "free four-bar: rank C", "rank C", "viridis"),
        (g["driven"]["rank_map"], "crank-driven: rank C", "rank C", "viridis"),
        (
            np.log10(np.clip(g["driven"]["sigma_ratio_map"], 1e-300, None)),
            "crank-driven: log10 sigma_min / sigma_max",
            "log10 ratio",
            "magma",
        ),
    ]
    for a, (img, title, label, cmap) in zip(ax[0], images):
        im = a.imshow(
            np.ma.masked_array(img, mask),
            origin="lower",
            aspect="auto",
            extent=ext,
            interpolation="nearest",
            cmap=cmap,
        )
        fig.colorbar(im, ax=a, label=label)
        a.set_title(title + " (white: does not assemble)", fontsize="small")
        a.set_xlabel("crank angle theta (deg)")
        a.set_ylabel("s  (rocker c = L (1 + s))")
    for e in fb["singular"]:
        a = ax[0, 0] if e["model"] == "free" else ax[0, 1]
        a.plot(np.degrees(e["theta"]), e["s"], "rx" if "toggle" not in e["name"] else "r+", ms=7)
    k0 = int(np.flatnonzero(fb["s"] == 0.0)[0])
    row = slice(k0 * len(deg), (k0 + 1) * len(deg))
    s0 = {
        nm: {
            k: v[row]
            for k, v in g[nm].items()
            if isinstance(v, np.ndarray) and v.shape[:1] == g[nm]["rank"].shape
        }
        for nm in FB_MODELS
    }
    _counts(
        ax[1, 0], deg, s0, "crank angle theta (deg)", "parallelogram (s = 0): redundancy p and dof"
    )
    names = [f"{nm} ({model})" for model in FB_MODELS for nm in g[model]["pair_names"]]
    flags = np.concatenate([s0[model]["solvable"] for model in FB_MODELS], axis=1)
    _raster(ax[1, 1], deg, flags, names, "s = 0", "crank angle theta (deg)")
    _approach(
        ax[1, 2],
        fb["approach_s"],
        {m: fb["approach"][m] for m in FB_MODELS},
        ("theta = 0", "theta = 180 deg"),
        "s (distance from the parallelogram)",
        "approaching the parallelogram",
    )
    return save_figure(fig, path)


def plot_slider_crank(sc, path):
    from jaxmb.plotting import new_figure, save_figure

    fig, ax = new_figure(2, 2, size=(6.0, 4.0))
    deg = np.degrees(sc["theta"])
    maps = {nm: sc[nm] for nm in SC_MODELS}
    _counts(ax[0, 0], deg, maps, "crank angle (deg)", "slider-crank: redundancy p and dof")
    names = [f"{nm} ({model})" for model in SC_MODELS[1:] for nm in sc[model]["pair_names"]]
    flags = np.concatenate([sc[model]["solvable"] for model in SC_MODELS[1:]], axis=1)
    _raster(ax[0, 1], deg, flags, names, "driven slider-cranks", "crank angle (deg)")
    _margins(ax[1, 0], deg, maps, "crank angle (deg)", "rank margin")
    _approach(
        ax[1, 1],
        sc["deltas"],
        {nm: sc[nm + "_approach"] for nm in SC_MODELS[1:]},
        ("0+", "0-", "180+", "180-"),
        "|theta - dead centre| (rad)",
        "near the dead centres",
    )
    return save_figure(fig, path)


def plot_n_four_bar(nfb, path):
    from jaxmb.plotting import new_figure, save_figure

    fig, ax = new_figure(2, 2, size=(6.0, 4.0))
    deg = np.degrees(nfb["angle"])
    maps = {f"{nm} coupler": nfb[nm] for nm in NFB_MODELS}
    _counts(
        ax[0, 0],
        deg,
        maps,
        "crank angle from +x (deg)",
        f"N-four-bar, N = {nfb['N']}: redundancy p and dof",
    )
    names = [f"{nm} ({model})" for model in NFB_MODELS for nm in nfb[model]["pair_names"]]
    flags = np.concatenate([nfb[model]["solvable"] for model in NFB_MODELS], axis=1)
    _raster(ax[0, 1], deg, flags, names, "benchmark (split) and rigid coupler", "crank angle (deg)")
    _margins(ax[1, 0], deg, maps, "crank angle (deg)", "rank margin")
    _approach(
        ax[1, 1],
        nfb["deltas"],
        {nm: nfb[nm + "_approach"] for nm in NFB_MODELS},
        ("0+", "0-", "180+", "180-"),
        "|angle - horizontal| (rad)",
        "near the horizontal positions",
    )
    return save_figure(fig, path)


# ------------------------------------------------------------------------------------------
# report
# ------------------------------------------------------------------------------------------
def describe(entry):
    where = ", ".join(
        f"{k} = {entry[k]:.6g}"
        + (f" ({np.degrees(entry[k]):.4g} deg)" if k in ("theta", "angle") else "")
        for k in ("s", "theta", "angle")
        if k in entry
    )
    bad = ", ".join(entry["unsolvable"]) or "none"
    return (
        f"  [{entry['model']}] {entry['name']}: {where}; rank {entry['rank']}, "
        f"p = {entry['redundancy']}, dof = {entry['dof']}; NOT unique: {bad}"
    )


def print_singular(title, entries, limit=12):
    print(f"{title}: {len(entries)} singular configuration(s) (rank below the generic rank)")
    seen = {}
    for e in entries:
        key = (e["model"], e["name"], e["rank"])
        seen.setdefault(key, []).append(e)
    for (model, name, _), group in seen.items():
        for e in group[:limit]:
            print(describe(e))
        if len(group) > limit:
            print(f"  ... and {len(group) - limit} more '{name}' ({model})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="coarse grids")
    parser.add_argument("--out", default="out", help="folder for the figures (default out/)")
    parser.add_argument("--N", type=int, default=3, help="windows of the N-four-bar")
    args = parser.parse_args(argv)
    mb.log_progress()  # say on stderr what compiles, and for how long
    os.makedirs(args.out, exist_ok=True)
    timings = {}
    start = time.perf_counter()
    print("four-bar -> parallelogram: solvability over a grid ...", flush=True)
    fb = four_bar_family(args.quick)
    timings["four_bar"] = time.perf_counter() - start
    start = time.perf_counter()
    print("slider-crank: solvability over crank angles ...", flush=True)
    sc = slider_crank_family(args.quick)
    timings["slider_crank"] = time.perf_counter() - start
    start = time.perf_counter()
    print(f"N-four-bar (N = {args.N}): solvability over coupler angles ...", flush=True)
    nfb = n_four_bar_family(args.N, args.quick)
    timings["n_four_bar"] = time.perf_counter() - start
    start = time.perf_counter()
    print("drawing the maps ...", flush=True)
    figures = [
        plot_four_bar(fb, os.path.join(args.out, "solvability_four_bar.png")),
        plot_slider_crank(sc, os.path.join(args.out, "solvability_slider_crank.png")),
        plot_n_four_bar(nfb, os.path.join(args.out, "solvability_n_four_bar.png")),
    ]
    timings["figures"] = time.perf_counter() - start

    npts = fb["grid"]["assembled"].size
    print(
        f"four-bar -> parallelogram: {len(fb['s'])} x {len(fb['theta'])} grid "
        f"({int(fb['grid']['assembled'].sum())} of {npts} assemble), {timings['four_bar']:.1f} s"
    )
    print_singular("  four-bar family", fb["singular"])
    slopes = ", ".join(
        f"{m} at {np.degrees(t):.0f} deg: {v:.3f}" for (m, t), v in fb["approach_slope"].items()
    )
    print(f"  towards the parallelogram: d log(margin) / d log(s) = {slopes} (hand: 1/2)")
    print(f"slider-crank: {len(sc['theta'])} crank angles, {timings['slider_crank']:.1f} s")
    print_singular("  slider-crank", sc["singular"])
    for nm, band in sc["bands"].items():
        print(f"  {nm}, |theta - dead centre| from 1e-15 to 0.1: {_band(band)}")
    print(
        f"N-four-bar (N = {nfb['N']}): {len(nfb['angle'])} crank angles, "
        f"{timings['n_four_bar']:.1f} s"
    )
    print_singular("  N-four-bar", nfb["singular"])
    for nm, band in nfb["bands"].items():
        print(f"  {nm} coupler, |angle - horizontal| from 1e-15 to 0.1: {_band(band)}")
    for path in figures:
        print(f"wrote {path}")
    return {
        "four_bar": fb,
        "slider_crank": sc,
        "n_four_bar": nfb,
        "figures": figures,
        "singular": fb["singular"] + sc["singular"] + nfb["singular"],
        "timings": timings,
    }


if __name__ == "__main__":
    main()
