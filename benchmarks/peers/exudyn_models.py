"""Peer engine Exudyn: the jaxmb slider-crank and N-four-bar with Exudyn's implicit solvers.

    /tmp/peers/bin/python benchmarks/peers/exudyn_models.py --quick   # fewer cases
    /tmp/peers/bin/python benchmarks/peers/exudyn_models.py           # all cases

Runs in the peers venv (benchmarks/peers/README.md), never imports jaxmb: the results go to a
JSON file that `compare_jaxmb.py` (jaxmb venv) reads to compare motion and time;
`benchmarks/bench_peers.py` runs both.

The models are those of `jaxmb/models/slider_crank.py` and `jaxmb/models/n_four_bar.py`, built from
the same numbers (`common.SLIDER_CRANK`, `common.N_FOUR_BAR`): one `NodeRigidBody2D` +
`ObjectRigidBody2D` per body (reference point = centre of mass, so the node coordinates are
jaxmb's (x, y, phi)), `ObjectJointRevolute2D` per revolute (`MarkerBodyPosition` at the same
local points), `ObjectJointPrismatic2D` (`constrainRotation=True`) for the slider's
translational pair, `LoadMassProportional` for gravity. Free motion (no driver) from the
closed-form consistent initial state written in the JSON (`q0`, `qd0`).

Solvers: Exudyn's implicit index-3 generalized-alpha ("GeneralizedAlpha", spectral radius 0.9,
the default) and the index-2 trapezoidal rule ("TrapezoidalIndex2"), constant step `h`
(adaptive step reduction only on Newton failure; Exudyn's implicit solvers have no error control),
Newton at Exudyn's defaults (modified Newton, relative tolerance 1e-8, absolute 1e-10), the
`exudynCPPfast` module (no range checks). Redundant constraints (the `rigid_coupler` N-four-bar,
p = N - 1): the default dense LU ("EXUdense") stops on the singular Jacobian (the plain
N-four-bar, redundant only exactly at the horizontal position, passes it with EXUdense); a
failed case is then re-run with `linearSolver.solverType = EigenDense`,
`linearSolver.ignoreSingularJacobian = True` (Eigen FullPivLU, a basic solution: the multipliers
of the dependent rows come out zero); the first failure is kept in the case's `"fallback_from"`.

JSON (`benchmarks/results/peer_exudyn.json`, `peer_exudyn_quick.json` with --quick):

    {"engine": "exudyn", "version": str, "module": "exudynCPPfast" | "exudynCPP", "quick": bool,
     "machine": str, "python": str, "repeats": int,
     "loadavg": [[3], [3]],           # os.getloadavg() at the start and the end
     "cases": [{
        "name": str,                    # e.g. "slider_crank t1=1 GeneralizedAlpha h=1e-3"
        "model": "slider_crank" | "n_four_bar",
        "params": {...},                # keyword arguments of the jaxmb model's build()
        "omega0": float,                # slider-crank: initial crank rate (rad/s)
        "rate0": float,                 # N-four-bar: initial rate of every crank (rad/s)
        "body_names": [str],            # jaxmb body order
        "q0": [n], "qd0": [n],          # jaxmb coordinates (x, y, phi per body, centroidal)
        "t1": float, "solver": str, "h": float, "linear_solver": str,
        "ignore_singular_jacobian": bool,
        "ok": bool, "error": str | null,  # error: the solver's message when not ok
        "fallback_from": null | {"linear_solver": str, "error": str},
        "build_s": float,               # model creation + Assemble (s)
        "first_run_s": float,           # the first SolveDynamic (warm-up, fallback detection)
        "wall_s": float,                # median wall time of `repeats` SolveDynamic runs after it
        "wall_s_all": [float],
        "steps": int, "newton_iterations": int, "jacobians": int,  # counters of the last run
        "lambda_zero": int, "lambda_count": int,  # multipliers |lambda| < 1e-12 at t1, and all
        "ts": [T], "q": [T][n]          # samples every t1/100 s, jaxmb coordinates
     }]}
"""

import sys

if not hasattr(sys, "exudynFast"):  # must precede the first import of exudyn
    # its fastest module (no range checks); set False before the import for the checked one
    sys.exudynFast = True
