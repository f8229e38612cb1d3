"""Benchmark: jaxmb against the peers Exudyn and MuJoCo XLA on the slider-crank and N-four-bar.

    python benchmarks/bench_peers.py                        # full: batch of 1024, all cases
    python benchmarks/bench_peers.py --quick                # batch of 256, fewer cases
    python benchmarks/bench_peers.py --peers-python .venv-peers/bin/python
    python benchmarks/bench_peers.py --reuse                # compare the existing peer JSON files

Run with the jaxmb interpreter. The peers live in their own virtual environment (their version
pins clash with jaxmb's; benchmarks/peers/README.md says how to make it); this script runs
`benchmarks/peers/exudyn_models.py` and `benchmarks/peers/mjx_models.py` with that interpreter,
one after the other (a peer whose package the interpreter cannot import is skipped with a
message), each writing `benchmarks/results/peer_<engine>[_quick].json`. Then, in this process,
`benchmarks/peers/compare_jaxmb.py` does the same work with jaxmb (same model numbers, initial
states and sample times; jitted, compile timed separately, median of `--repeats` runs) and
measures the motion errors. Printed: one table (case, peer time, jaxmb time, their ratio, the
peer's motion error against jaxmb, jaxmb's against an independent one-dof reference) and the
targets of issue #8 as ratios; written: `benchmarks/results/peers[_quick].json` (every row,
the load averages of each phase).
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "peers"))
try:
    import jaxmb  # noqa: F401  (first: float64 and the XLA CPU flags)
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, os.path.dirname(HERE))
import compare_jaxmb  # noqa: E402

RESULTS = os.path.join(HERE, "results")
PEERS = (  # engine, script, the import that must work, what to install
    ("exudyn", "exudyn_models.py", "import exudyn", "exudyn"),
    ("mjx", "mjx_models.py", "from mujoco import mjx", "mujoco-mjx (with the matching mujoco)"),
)
DEFAULT_PEERS_PYTHON = os.environ.get("JAXMB_PEERS_PYTHON", "/tmp/peers/bin/python")


def peer_json(engine, quick, scaling=False):
    suffix = "_scaling" if scaling else "_quick" if quick else ""
    return os.path.join(RESULTS, f"peer_{engine}{suffix}.json")


def run_peer(python, engine, script, probe, package, quick, repeats, scaling=False):
    """Run one peer script; returns its JSON path, or None (reason printed) when skipped."""
    if not os.path.exists(python):
        print(
            f"skipping {engine}: no interpreter at {python} "
            "(see benchmarks/peers/README.md; --peers-python)"
        )
        return None
    check = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    if check.returncode:
        last = (check.stderr.strip().splitlines() or ["?"])[-1]
        print(
            f"skipping {engine}: {python} cannot `{probe}` ({last}); install {package} there "
            "(benchmarks/peers/README.md)"
        )
        return None
    path = peer_json(engine, quick, scaling)
    cmd = [python, os.path.join(HERE, "peers", script), "--repeats", str(repeats), "--out", path]
    cmd += ["--scaling"] if scaling else []
    print(f"$ {' '.join(cmd + (['--quick'] if quick else []))}", flush=True)
    done = subprocess.run(cmd + (["--quick"] if quick else []))
    if done.returncode:
        print(f"skipping {engine}: {script} exited with status {done.returncode}")
        return None
    return path


def targets(rows):
    """The issue's targets as ratios (peer time / jaxmb time). A single trajectory: jaxmb at its
    default tolerances. A batch against MJX: "at equal or better accuracy", so the fastest jaxmb
    tolerance whose errors against the independent reference (position and angle) are at most
    the peer's own errors against it."""
    lines = ["targets (ratio = peer time / jaxmb time; >= 1: jaxmb no slower):"]
    for r in rows:
        if not r["peer_ok"]:
            continue
        if r["engine"] == "exudyn" and "GeneralizedAlpha h=0.001" in r["name"]:
            if r["jaxmb_rtol"] != 1e-8:
                continue
            goal = "single trajectory no slower than Exudyn (>= 1)"
        elif r["engine"] == "mjx" and r["batch"] > 1:
            same = [
                o
                for o in rows
                if o["engine"] == r["engine"]
                and o["name"] == r["name"]
                and o["jaxmb_ok"]
                and _no_less_accurate(o)
            ]
            if not same or r is not max(same, key=lambda o: o["speedup"]):
                continue
            jr = r["jaxmb_vs_ref"]
            goal = (
                f"batch throughput >= 5x MJX at equal or better accuracy; jaxmb rtol "
                f"{r['jaxmb_rtol']:g}, error {jr['pos']:.1e} m, {jr['ang']:.1e} rad"
            )
        else:
            continue
        pr = r["peer_vs_ref"]
        lines.append(
            f"  {r['engine']:7s} {r['name'][:58]:58s} ratio {r['speedup']:6.2f}   "
            f"[{goal}; peer error against the reference "
            f"{pr['pos']:.1e} m, {pr['ang']:.1e} rad]"
        )
    return "\n".join(lines)


