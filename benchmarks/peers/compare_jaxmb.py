"""jaxmb against the peer engines, from the peers' JSON files (jaxmb venv): motion error and time.

    PYTHONPATH=. python benchmarks/peers/compare_jaxmb.py benchmarks/results/peer_exudyn.json
    PYTHONPATH=. python benchmarks/peers/compare_jaxmb.py benchmarks/results/peer_*.json

For every trajectory a peer recorded (Exudyn and MJX `cases`, MJX `batches`), jaxmb does the same
work in this process: the model rebuilt from the recorded `params` (the `build()` keyword
arguments), the recorded initial state, the recorded sample times; `jax.jit(mb.simulate)` at
its default tolerances (rtol 1e-8, atol 1e-10; a batch: `jax.jit(jax.vmap(mb.simulate))`
over all recorded initial states, also at rtol 1e-5, atol 1e-7), compile timed separately
(`lower().compile()`), then one warm-up call, run time the median of `repeats` calls after it.

References (independent of jaxmb's constrained formulation): both models are one-degree-of-
freedom mechanisms whose configuration is known in closed form along the motion, q = Q(theta)
(`slider_crank.configuration`; `n_four_bar.configuration`: the motion stays on the
parallelogram branch, also through the horizontal singular position). Lagrange's equation in
theta, with J = dQ/dtheta and H = d2Q/dtheta2 from automatic differentiation of Q:

    (J^T M J) theta'' = J^T (F - M H theta'^2),

integrated by scipy's DOP853 (rtol = atol = 1e-12). Before anything runs, the recorded initial
state is checked against it: q0 = Q(theta0), qd0 = J(theta0) omega0 (1e-12), and for single cases
q0 against jaxmb's `model.q0`.

Reported per trajectory: the largest position error (m) and angle error (rad) over samples and
bodies of the peer against jaxmb and against the reference, and of jaxmb against the reference;
for a batch, the members saved whole and every member's final state (peer against jaxmb).
`compare(result)` returns the rows that `benchmarks/bench_peers.py` prints.
"""

import argparse
import json
import os
import statistics
import sys
import time

try:
    import jaxmb as mb  # first: sets float64 and the XLA CPU flags
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    import jaxmb as mb
import jax
import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp

from jaxmb.models import n_four_bar, slider_crank

REF_TOL = 1e-12  # DOP853 rtol and atol of the one-dof reference
STATE_TOL = 1e-12  # recorded initial state against the closed form
REPEATS = 5
TOLERANCES = ((1e-8, 1e-10),)  # jaxmb (rtol, atol) of single trajectories: simulate's defaults
BATCH_TOLERANCES = ((1e-8, 1e-10), (1e-5, 1e-7), (1e-3, 1e-5))
"""Batches: the defaults and two looser pairs (throughput at the accuracy a peer reaches)."""


def build(case):
    """The jaxmb model of a peer case, from its recorded build() arguments."""
    p = dict(case["params"])
    p["gravity"] = tuple(p["gravity"]) if p.get("gravity") is not None else None
    if case["model"] == "slider_crank":
        return slider_crank.build(**p)
    if case["model"] == "n_four_bar":
        return n_four_bar.build(**p)
    raise ValueError(
        f"{case['name']}: unknown model {case['model']!r} (slider_crank or n_four_bar)"
    )


def closed_form(case):
    """Q(theta) -> flat q of the case's mechanism (traceable in theta)."""
    p = case["params"]
    if case["model"] == "slider_crank":
        return lambda th: jnp.concatenate(
            [jnp.stack(b) for b in slider_crank.configuration(th, p["r"], p["l"])]
        )
    return lambda th: n_four_bar.configuration(th, p["N"], p["length"], p["rigid_coupler"])


