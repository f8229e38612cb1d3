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
        verdict = "undecided" if info.get("undecided") else verdict
        lines.append(
            f"  {name:<12}{verdict:<14}{info['b_norm']:>12.4g}{info['unique_components']:>14d}"
        )
    for name, info in d.get("groups", {}).items():
        verdict = "unique" if info["solvable"] else "NOT unique"
        members = "+".join(info["members"])
        lines.append(
            f"  group {name!r} ({members}): combined reaction {verdict}, "
            f"|B|_F = {info['b_norm']:.4g}"
        )
    return "\n".join(lines)


def _concrete(*arrays):
    """numpy copies of `arrays`, or None when one has no values (a tracer, printed inside jit
    or vmap; a shape from `jax.eval_shape`)."""
    import jax
    import jax.core

    if any(
        isinstance(a, jax.core.Tracer) or not isinstance(a, (jax.Array, np.ndarray)) for a in arrays
    ):
        return None
    return [np.asarray(a) for a in arrays]


def _states(x, trailing):
    """`x` with its batch axes (all but the `trailing` last) flattened into one leading axis."""
    return np.reshape(x, (-1, *np.shape(x)[np.ndim(x) - trailing :]))


def _cell(values, tiny):
    """One number at a single state, else 'min .. max' over the states; |x| <= tiny shows 0."""
    if values.size == 0:
        return "-"
    values = np.where(np.abs(values) <= tiny, 0.0, values) + 0.0  # no -0
    if values.size == 1 or values.min() == values.max():
        return f"{float(values[0]):.6g}"
    return f"{float(values.min()):.4g} .. {float(values.max()):.4g}"


def _verdict(flags, yes, no):
    """`yes` / `no` when every state agrees, else how many states have `yes`."""
    if flags.all():
        return yes
    return no if not flags.any() else f"{yes} at {int(flags.sum())} of {flags.size}"


def _heading(title, batch):
    if not batch:
        return title
    shape = "" if len(batch) == 1 else f" ({' x '.join(map(str, batch))})"
    return f"{title} at {int(np.prod(batch))} states{shape}, min .. max over them"


def _table(header, rows, text):
    """Rows of columns: the first `text` left-aligned (names), the others right-aligned."""
    widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header))]
    return [
        "  "
        + "  ".join(
            v.ljust(w) if c < text else v.rjust(w) for c, (v, w) in enumerate(zip(r, widths))
        ).rstrip()
        for r in [header, *rows]
    ]


def format_reactions(rx) -> str:
    """The forces and torques each pair applies to its bodies, with the uniqueness flags (one
    state: the values; along a trajectory or a batch: min .. max over the states)."""
    arrays = _concrete(
        rx.generalized_array,
        rx.solvable_array,
        *(() if rx.friction_force is None else (rx.friction_force,)),
    )
    if arrays is None:
        return f"Reactions(method={rx.method!r}, pairs={rx.pair_names}, values not concrete)"
    gen, flags, *friction = arrays
    batch = gen.shape[:-2]
    gen, flags = _states(gen, 2), _states(flags, 1)
    undecided = _concrete(rx.undecided_array) if rx.undecided_array is not None else None
    undecided = None if undecided is None else _states(undecided[0], 1)
    tiny = 1e-12 * float(np.max(np.abs(gen), initial=0.0))
    rows = []
    for k, pair in enumerate(rx.pair_names):
        if rx.pair_bodies:
            bodies = rx.pair_bodies[k]
        else:  # the bodies where the pair's generalized force is not zero
            bodies = tuple(
                b for i, b in enumerate(rx.body_names) if np.any(gen[:, k, 3 * i : 3 * i + 3])
            )
        verdict = _verdict(flags[:, k], "unique", "NOT unique")
        if undecided is not None and undecided[:, k].any():
            verdict = "undecided"
        for first, body in zip([True] + [False] * len(bodies), bodies):
            i = 3 * rx.body_names.index(body)
            rows.append(
                [
                    pair if first else "",
                    verdict if first else "",
                    body,
                    *(_cell(gen[:, k, i + c], tiny) for c in range(3)),
                ]
            )
    lines = [
        _heading(f"Reactions (method: {rx.method})", batch),
        "  what each pair applies to each of its bodies: force (global fx, fy) and "
        "torque about its centre of mass",
        "",
        *_table(["pair", "reaction", "on body", "fx", "fy", "torque"], rows, 3),
    ]
    if friction:
        force = _states(friction[0], 1)
        rows = [[name, _cell(force[:, k], 0.0)] for k, name in enumerate(rx.friction_names)]
        lines += ["", *_table(["friction", "force or torque"], rows, 1)]
    return "\n".join(lines)


def format_friction(fr) -> str:
    """The friction forces, slip rates, dissipated power and normal loads of each element
    (one state: the values; a batch: min .. max over the states)."""
    arrays = _concrete(fr.force, fr.slip_rate, fr.power, fr.normal_load, fr.converged, fr.num_steps)
    if arrays is None:
        return f"FrictionForces(names={fr.names}, values not concrete)"
    force, rate, power, load, converged, steps = arrays
    batch = converged.shape
    columns = [_states(x, 1) for x in (force, rate, power, load)]
    converged = np.reshape(converged, (-1,))
    newton = (
        f"Newton's method {_verdict(converged, 'converged', 'did NOT converge')}, "
        f"{int(np.max(steps, initial=0))} steps" + ("" if not batch else " at most")
    )
    rows = [[name, *(_cell(c[:, k], 0.0) for c in columns)] for k, name in enumerate(fr.names)]
    return "\n".join(
        [
            _heading("Friction forces", batch) + f" ({newton})",
            "  force (a pin's: torque) along the slip coordinate, positive with the slip rate; "
            "the power it dissipates",
            "",
            *_table(["element", "force", "slip rate", "power", "normal load"], rows, 1),
        ]
    )