def _no_less_accurate(row):
    """jaxmb's errors against the reference at most the peer's, in position and angle."""
    j, p = row["jaxmb_vs_ref"], row["peer_vs_ref"]
    return j["pos"] <= p["pos"] and j["ang"] <= p["ang"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="batch of 256 and fewer cases")
    parser.add_argument(
        "--repeats", type=int, default=5, help="timed runs per case, peers and jaxmb (median)"
    )
    parser.add_argument(
        "--peers-python",
        default=DEFAULT_PEERS_PYTHON,
        help="interpreter of the peers venv (default $JAXMB_PEERS_PYTHON or /tmp/peers/bin/python)",
    )
    parser.add_argument(
        "--reuse", action="store_true", help="do not run the peers; compare their existing JSON"
    )
    parser.add_argument(
        "--only", choices=[p[0] for p in PEERS], action="append", help="this peer only"
    )
    parser.add_argument(
        "--formulation",
        default="null_space",
        help="simulate's formulation for jaxmb's runs (a spelling, e.g. augmented_lagrangian)",
    )
    parser.add_argument(
        "--scaling",
        action="store_true",
        help="Exudyn only: the N-four-bar from N = 10 to 400 with its dense and sparse LU",
    )
    args = parser.parse_args(argv)
    compare_jaxmb.FORMULATION = args.formulation
    if args.scaling:
        args.only = ["exudyn"]
    paths = []
    for engine, script, probe, package in PEERS:
        if args.only and engine not in args.only:
            continue
        if args.reuse:
            path = peer_json(engine, args.quick, args.scaling)
            paths.append(path if os.path.exists(path) else None)
            if paths[-1] is None:
                print(f"skipping {engine}: no {path} to reuse")
        else:
            paths.append(
                run_peer(
                    args.peers_python,
                    engine,
                    script,
                    probe,
                    package,
                    args.quick,
                    args.repeats,
                    args.scaling,
                )
            )
    rows, cache, loads = [], {}, {}
    for path in filter(None, paths):
        with open(path) as f:
            result = json.load(f)
        loads[result["engine"]] = result.get("loadavg")
        start = os.getloadavg()
        rows += compare_jaxmb.compare(result, args.repeats, cache)
        loads[f"jaxmb for {result['engine']}"] = [start, os.getloadavg()]
    if not rows:
        print("no peer results to compare")
        return rows
    print()
    print(compare_jaxmb.table(rows))
    print(compare_jaxmb.NOTE)
    print()
    print(targets(rows))
    print(
        "load average (1 min) at start -> end of each phase (2 cores; other processes skew times): "
        + ", ".join(f"{k} {v[0][0]:.1f} -> {v[1][0]:.1f}" for k, v in loads.items() if v)
    )
    suffix = "_scaling" if args.scaling else "_quick" if args.quick else ""
    out = os.path.join(RESULTS, f"peers{suffix}.json")
    with open(out, "w") as f:
        json.dump(
            dict(
                rows=rows,
                loadavg=loads,
                repeats=args.repeats,
                quick=args.quick,
                formulation=args.formulation,
                written=time.strftime("%Y-%m-%d %H:%M:%S"),
            ),
            f,
            indent=1,
        )
    print(f"wrote {out}")
    return rows


if __name__ == "__main__":
    main()