def one_dof_rhs(model, Q):
    """(theta, omega) -> (omega, theta'') of Lagrange's equation on q = Q(theta) (see top)."""
    M = model.mass_diagonal()
    J, H = jax.jacfwd(Q), jax.jacfwd(jax.jacfwd(Q))

    def rhs(y):
        th, w = y[0], y[1]
        q, j, h = Q(th), J(th), H(th)
        F = model.forces(q, j * w, 0.0)
        return jnp.stack([w, j @ (F - M * h * w**2) / (j @ (M * j))])

    return jax.jit(rhs), jax.jit(Q), jax.jit(J)


def reference(case, rhs, Q, ts, theta0, omega0):
    """(T, n) reference trajectory at `ts` (scipy DOP853 on the one-dof equation)."""
    sol = solve_ivp(
        lambda t, y: np.asarray(rhs(jnp.asarray(y))),
        (ts[0], ts[-1]),
        [theta0, omega0],
        method="DOP853",
        t_eval=ts,
        rtol=REF_TOL,
        atol=REF_TOL,
    )
    if not sol.success:
        raise RuntimeError(f"{case['name']}: the one-dof reference failed: {sol.message}")
    return np.stack([np.asarray(Q(th)) for th in sol.y[0]])


def start(case):
    """(theta0, omega0) lists of a case or a batch (MJX batches record one per member)."""
    if case["model"] == "slider_crank":
        theta, omega = case.get("theta0", case["params"]["theta0"]), case["omega0"]
    else:
        theta, omega = case["params"]["angle0"], case["rate0"]
    return np.atleast_1d(theta), np.atleast_1d(omega)


def check_state(case, Q, J, q0, qd0, theta0, omega0, label):
    """The recorded initial state is the closed-form one (ValueError naming the case otherwise)."""
    dq = np.max(np.abs(np.asarray(Q(theta0)) - q0))
    dqd = np.max(np.abs(np.asarray(J(theta0)) * omega0 - qd0))
    if dq > STATE_TOL or dqd > STATE_TOL * (1.0 + abs(omega0)):
        raise ValueError(
            f"{case['name']}{label}: recorded initial state differs from the closed form "
            f"Q(theta0) (|dq| = {dq:.1e}, |dqd| = {dqd:.1e}): not the jaxmb model's start"
        )


def errors(q, q_ref):
    """{"pos": max |dx|, |dy| (m), "ang": max |dphi| (rad)} over samples and bodies (NaN if any
    is not finite)."""
    d = np.abs(np.asarray(q) - np.asarray(q_ref)).reshape(*np.shape(q_ref)[:-1], -1, 3)
    if not np.all(np.isfinite(d)):
        return dict(pos=float("nan"), ang=float("nan"))
    return dict(pos=float(d[..., :2].max()), ang=float(d[..., 2].max()))


FORMULATION = "null_space"
"""simulate's formulation for every jaxmb run (bench_peers.py --formulation)."""


def _sim(model, q0, qd0, ts, rtol, atol):
    return mb.simulate(
        model, q0, qd0, ts[-1], ts=ts, t0=ts[0], rtol=rtol, atol=atol, formulation=FORMULATION
    )


_single = jax.jit(_sim)  # tolerances traced: one compile per model structure
_batch = jax.jit(jax.vmap(_sim, in_axes=(None, 0, 0, None, None, None)))


_COMPILED = {}


def _compiled(fn, args):
    """(executable, compile s, shared): AOT compile of jitted `fn` for these argument structures
    and shapes, once per process (the tolerances are traced, so every pair shares it)."""
    leaves, treedef = jax.tree.flatten(args)
    key = (id(fn), treedef, tuple((np.shape(x), np.result_type(x).str) for x in leaves))
    shared = key in _COMPILED
    if not shared:
        t = time.perf_counter()
        _COMPILED[key] = (fn.lower(*args).compile(), time.perf_counter() - t)
    return *_COMPILED[key], shared


def timed(fn, args, repeats):
    """(compile s, compiled earlier in this process, first (warm-up) run s, median run s, all
    timed run times, output)."""
    compiled, compile_s, shared = _compiled(fn, args)
    t = time.perf_counter()
    jax.block_until_ready(compiled(*args))  # warm-up: XLA:CPU's first run can be far slower
    first_s = time.perf_counter() - t
    walls, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = jax.block_until_ready(compiled(*args))
        walls.append(time.perf_counter() - t)
    return compile_s, shared, first_s, statistics.median(walls), walls, out


