"""Plain-text rendering of a `SolvabilityReport`."""

import numpy as np


def format_report(report) -> str:
    """A readable table: ranks, redundancy, redundant rows, then one line per pair and group."""
    if np.ndim(report.rank) != 0:
        return f"SolvabilityReport(batch of {np.shape(report.rank)[0]} configurations)"
    d = report.to_dict()
    lines = [
        f"Solvability of reactions (method: {d['method']})",
        f"  rank C = {d['rank']}  (holonomic {d['rank_holonomic']}, "
        f"nonholonomic {d['rank_nonholonomic']})",
        f"  rows m + h = {report.num_rows}, coordinates n = {report.n}",
        f"  redundancy p = {d['redundancy']}, dof = {d['dof']}",
        f"  redundant rows (one removable set, 0-based): {d['redundant_rows']}",
        f"  rank margin = {d['margin']:.3g}"
        + ("   WARNING: near a change of rank, decisions are fragile" if d["warning"] else ""),
        "",
        f"  {'pair':<12}{'reaction':<14}{'|B_X|_F':>12}{'unique comps':>14}",
    ]
    for name, info in d["pairs"].items():
        verdict = "unique" if info["solvable"] else "NOT unique"
        lines.append(
            f"  {name:<12}{verdict:<14}{info['b_norm']:>12.4g}{info['unique_components']:>14d}"
        )
    for name, info in d.get("groups", {}).items():
        verdict = "unique" if info["solvable"] else "NOT unique"
        members = "+".join(info["members"])
        lines.append(f"  group {name!r} ({members}): combined reaction {verdict}, "
                     f"|B|_F = {info['b_norm']:.4g}")
    return "\n".join(lines)
