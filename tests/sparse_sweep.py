"""Configurations for the agreement of `solvability(method="sparse")` with seed 001's pivoted-QR
test (method "qr", the reference): every model of `jaxmb.models`, at random configurations
and at 1e-2 ... 1e-9 rad on either side of its singular positions. Shared by
tests/test_sparse_solvability.py (a quick sweep) and benchmarks/bench_sparse_solvability.py
(the full one).

A family is (build(size, angle) -> model at that angle, its singular angles): the models of
one family and size share one structure, so every configuration reuses one compiled report.
The families without a singular position (the four-bar, the slider-crank at its dead centres
keeps its rank, the pendulum, the mobile robot) are swept at random configurations only; the
pendulum and the robot have no angle argument: their q0 moved by random numbers (C is
defined at any q; its verdicts are those of a generic matrix of that pattern).
"""

import warnings

import jax.numpy as jnp
import numpy as np

import jaxmb as mb
from jaxmb import models


def _moved(build):
    def at(_size, angle):
        model = build()
        noise = np.random.default_rng(int(abs(angle) * 1e6) % 2**32).standard_normal(model.n)
        return model, model.q0 + 1e-2 * jnp.asarray(noise)

    return at


def _at_q0(build):
    def at(size, angle):
        model = build(size, angle)
        return model, model.q0

    return at


FAMILIES = {
    "n_four_bar": (_at_q0(lambda N, a: models.n_four_bar.build(N, angle0=a)), (0.0, np.pi)),
    "n_four_bar_rigid": (
        _at_q0(lambda N, a: models.n_four_bar.build(N, angle0=a, rigid_coupler=True)),
        (0.0, np.pi),
    ),
    "parallelogram": (_at_q0(lambda _, a: models.parallelogram.build(theta=a)), (0.0, np.pi)),
    "auxetic": (_at_q0(lambda nm, a: models.auxetic.build(*nm, theta=a)), (0.0,)),
    "four_bar": (_at_q0(lambda _, a: models.four_bar.build(theta0=a)), ()),
    "slider_crank": (_at_q0(lambda _, a: models.slider_crank.build(theta0=a)), ()),
    "composed_pendulum": (_moved(models.composed_pendulum.build), ()),
    "mobile_robot": (_moved(models.mobile_robot.build), ()),
}

DISTANCES = tuple(10.0**-k for k in range(2, 10))  # 1e-2 ... 1e-9 rad from a singular angle


def angles(family, distances=DISTANCES, random=3, seed=0):
    """(label, angle): `random` random angles in (0.05, pi / 4 - 0.05) (the auxetic mode's
    range; the others take any), then each singular angle +- each distance (+ only at 0 for
    the auxetic linkage, whose plates overlap at negative theta) and the singular angle
    itself."""
    rng = np.random.default_rng(seed)
    out = [(f"random {a:.4f}", float(a)) for a in rng.uniform(0.05, np.pi / 4 - 0.05, random)]
    for s in FAMILIES[family][1]:
        signs = (1.0,) if family == "auxetic" else (1.0, -1.0)
        out += [(f"{s:.4f} {sg * d:+.0e}", s + sg * d) for d in distances for sg in signs]
        out.append((f"{s:.4f} singular", s))
    return out


QUICK = (
    "n_four_bar",
    "n_four_bar_rigid",
    "parallelogram",
    "auxetic",
    "slider_crank",
    "mobile_robot",
)
"""The families of the quick sweep (tests/test_sparse_solvability.py): every singular position,
and two models without one whose programs that file compiles anyway."""

SIZES = {"n_four_bar": 3, "n_four_bar_rigid": 3, "auxetic": (5, 4)}
"""The quick sweep's sizes (the structures tests/test_sparse_solvability.py compiles anyway);
a family not listed has one size."""


def compare(family, size, angle):
    """(dense report, sparse report) at one configuration; the sparse one's warnings of
    undecided verdicts are expected (they say what the report's `undecided` holds)."""
    model, q = FAMILIES[family][0](size, angle)
    dense = mb.solvability(model, q)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*cannot decide")
        sparse = mb.solvability(model, q, method="sparse")
    return dense, sparse


def agreement(dense, sparse):
    """(decided pairs, of them equal to the dense verdicts, undecided pairs, rank equal,
    rank within rows and columns)."""
    d_ok, s_ok = np.asarray(dense.solvable), np.asarray(sparse.solvable)
    undecided = getattr(sparse, "undecided", None)  # (absent before the field existed)
    undecided = np.zeros(d_ok.shape, bool) if undecided is None else np.asarray(undecided)
    decided = ~undecided
    return (
        int(decided.sum()),
        int((d_ok == s_ok)[decided].sum()),
        int(undecided.sum()),
        int(sparse.rank) == int(dense.rank),
        int(sparse.rank) <= min(sparse.n, sparse.num_rows),
    )