def _rounded(ts):
    """Sample times as a cache key: peers' times differ from linspace's in the last bits."""
    return np.round(ts, 12).tolist()


def compare_case(case, repeats, cache, tolerances=TOLERANCES):
    """Rows of one single-trajectory case, one per jaxmb tolerance pair (jaxmb work shared
    between cases with the same inputs)."""
    model, Q = build(case), closed_form(case)
    rhs, Qj, Jj = one_dof_rhs(model, Q)
    (theta0,), (omega0,) = start(case)
    q0, qd0, ts = (np.asarray(case[k], np.float64) for k in ("q0", "qd0", "ts"))
    check_state(case, Qj, Jj, q0, qd0, theta0, omega0, "")
    if np.max(np.abs(np.asarray(model.q0) - q0)) > STATE_TOL:
        raise ValueError(f"{case['name']}: recorded q0 differs from the jaxmb model's q0")
    key = json.dumps(
        [case["model"], case["params"], case["q0"], case["qd0"], _rounded(ts), FORMULATION]
    )
    if key not in cache:
        q_ref = reference(case, rhs, Qj, ts, theta0, omega0)
        cache[key] = [
            _jaxmb_run(_single, (model, q0, qd0, ts), tol, repeats, q_ref) for tol in tolerances
        ]
    q = np.asarray(case["q"]) if case["ok"] else np.full_like(cache[key][0]["q_ref"], np.nan)
    return [_row(case, jx, errors(q, jx["q_jaxmb"]), errors(q, jx["q_ref"])) for jx in cache[key]]


def _jaxmb_run(fn, args, tol, repeats, q_ref, members=None):
    """jaxmb's timed run at one tolerance pair, its error against the reference (of `members`)."""
    model, *arrays = args
    rtol, atol = (jnp.asarray(x, jnp.float64) for x in tol)
    compile_s, shared, first_s, wall, walls, traj = timed(
        fn, (model, *map(jnp.asarray, arrays), rtol, atol), repeats
    )
    q = np.asarray(traj.q)
    return dict(
        jaxmb_rtol=tol[0],
        jaxmb_atol=tol[1],
        jaxmb_compile_s=compile_s,
        jaxmb_compile_shared=shared,
        jaxmb_first_run_s=first_s,
        jaxmb_wall_s=wall,
        jaxmb_wall_s_all=walls,
        jaxmb_steps=int(np.max(traj.num_steps)),
        jaxmb_ok=bool(np.all(traj.success)),
        jaxmb_vs_ref=errors(q if members is None else q[members], q_ref),
        q_jaxmb=q,
        q_ref=q_ref,
    )


def _row(case, jx, peer_vs_jaxmb, peer_vs_ref, **extra):
    return dict(
        name=case["name"],
        model=case["model"],
        batch=case.get("batch", 1),
        peer_ok=case["ok"],
        peer_wall_s=case["wall_s"],
        peer_compile_s=case.get("compile_s"),
        **{k: v for k, v in jx.items() if not k.startswith("q_")},
        peer_vs_jaxmb=peer_vs_jaxmb,
        peer_vs_ref=peer_vs_ref,
        **extra,
    )