import argparse  # noqa: E402
import contextlib  # noqa: E402
import io  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import exudyn as exu  # noqa: E402
import numpy as np  # noqa: E402
from exudyn.itemInterface import (  # noqa: E402
    LoadMassProportional,
    MarkerBodyMass,
    MarkerBodyPosition,
    MarkerBodyRigid,
    NodeRigidBody2D,
    ObjectGround,
    ObjectJointPrismatic2D,
    ObjectJointRevolute2D,
    ObjectRigidBody2D,
    SensorNode,
)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import SAMPLES, SLIDER_J, n_four_bar_base, slider_crank_base, write_result  # noqa: E402

REPEATS = 5


class _Builder:
    """A MainSystem being filled with planar rigid bodies (jaxmb order) and joints."""

    def __init__(self, gravity):
        self.sc = exu.SystemContainer()
        self.mbs = self.sc.AddSystem()
        self.ground = self.mbs.AddObject(ObjectGround())
        self.gravity = [gravity[0], gravity[1], 0.0]
        self.bodies, self.nodes, self.q_ref = [], [], []

    def body(self, mass, inertia, q, qd):
        mbs = self.mbs
        node = mbs.AddNode(
            NodeRigidBody2D(referenceCoordinates=list(q), initialVelocities=list(qd))
        )
        body = mbs.AddObject(ObjectRigidBody2D(mass=mass, inertia=inertia, nodeNumber=node))
        mass_marker = mbs.AddMarker(MarkerBodyMass(bodyNumber=body))
        mbs.AddLoad(LoadMassProportional(markerNumber=mass_marker, loadVector=self.gravity))
        self.bodies.append(body)
        self.nodes.append(node)
        self.q_ref.append(list(q))
        return body

    def _point(self, body, s):
        return self.mbs.AddMarker(
            MarkerBodyPosition(bodyNumber=body, localPosition=[s[0], s[1], 0.0])
        )

    def revolute(self, i, j, s_i, s_j):
        self.mbs.AddObject(
            ObjectJointRevolute2D(markerNumbers=[self._point(i, s_i), self._point(j, s_j)])
        )

    def slider_on_x_axis(self, body):
        """jaxmb Translational(slider, ground, s = 0, v = (0, 1)): slider centre on the x axis,
        no rotation relative to the ground."""
        m_ground = self.mbs.AddMarker(
            MarkerBodyRigid(bodyNumber=self.ground, localPosition=[0.0, 0.0, 0.0])
        )
        m_body = self.mbs.AddMarker(MarkerBodyRigid(bodyNumber=body, localPosition=[0.0, 0.0, 0.0]))
        self.mbs.AddObject(
            ObjectJointPrismatic2D(
                markerNumbers=[m_ground, m_body],
                axisMarker0=[1.0, 0.0, 0.0],
                normalMarker1=[0.0, 1.0, 0.0],
                constrainRotation=True,
            )
        )

    def finish(self):
        """Node sensors (stored in memory) and Assemble."""
        self.sensors = [
            self.mbs.AddSensor(
                SensorNode(
                    nodeNumber=n,
                    storeInternal=True,
                    writeToFile=False,
                    outputVariableType=exu.OutputVariableType.Coordinates,
                )
            )
            for n in self.nodes
        ]
        self.mbs.Assemble()
        return self


def build_slider_crank(q0, qd0, r, l, m_crank, m_rod, m_slider, gravity, **_):
    """The slider-crank of jaxmb/models/slider_crank.py (revolutes O, A, B; translational P)."""
    b = _Builder(gravity)
    q0, qd0 = np.reshape(q0, (-1, 3)), np.reshape(qd0, (-1, 3))
    crank = b.body(m_crank, m_crank * r**2 / 12, q0[0], qd0[0])
    rod = b.body(m_rod, m_rod * l**2 / 12, q0[1], qd0[1])
    slider = b.body(m_slider, SLIDER_J, q0[2], qd0[2])
    b.revolute(b.ground, crank, (0.0, 0.0), (-r / 2, 0.0))
    b.revolute(crank, rod, (r / 2, 0.0), (-l / 2, 0.0))
    b.revolute(rod, slider, (l / 2, 0.0), (0.0, 0.0))
    b.slider_on_x_axis(slider)
    return b.finish()


