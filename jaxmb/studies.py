"""Reproductions of the seeds' numerical studies, shared by the examples and `jaxmb demo`.

`mobile_robot_study` is seed 001 sections 4.3-4.4: the robot runs 20 s from q0 (eq. 34) with
v = 0.1 m/s (eq. 39) and the steering profile; its motion and reactions are computed with the
null-space formulation (min-norm multipliers) and with the paper's three eliminations of
redundant equations: rows 5 and 20, 17 and 20, 18 and 20 of C (0-based, as everywhere in
jaxmb; seed 001's 1-based rows 6 and 21, 18 and 21, 19 and 21).
"""

import os
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import plotting
from ._analyses.reactions import NonUniqueReactionWarning, reactions
from ._analyses.simulate import simulate
from ._analyses.solvability import solvability
from ._reaction_methods.eliminate import Eliminate
from ._runtime.results import RESULTS
from .models import mobile_robot

PAPER_VARIANTS = {
    "null space, min-norm": "null_space",
    "eliminate rows 5, 20": Eliminate((5, 20)),
    "eliminate rows 17, 20": Eliminate((17, 20)),
    "eliminate rows 18, 20": Eliminate((18, 20)),
}
"""Seed 001 section 4.4, rows 0-based in the labels as in Eliminate (`SEED_ROWS` gives the
paper's 1-based numbers)."""

SEED_ROWS = "seed 001's 1-based rows 6 and 21, 18 and 21, 19 and 21"
"""The eliminations of PAPER_VARIANTS in the paper's own numbering, quoted once where they
are printed."""

FIG4_PANELS = (("B", "holder_W1"), ("W3", "platform"), ("D", "link_4"), ("W5", "trolley"))
"""Seed 001 Fig. 4: two non-unique reactions (B, W3) and two unique ones (D, W5)."""


def mobile_robot_study(
    t_end: float = 20.0,
    num_saves: int = 401,
    out_dir: str | os.PathLike | None = None,
    resimulate: bool = True,
    log: Callable[[str], Any] = print,
) -> dict[str, Any]:
    """Simulate the robot, compute reactions for every variant and (with `out_dir`) write
    `robot_paths.png` (like Fig. 3) and `robot_reactions.png` (like Fig. 4).

    `resimulate=True` integrates each variant with its own formulation (as the paper did);
    False integrates once and only changes how the multipliers are picked (faster).

    **Returns:** dict with `model`, `trajectories`, `reactions` (per variant), `report`
    (solvability at q0), `timings` and `figures`.
    """
    model = mobile_robot.build(t_end=t_end)
    q0, qd0 = model.q0, mobile_robot.initial_velocity(model)
    ts = jnp.linspace(0.0, t_end, num_saves)
    report = solvability(model, q0, 0.0)
    trajectories, rxs, timings = {}, {}, {}
    log(f"  (eliminated rows 0-based; {SEED_ROWS})")
    for label, formulation in PAPER_VARIANTS.items():
        start = time.perf_counter()
        if resimulate or not trajectories:
            # eager: its compiled program holds no host callback, so the persistent
            # compilation cache can keep it for the next run
            traj = simulate(model, q0, qd0, t_end, ts=ts, formulation=formulation)
        else:
            traj = next(iter(trajectories.values()))
        method = "min_norm" if formulation == "null_space" else formulation
        with warnings.catch_warnings():  # the study shows the variants as what they are
            warnings.simplefilter("ignore", NonUniqueReactionWarning)
            rx = reactions(model, traj, method=method)  # compiled once for all eliminations
        jax.block_until_ready(rx.lam)
        timings[label] = time.perf_counter() - start
        trajectories[label], rxs[label] = traj, rx
        log(
            f"  {label:<22s} {timings[label]:6.2f} s (compile + run), "
            f"{int(traj.num_steps)} steps, {_result_name(traj.result)}"
        )
    figures = []
    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)
        figures.append(_paths_figure(model, trajectories, out_dir))
        figures.append(_reactions_figure(ts, rxs, report, out_dir))
    return dict(
        model=model,
        trajectories=trajectories,
        reactions=rxs,
        report=report,
        timings=timings,
        figures=figures,
    )


def _result_name(result):
    return "ok" if bool(result == RESULTS.successful) else "FAILED"


def _paths_figure(model, trajectories, out_dir):
    traj = next(iter(trajectories.values()))
    paths = {"platform centre": np.asarray(traj.q[:, 0:2])}
    for name in ("W1", "W2", "W3", "W4", "W5"):
        edge = model.pair(name)
        paths[f"contact {name}"] = plotting.point_path(model, traj.q, edge.body.name, edge.s)
    fig, axes = plotting.new_figure(1, 1, size=(8.0, 5.0))
    plotting.plot_paths(axes[0, 0], paths, title="Mobile robot: platform and contact points")
    return plotting.save_figure(fig, os.path.join(out_dir, "robot_paths.png"))


def _reactions_figure(ts, rxs, report, out_dir):
    solvable = report.solvable_dict()
    fig, axes = plotting.new_figure(2, 2)
    for ax, (pair, body) in zip(axes.ravel(), FIG4_PANELS):
        plotting.plot_reaction(ax, ts, rxs, pair, body, solvable[pair])
    return plotting.save_figure(fig, os.path.join(out_dir, "robot_reactions.png"))


def variant_spread(result: dict[str, Any], names: Sequence[str]) -> dict[str, float]:
    """Largest relative difference of each pair's generalized reaction across the variants."""
    rxs = list(result["reactions"].values())
    out = {}
    for name in names:
        ref = np.asarray(rxs[0].generalized[name])
        scale = max(np.max(np.abs(ref)), 1e-300)
        out[name] = max(np.max(np.abs(np.asarray(r.generalized[name]) - ref)) for r in rxs) / scale
    return out
