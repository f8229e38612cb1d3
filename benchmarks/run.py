"""Run every benchmark and print the performance targets of issue #8 with their measured ratios.

    python benchmarks/run.py --quick     # reduced sizes, no gradient; under 2 minutes on 2 cores
    python benchmarks/run.py             # full sizes (about 20 minutes on 2 cores)
    python benchmarks/run.py --only batch compile

Each section is also a script of its own (benchmarks/bench_*.py, same --quick flag) that prints
its table. The comparisons against Exudyn and MuJoCo XLA need their own interpreter (see
benchmarks/peers/README.md): `benchmarks/bench_peers.py` writes benchmarks/results/peers.json
(peers_quick.json with --quick), which this summary reads when present, each case from the
newer file. Results go to benchmarks/results/summary[_quick].json
(not with --only).
"""

import argparse
import json
import os
import time

os.environ.setdefault("JAXMB_CPU_DEVICES", "all")  # before jaxmb: one CPU device per core
import bench_batch
import bench_compile
import bench_gradient
import bench_scaling
import bench_solvability
import bench_trajectory
from _common import RESULTS, machine, table
from bench_peers import _no_less_accurate

SECTIONS = {
    "trajectory": bench_trajectory.run,
    "batch": bench_batch.run,
    "solvability": bench_solvability.run,
    "compile": bench_compile.run,
    "gradient": bench_gradient.run,
    "scaling": bench_scaling.run,
}

FULL_ONLY = ("gradient",)  # left out of --quick, which must stay under 2 minutes


def _peers():
    """Rows of bench_peers.py's results (benchmarks/results/peers.json, full, and
    peers_quick.json), each peer case from the file written last ("written"; a file without it
    counts as older), or None when there is neither."""
    found = []
    for name in ("peers.json", "peers_quick.json"):
        path = os.path.join(RESULTS, name)
        if os.path.exists(path):
            with open(path) as f:
                data = json.load(f)
            found.append((data.get("written", ""), name, data["rows"]))
    if not found:
        return None
    newest = {}
    for written, name, rows in sorted(found):  # later files replace earlier ones, case by case
        cases = {(r["engine"], r["name"]) for r in rows}
        newest = {k: v for k, v in newest.items() if k not in cases}
        for r in rows:
            newest.setdefault((r["engine"], r["name"]), []).append(dict(r, file=name))
    return {"rows": [r for rows in newest.values() for r in rows]}


def targets(res, peers):
    """(target, measured, met) rows; a section that did not run is skipped."""
    rows = []

    def add(name, value, ok, fmt="{:.1f}x"):
        rows.append([name, fmt.format(value), "yes" if ok else "NO"])

    if "trajectory" in res:
        for case, r in res["trajectory"].items():
            add(f"single trajectory {case}: >= 10x numpy", r["ratio"], r["ratio"] >= 10)
    if "batch" in res:
        size = max(res["batch"])
        r = res["batch"][size]
        add(
            f"batch of {size} slider-cranks (mb.batch.map, {r['devices']} CPU devices): "
            ">= 100x numpy loop",
            r["map_ratio"],
            r["map_ratio"] >= 100,
        )
    if "solvability" in res:
        r = res["solvability"]
        add(
            f"solvability verdicts of {r['n']} configurations (mb.batch.map, {r['devices']} "
            "CPU devices): >= 20x scipy loop",
            r["ratio"],
            r["ratio"] >= 20,
        )
        add(
            f"solvability full reports of {r['n']} configurations: >= 5x scipy loop",
            r["ratio_full"],
            r["ratio_full"] >= 5,
        )
    if "compile" in res:
        c = res["compile"]
        s = c["robot"]["simulate"]["total_s"]
        add("compile of the robot's simulate: <= 5 s", s, s <= 5.0, "{:.2f} s")
        add(
            "compile growth with pairs: exponent <= 1",
            c["growth_exponent"],
            c["growth_exponent"] <= 1.0,
            "{:.2f}",
        )
    if "gradient" in res:
        r = res["gradient"]
        add(
            f"reverse gradient / forward run ({r['t_end']:g} s, adjoint {r['best']}): <= 5",
            r["ratio"],
            r["ratio"] <= 5.0,
            "{:.2f}",
        )
    rows_ = (peers or {}).get("rows", [])
    for r in rows_:
        if not r["peer_ok"]:
            continue
        if r["engine"] == "exudyn" and r["batch"] == 1 and "GeneralizedAlpha h=0.001" in r["name"]:
            if r["jaxmb_rtol"] != 1e-8:
                continue  # a single trajectory: at jaxmb's default tolerances
            goal, need = "no slower than Exudyn", 1.0
        elif r["engine"] == "mjx" and r["batch"] > 1:
            # a batch: the fastest jaxmb tolerance at equal or better accuracy (as bench_peers)
            same = [
                o
                for o in rows_
                if o["engine"] == "mjx"
                and o["name"] == r["name"]
                and o["jaxmb_ok"]
                and _no_less_accurate(o)
            ]
            if not same or r is not max(same, key=lambda o: o["speedup"]):
                continue
            goal = f">= 5x MJX at equal or better accuracy (jaxmb rtol {r['jaxmb_rtol']:g})"
            need = 5.0
        else:
            continue
        err = r["peer_vs_ref"]["pos"]
        add(
            f"{r['name']} (peer error {err:.0e} m): {goal} [{r['file']}]",
            r["speedup"],
            r["speedup"] >= need,
        )
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="*", choices=sorted(SECTIONS))
    args = parser.parse_args(argv)
    print(machine(), "\n")
    start = time.perf_counter()
    res = {}
    names = args.only or [n for n in SECTIONS if not (args.quick and n in FULL_ONLY)]
    if args.quick and not args.only:
        print(
            f"--quick skips {', '.join(FULL_ONLY)} (compile-bound: about a minute of "
            "compilation each); run them with --only\n"
        )
    for name in names:
        t0 = time.perf_counter()
        res[name] = SECTIONS[name](args.quick)
        print(f"[{name}: {time.perf_counter() - t0:.1f} s]\n", flush=True)
    peers = _peers()
    text = table("Targets (issue #8)", ["target", "measured", "met"], targets(res, peers))
    if peers is None:
        print(
            "(no benchmarks/results/peers[_quick].json: run benchmarks/bench_peers.py for "
            "Exudyn/MJX)"
        )
    if args.only:  # a partial run does not replace the summary of a whole one
        print(f"(--only: no summary written); total {time.perf_counter() - start:.0f} s")
        return res
    os.makedirs(RESULTS, exist_ok=True)
    out = os.path.join(RESULTS, "summary_quick.json" if args.quick else "summary.json")
    with open(out, "w") as f:
        json.dump(
            dict(machine=machine(), quick=args.quick, results=res, targets_table=text),
            f,
            indent=1,
            default=str,
        )
    print(f"wrote {out}; total {time.perf_counter() - start:.0f} s")
    return res


if __name__ == "__main__":
    main()