def build_n_four_bar(q0, qd0, N, length, mass, gravity, rigid_coupler=False, **_):
    """The N-four-bar of jaxmb/models/n_four_bar.py (revolutes A_k, then B_j c_j, B_{j+1} c_j)."""
    b = _Builder(gravity)
    L, J = length, mass * length**2 / 12
    q0, qd0 = np.reshape(q0, (-1, 3)), np.reshape(qd0, (-1, 3))
    cranks = [b.body(mass, J, q0[k], qd0[k]) for k in range(N + 1)]
    tip, foot = (L / 2, 0.0), (-L / 2, 0.0)
    for k, crank in enumerate(cranks):
        b.revolute(b.ground, crank, (k * L, 0.0), foot)
    if rigid_coupler:
        bar = b.body(N * mass, N * mass * (N * L) ** 2 / 12, q0[N + 1], qd0[N + 1])
        for k, crank in enumerate(cranks):
            b.revolute(crank, bar, tip, ((k - N / 2) * L, 0.0))
    else:
        for j in range(N):
            bar = b.body(mass, J, q0[N + 1 + j], qd0[N + 1 + j])
            b.revolute(cranks[j], bar, tip, foot)
            b.revolute(cranks[j + 1], bar, tip, tip)
    return b.finish()


def _settings(t1, h, linear_solver, ignore_singular):
    s = exu.SimulationSettings()
    s.solution.file.write = False
    s.solution.sensors.writePeriod = t1 / SAMPLES
    s.timeIntegration.endTime = t1
    s.timeIntegration.numberOfSteps = int(round(t1 / h))
    s.timeIntegration.verboseMode = 0
    s.linearSolver.solverType = getattr(exu.LinearSolverType, linear_solver)
    s.linearSolver.ignoreSingularJacobian = ignore_singular
    return s


def _solve(system, settings, solver):
    """One SolveDynamic; returns (ok, wall time, solver message)."""
    out = io.StringIO()
    t = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            ok = bool(
                system.mbs.SolveDynamic(settings, solverType=getattr(exu.DynamicSolverType, solver))
            )
        except Exception as err:  # Exudyn raises on some failures, returns False on others
            ok, out = False, io.StringIO(f"{type(err).__name__}: {err}\n" + out.getvalue())
    wall = time.perf_counter() - t
    return ok, wall, None if ok else _first_lines(out.getvalue())


def _first_lines(text, n=6):
    lines = [ln for ln in text.splitlines() if ln.strip() and not set(ln.strip()) <= {"*"}]
    return " | ".join(lines[:n])


def _samples(system, t1):
    """Sensor data -> (ts, q) in jaxmb coordinates (node reference + displacement)."""
    data = [np.asarray(system.mbs.GetSensorStoredData(s)) for s in system.sensors]
    ts = data[0][:, 0]
    q = np.concatenate([d[:, 1:4] + np.asarray(ref) for d, ref in zip(data, system.q_ref)], axis=1)
    return ts, q


def simulate(case, repeats=REPEATS):
    """Build and simulate one case (the dict of the JSON, inputs filled); fills the outputs."""
    build = build_slider_crank if case["model"] == "slider_crank" else build_n_four_bar
    t = time.perf_counter()
    system = build(case["q0"], case["qd0"], **case["params"])
    case["build_s"] = time.perf_counter() - t
    settings = _settings(
        case["t1"], case["h"], case["linear_solver"], case["ignore_singular_jacobian"]
    )
    ok, wall, error = _solve(system, settings, case["solver"])
    if not ok and not case["ignore_singular_jacobian"]:  # redundant or singular: full-pivot LU
        case["fallback_from"] = {"linear_solver": case["linear_solver"], "error": error}
        case.update(linear_solver="EigenDense", ignore_singular_jacobian=True)
        settings = _settings(case["t1"], case["h"], "EigenDense", True)
        ok, wall, error = _solve(system, settings, case["solver"])
    case.update(ok=ok, error=error, first_run_s=wall)  # the first (warm-up) run is not timed
    walls = [wall]
    if ok:
        walls = [_solve(system, settings, case["solver"])[1] for _ in range(repeats)]
    it = system.mbs.sys["dynamicSolver"].it
    lam = np.asarray(system.mbs.systemData.GetAECoordinates())
    ts, q = _samples(system, case["t1"])
    case.update(
        wall_s=statistics.median(walls),
        wall_s_all=walls,
        steps=int(it.currentStepIndex),
        newton_iterations=int(it.newtonStepsCount),
        jacobians=int(it.newtonJacobiCount),
        lambda_zero=int(np.sum(np.abs(lam) < 1e-12)),
        lambda_count=int(lam.size),
        ts=ts.tolist(),
        q=q.tolist(),
    )
    return case


def slider_crank_case(t1, solver="GeneralizedAlpha", h=1e-3):
    return dict(
        slider_crank_base(t1),
        name=f"slider_crank t1={t1:g} {solver} h={h:g}",
        solver=solver,
        h=h,
        linear_solver="EXUdense",
        ignore_singular_jacobian=False,
        fallback_from=None,
    )