def compare_batch(case, repeats, cache, tolerances=BATCH_TOLERANCES):
    """Rows of a batch, one per jaxmb tolerance pair: jaxmb vmapped over every recorded initial
    state; saved members against the reference and jaxmb, every final state against jaxmb."""
    model, Q = build(case), closed_form(case)
    rhs, Qj, Jj = one_dof_rhs(model, Q)
    thetas, omegas = start(case)
    q0s, qd0s, ts = (np.asarray(case[k], np.float64) for k in ("q0", "qd0", "ts"))
    for k, (q0, qd0, th, w) in enumerate(zip(q0s, qd0s, thetas, omegas)):
        check_state(case, Qj, Jj, q0, qd0, th, w, f" member {k}")
    members = case["members"]
    key = json.dumps(
        [case["model"], case["params"], case["q0"], case["qd0"], _rounded(ts), members]
    )
    if key not in cache:
        q_ref = np.stack([reference(case, rhs, Qj, ts, thetas[k], omegas[k]) for k in members])
        cache[key] = [
            _jaxmb_run(_batch, (model, q0s, qd0s, ts), tol, repeats, q_ref, members)
            for tol in tolerances
        ]
    rows = []
    for jx in cache[key]:
        final = errors(np.asarray(case["q_final"])[:, None], jx["q_jaxmb"][:, -1:])
        rows.append(
            _row(
                case,
                jx,
                errors(case["member_q"], jx["q_jaxmb"][members]),
                errors(case["member_q"], jx["q_ref"]),
                peer_final_vs_jaxmb=final,
            )
        )
    return rows


def compare(result, repeats=REPEATS, cache=None):
    """Rows (dicts) for every case and batch of one peer result (the JSON of a peer script)."""
    cache = {} if cache is None else cache
    rows = [r for c in result.get("cases", []) for r in compare_case(c, repeats, cache)]
    rows += [r for b in result.get("batches", []) for r in compare_batch(b, repeats, cache)]
    for r in rows:
        r["engine"] = result["engine"]
        r["speedup"] = r["peer_wall_s"] / r["jaxmb_wall_s"] if r["peer_ok"] else float("nan")
    return rows


def _ms(row, key):
    return f"{1e3 * row[key]:.1f}" if row[key] is not None else "-"


NOTE = (
    "ratio = peer time / jaxmb time (> 1: jaxmb faster); errors: largest over samples and bodies; "
    "ref: one-dof Lagrange equation on the closed-form configuration (DOP853, 1e-12); "
    "*: compiled for an earlier row (same model structure and shapes)."
)


def table(rows):
    """Plain-text table: times (ms, batch: the whole batch), ratio = peer time / jaxmb time, the
    largest position (m) and angle (rad) errors of the peer against jaxmb and of jaxmb against
    the reference, compile times (s)."""
    head = (
        f"{'engine':7s} {'case':58s} {'batch':>5s} {'rtol':>5s} {'peer ms':>10s} {'jaxmb ms':>10s} "
        f"{'ratio':>6s} {'peer-jaxmb m':>12s} {'rad':>8s} {'jaxmb-ref m':>11s} {'rad':>8s} "
        f"{'compile s':>9s} {'jaxmb':>6s}"
    )
    lines = [head]
    for r in rows:
        pj, jr = r["peer_vs_jaxmb"], r["jaxmb_vs_ref"]
        peer = _ms(r, "peer_wall_s") if r["peer_ok"] else "FAILED"
        comp = "-" if r["peer_compile_s"] is None else f"{r['peer_compile_s']:.1f}"
        lines.append(
            f"{r['engine']:7s} {r['name'][:58]:58s} {r['batch']:5d} {r['jaxmb_rtol']:5.0e} "
            f"{peer:>10s} "
            f"{_ms(r, 'jaxmb_wall_s'):>10s} {r['speedup']:6.2f} {pj['pos']:12.1e} {pj['ang']:8.1e} "
            f"{jr['pos']:11.1e} {jr['ang']:8.1e} {comp:>9s} {r['jaxmb_compile_s']:6.1f}"
            f"{'*' if r['jaxmb_compile_shared'] else ''}"
        )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "json", nargs="+", help="peer result files (benchmarks/results/peer_*.json)"
    )
    parser.add_argument(
        "--repeats", type=int, default=REPEATS, help="timed jaxmb runs per case (median)"
    )
    parser.add_argument("--out", default=None, help="write the rows to this JSON file")
    args = parser.parse_args()
    rows, cache = [], {}
    for path in args.json:
        with open(path) as f:
            rows += compare(json.load(f), args.repeats, cache)
    print(table(rows))
    print(NOTE)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