def n_four_bar_case(
    N, t1, solver="GeneralizedAlpha", h=1e-3, rigid_coupler=False, linear_solver="EXUdense"
):
    kind = " rigid_coupler" if rigid_coupler else ""
    return dict(
        n_four_bar_base(N, t1, rigid_coupler),
        name=f"n_four_bar N={N}{kind} t1={t1:g} {solver} h={h:g} {linear_solver}",
        solver=solver,
        h=h,
        linear_solver=linear_solver,
        ignore_singular_jacobian=False,
        fallback_from=None,
    )


def cases(quick):
    """The benchmark's cases: --quick keeps the 1 s slider-crank and N = 1, 10."""
    out = [slider_crank_case(1.0), slider_crank_case(1.0, "TrapezoidalIndex2")]
    if not quick:
        out += [
            slider_crank_case(1.0, h=1e-4),
            slider_crank_case(10.0),
            slider_crank_case(10.0, h=1e-4),
        ]
    sizes = (1, 10) if quick else (1, 10, 50)
    out += [n_four_bar_case(N, 1.0) for N in sizes]
    if not quick:
        out += [n_four_bar_case(1, 1.0, h=1e-4)]
        out += [n_four_bar_case(N, 1.0, linear_solver="EigenSparse") for N in (10, 50)]
    out += [n_four_bar_case(10, 1.0, rigid_coupler=True)]
    return out


SCALING_SIZES = (10, 50, 100, 200, 400)
DENSE_LIMIT = 100  # Exudyn's dense LU above this N takes minutes per run


def scaling_cases():
    """The N-four-bar from N = 10 to 400, 1 s, generalized-alpha h = 1e-3, with Exudyn's sparse
    LU (EigenSparse) and, up to N = 100, its dense one (bench_peers.py --scaling)."""
    return [
        n_four_bar_case(N, 1.0, linear_solver=solver)
        for N in SCALING_SIZES
        for solver in ("EXUdense", "EigenSparse")
        if solver == "EigenSparse" or N <= DENSE_LIMIT
    ]


def run(quick=False, repeats=REPEATS, scaling=False):
    """Simulate every case; returns the JSON dict documented at the top of this file."""
    load_start = os.getloadavg()  # 1, 5, 15 min: other processes on the machine skew times
    module = "exudynCPPfast" if getattr(sys, "exudynFast", False) else "exudynCPP"
    return dict(
        engine="exudyn",
        version=exu.__version__,
        module=module,
        quick=quick,
        machine=f"{platform.machine()} {platform.processor()} {os.cpu_count()} cpus",
        python=platform.python_version(),
        repeats=repeats,
        scaling=scaling,
        cases=[simulate(c, repeats) for c in (scaling_cases() if scaling else cases(quick))],
        loadavg=[load_start, os.getloadavg()],
    )


def table(result):
    rows = [
        f"{'case':58s} {'ok':>3s} {'wall ms':>9s} {'steps':>6s} {'newton':>7s} {'jac':>5s}"
        "  linear solver"
    ]
    for c in result["cases"]:
        lin = c["linear_solver"] + (
            " ignoreSingularJacobian" if c["ignore_singular_jacobian"] else ""
        )
        if c["fallback_from"]:
            lin += f" (after {c['fallback_from']['linear_solver']} failed)"
        rows.append(
            f"{c['name']:58s} {'yes' if c['ok'] else 'NO':>3s} {1e3 * c['wall_s']:9.2f} "
            f"{c['steps']:6d} {c['newton_iterations']:7d} {c['jacobians']:5d}  {lin}"
        )
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer cases")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="timed runs per case (median)")
    parser.add_argument(
        "--out",
        default=None,
        help="JSON path (default benchmarks/results/peer_exudyn[_quick].json)",
    )
    parser.add_argument(
        "--scaling",
        action="store_true",
        help="the N-four-bar from N = 10 to 400, dense and sparse LU",
    )
    args = parser.parse_args()
    result = run(args.quick, args.repeats, args.scaling)
    print(f"Exudyn {result['version']} ({result['module']}), {result['machine']}")
    print(table(result))
    for c in result["cases"]:
        if c["fallback_from"]:
            print(
                f"  {c['name']}: {c['fallback_from']['linear_solver']} failed: "
                f"{c['fallback_from']['error'][:300]}"
            )
    write_result("exudyn", args.quick, result, args.out)


if __name__ == "__main__":
    main()
