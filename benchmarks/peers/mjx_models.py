"""Peer engine MuJoCo XLA (MJX): the jaxmb slider-crank (single and in a batch) and N-four-bar.

    /tmp/peers/bin/python benchmarks/peers/mjx_models.py --quick   # batch of 256, fewer cases
    /tmp/peers/bin/python benchmarks/peers/mjx_models.py           # batch of 1024, all cases

Runs in the peers venv (see benchmarks/peers/README.md), never imports jaxmb: the results go to a
JSON file that `benchmarks/peers/compare_jaxmb.py` (jaxmb venv) compares with jaxmb.

The models are those of `jaxmb/models/slider_crank.py` and `jaxmb/models/n_four_bar.py` with the
numbers of `common.py` (`SLIDER_CRANK`, `N_FOUR_BAR`), written as MJCF: MuJoCo works in
joint coordinates on a kinematic tree, so every closed loop is cut at one revolute, which becomes
a soft `connect` equality between two sites (3 rows, of which the z row is identically zero
in the plane: MuJoCo's regularized solver does not mind the dependent row, nor the N redundant
rows of the horizontal N-four-bar or the N - 1 of the rigid coupler).

- slider-crank: world -> crank (hinge O at the origin) -> rod (hinge A at the crank tip); world ->
  slider (slide P along x, no rotation); the revolute B is the connect (rod end = slider centre).
- N-four-bar: world -> crank k (hinge A_k at (k L, 0)); crank j -> coupler j (hinge B_j c_j at
  the crank tip); connects B_{j+1} c_j (coupler j's right end = crank j+1's tip). Rigid
  coupler: crank 0 -> coupler (hinge B_0), connects B_1 .. B_N.

Every body's inertial frame is its centre of mass with the jaxmb mass and J about z (planar
motion: the x, y inertias never enter, set equal to J). No contacts (flag contact="disable"),
gravity along -y, no damping, no armature. jaxmb's (x, y, phi) per body are read back as the body
centre of mass (`xipos` after `mj_kinematics` of each saved qpos) and the sum of the hinge
angles from the ground to the body (unwrapped, like jaxmb's phi).

Constraint softness (MuJoCo's solref = (timeconst, dampratio), solimp = (dmin, dmax, width, ...)):
"default" keeps MuJoCo's defaults (0.02 s, 1; 0.9, 0.95, 0.001): the loop closures visibly
stretch; "stiff" is the hardest MuJoCo allows at the step h: timeconst = 2 h (its lower clamp),
dmin = dmax = 0.9999 (its upper clamp). Integrators: "Euler" (MuJoCo's semi-implicit Euler,
the default) and "RK4". Solver Newton, tolerance 1e-10, 100 iterations.

Timing: `jax.jit` of `jax.lax.scan` over the steps of `jax.vmap(mjx.step)` over the batch of
initial states (a batch of 1 for the single trajectories), saving qpos every `t1 / 100`
(nested scan: 100 saves x steps per save); compile timed separately (the first call, AOT
`lower().compile()`), then one untimed warm-up call (`first_run_s`: XLA:CPU's first run of an
executable can be much slower); run time the median of `repeats` calls after it, each ended by
`block_until_ready`. Batch initial states: crank angle theta uniform in [0, 2 pi), rate omega
uniform in [-20, 20] rad/s (seed 0), from the closed-form consistent state; 8 members'
trajectories are kept for the motion-error comparison, every member's final state also.

JSON (`benchmarks/results/peer_mjx.json`, `peer_mjx_quick.json` with --quick):

    {"engine": "mjx", "version": str, "jax": str, "device": str, "quick": bool, "machine": str,
     "python": str, "repeats": int,
     "loadavg": [[3], [3]],           # os.getloadavg() at the start and the end
     "cases": [{                        # single trajectories (batch of 1)
        "name", "model", "params", "omega0" | "rate0", "body_names", "q0", "qd0", "t1",
        "h": float, "integrator": str, "softness": str, "solref": [2], "solimp": [5],
        "compile_s": float, "first_run_s": float, "wall_s": float, "wall_s_all": [float],
        "steps": int,
        "ok": bool, "error": str | null,  # ok: finite state throughout
        "ts": [T], "q": [T][n]}],        # jaxmb coordinates at the sample times
     "batches": [{                      # the same fields, plus
        "batch": int, "seed": int, "q0": [B][n], "qd0": [B][n], "theta0": [B], "omega0": [B],
        "members": [int], "member_q": [k][T][n], "q_final": [B][n]}]}
"""

import argparse
import contextlib
import io
import os
import platform
import statistics
import sys
import time

with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    import jax  # noqa: E402  (mjx prints a notice when the optional warp backend is absent)
    import mujoco  # noqa: E402
    from mujoco import mjx  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    OMEGA0,
    SAMPLES,
    SLIDER_CRANK,
    SLIDER_J,
    n_four_bar_base,
    slider_crank_base,
    slider_crank_state,
    write_result,
)

jax.config.update("jax_enable_x64", True)  # the same float64 as jaxmb
REPEATS = 5
BATCH = 1024
OMEGA_RANGE = 20.0  # batch: |omega0| <= 20 rad/s
MEMBERS = 8  # batch members whose whole trajectory is saved
NEWTON = dict(solver="Newton", iterations=100, ls_iterations=50, tolerance=1e-10)


def softness(kind, h):
    """(solref, solimp) of a connect: MuJoCo's defaults or the stiffest it accepts at step h."""
    if kind == "default":
        return [0.02, 1.0], [0.9, 0.95, 0.001, 0.5, 2.0]
    if kind == "stiff":
        return [2.0 * h, 1.0], [0.9999, 0.9999, 0.001, 0.5, 2.0]
    raise ValueError(f"softness: expected 'default' or 'stiff', got {kind!r}")


def _body(name, pos, joint, inertial, children=""):
    """MJCF of one body: `joint` = (name, type, axis), `inertial` = (com x, mass, J)."""
    jname, jtype, axis = joint
    x, mass, J = inertial
    return (
        f'<body name="{name}" pos="{pos[0]!r} {pos[1]!r} 0">'
        f'<joint name="{jname}" type="{jtype}" axis="{axis}"/>'
        f'<inertial pos="{x!r} 0 0" mass="{mass!r}" diaginertia="{J!r} {J!r} {J!r}"/>'
        f"{children}</body>"
    )


def _site(name, x):
    return f'<site name="{name}" pos="{x!r} 0 0"/>'


def _mjcf(name, bodies, connects, gravity, h, integrator, solref, solimp):
    """The MJCF document: `connects` = [(name, site1, site2)]."""
    sr, si = " ".join(map(repr, solref)), " ".join(map(repr, solimp))
    eq = "".join(
        f'<connect name="{c}" site1="{a}" site2="{b}" solref="{sr}" solimp="{si}"/>'
        for c, a, b in connects
    )
    opt = " ".join(f'{k}="{v}"' for k, v in NEWTON.items())
    return (
        f'<mujoco model="{name}"><compiler angle="radian" inertiafromgeom="false"/>'
        f'<option timestep="{h!r}" gravity="{gravity[0]!r} {gravity[1]!r} 0" '
        f'integrator="{integrator}" {opt}><flag contact="disable"/></option>'
        f"<worldbody>{''.join(bodies)}</worldbody><equality>{eq}</equality></mujoco>"
    )


def slider_crank_mjcf(h, integrator, solref, solimp, r, l, m_crank, m_rod, m_slider, gravity, **_):
    """MJCF of the slider-crank (joints O, A, P; connect B)."""
    rod = _body(
        "rod",
        (r, 0.0),
        ("A", "hinge", "0 0 1"),
        (l / 2, m_rod, m_rod * l**2 / 12),
        _site("rod_end", l),
    )
    crank = _body(
        "crank", (0.0, 0.0), ("O", "hinge", "0 0 1"), (r / 2, m_crank, m_crank * r**2 / 12), rod
    )
    slider = _body(
        "slider",
        (0.0, 0.0),
        ("P", "slide", "1 0 0"),
        (0.0, m_slider, SLIDER_J),
        _site("slider_centre", 0.0),
    )
    return _mjcf(
        "slider_crank",
        [crank, slider],
        [("B", "rod_end", "slider_centre")],
        gravity,
        h,
        integrator,
        solref,
        solimp,
    )


def n_four_bar_mjcf(
    h, integrator, solref, solimp, N, length, mass, gravity, rigid_coupler=False, **_
):
    """MJCF of the N-four-bar (hinges A_k, B_j c_j; connects B_{j+1} c_j), or its rigid-coupler
    form."""
    L, J = length, mass * length**2 / 12
    hinge = "0 0 1"
    tips = [_site(f"tip{k}", L) for k in range(N + 1)]
    if rigid_coupler:
        bar = _body(
            "coupler",
            (L, 0.0),
            ("B0", "hinge", hinge),
            (N * L / 2, N * mass, N * mass * (N * L) ** 2 / 12),
            "".join(_site(f"c{k}", k * L) for k in range(1, N + 1)),
        )
        children = [bar] + [""] * N
        connects = [(f"B{k}", f"tip{k}", f"c{k}") for k in range(1, N + 1)]
    else:
        children = [
            _body(
                f"coupler{j}",
                (L, 0.0),
                (f"B{j}c{j}", "hinge", hinge),
                (L / 2, mass, J),
                _site(f"c{j}_end", L),
            )
            for j in range(N)
        ] + [""]
        connects = [(f"B{j + 1}c{j}", f"tip{j + 1}", f"c{j}_end") for j in range(N)]
    cranks = [
        _body(
            f"crank{k}",
            (k * L, 0.0),
            (f"A{k}", "hinge", hinge),
            (L / 2, mass, J),
            tips[k] + children[k],
        )
        for k in range(N + 1)
    ]
    return _mjcf(f"n_four_bar_{N}", cranks, connects, gravity, h, integrator, solref, solimp)


def _chains(model, case):
    """Per jaxmb body (in `body_names` order): the MuJoCo body id and the hinge joints from the
    ground to it (their angles add up to jaxmb's phi)."""
    chains = []
    for name in case["body_names"]:
        bid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
        joints, b = [], bid
        while b > 0:
            joints += [
                j
                for j in range(model.njnt)
                if model.jnt_bodyid[j] == b and model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE
            ]
            b = model.body_parentid[b]
        chains.append((bid, [int(model.jnt_qposadr[j]) for j in joints]))
    return chains


def mujoco_state(model, case, q0, qd0):
    """(qpos, qvel) from jaxmb (q, qd): hinge angles are differences of absolute angles, the slide
    is the slider's x; rates likewise."""
    q0, qd0 = np.reshape(q0, (-1, 3)), np.reshape(qd0, (-1, 3))
    qpos, qvel = np.zeros(model.nq), np.zeros(model.nv)
    parent_phi = {}
    for k, (bid, _) in enumerate(_chains(model, case)):
        parent_phi[bid] = (q0[k, 2], qd0[k, 2])
    for k, (bid, _) in enumerate(_chains(model, case)):
        for j in range(model.njnt):
            if model.jnt_bodyid[j] != bid:
                continue
            a, v = int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j])
            if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_SLIDE:
                qpos[a], qvel[v] = q0[k, 0], qd0[k, 0]
            else:
                up = parent_phi.get(int(model.body_parentid[bid]), (0.0, 0.0))
                qpos[a], qvel[v] = q0[k, 2] - up[0], qd0[k, 2] - up[1]
    return qpos, qvel


def jaxmb_coordinates(model, case, qpos):
    """(T, n) jaxmb coordinates of saved qpos (T, nq): centre of mass and summed hinge angles."""
    data = mujoco.MjData(model)
    chains = _chains(model, case)
    out = np.zeros((len(qpos), 3 * len(chains)))
    for t, qp in enumerate(qpos):
        data.qpos[:] = qp
        mujoco.mj_kinematics(model, data)
        for k, (bid, adr) in enumerate(chains):
            out[t, 3 * k : 3 * k + 2] = data.xipos[bid, :2]
            out[t, 3 * k + 2] = qp[adr].sum() if adr else 0.0
    return out


def rollout(mx, steps_per_save, saves):
    """jit(scan over saves of scan over steps of vmap(mjx.step)): (qpos, qvel) -> (saves, B, nq)."""
    step = jax.vmap(mjx.step, in_axes=(None, 0))

    def run(qpos, qvel):
        data = jax.vmap(lambda p, v: mjx.make_data(mx).replace(qpos=p, qvel=v))(qpos, qvel)

        def inner(d, _):
            return step(mx, d), None

        def outer(d, _):
            d, _ = jax.lax.scan(inner, d, None, length=steps_per_save)
            return d, d.qpos

        _, saved = jax.lax.scan(outer, data, None, length=saves)
        return saved

    return jax.jit(run)


def _timed(fn, args, repeats):
    """(compile s, first (warm-up) run s, median run s, all timed run times, output)."""
    t = time.perf_counter()
    compiled = fn.lower(*args).compile()
    compile_s = time.perf_counter() - t
    t = time.perf_counter()
    jax.block_until_ready(compiled(*args))  # warm-up: XLA:CPU's first run can be far slower
    first_s = time.perf_counter() - t
    walls = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = jax.block_until_ready(compiled(*args))
        walls.append(time.perf_counter() - t)
    return compile_s, first_s, statistics.median(walls), walls, np.asarray(out)


def _model(case):
    solref, solimp = softness(case["softness"], case["h"])
    case.update(solref=solref, solimp=solimp)
    build = slider_crank_mjcf if case["model"] == "slider_crank" else n_four_bar_mjcf
    return mujoco.MjModel.from_xml_string(
        build(case["h"], case["integrator"], solref, solimp, **case["params"])
    )


def simulate(case, q0s, qd0s, repeats):
    """Run the batch of initial states (B, n) of one case; fills timing fields; returns (B-batch
    saved qpos (saves, B, nq), MuJoCo model)."""
    model = _model(case)
    steps_per_save = int(round(case["t1"] / SAMPLES / case["h"]))
    case["steps"] = steps_per_save * SAMPLES
    states = [mujoco_state(model, case, q0, qd0) for q0, qd0 in zip(q0s, qd0s)]
    qpos, qvel = (jax.numpy.asarray(np.stack(x)) for x in zip(*states))
    fn = rollout(mjx.put_model(model), steps_per_save, SAMPLES)
    compile_s, first_s, wall, walls, saved = _timed(fn, (qpos, qvel), repeats)
    saved = np.concatenate([np.asarray(qpos)[None], saved])  # t = 0 first
    ok = bool(np.all(np.isfinite(saved)))
    case.update(
        compile_s=compile_s,
        first_run_s=first_s,
        wall_s=wall,
        wall_s_all=walls,
        ok=ok,
        error=None if ok else "non-finite state",
        ts=list(np.linspace(0.0, case["t1"], SAMPLES + 1)),
    )
    return saved, model


def slider_crank_case(t1, h, integrator="Euler", soft="stiff", omega0=OMEGA0):
    return dict(
        slider_crank_base(t1, omega0),
        name=f"slider_crank t1={t1:g} {integrator} h={h:g} {soft}",
        h=h,
        integrator=integrator,
        softness=soft,
    )


def n_four_bar_case(N, t1, h, integrator="Euler", soft="stiff", rigid_coupler=False):
    kind = " rigid_coupler" if rigid_coupler else ""
    return dict(
        n_four_bar_base(N, t1, rigid_coupler),
        name=f"n_four_bar N={N}{kind} t1={t1:g} {integrator} h={h:g} {soft}",
        h=h,
        integrator=integrator,
        softness=soft,
    )


def single(case, repeats):
    """A single trajectory (batch of 1): fills the case, q in jaxmb coordinates."""
    saved, model = simulate(case, [case["q0"]], [case["qd0"]], repeats)
    case["q"] = jaxmb_coordinates(model, case, saved[:, 0]).tolist()
    return case


def batch_states(size, seed=0):
    """(theta0, omega0, q0, qd0) of `size` slider-cranks: theta ~ U[0, 2 pi), omega ~ U[-20, 20]."""
    rng = np.random.default_rng(seed)
    theta = rng.uniform(0.0, 2 * np.pi, size)
    omega = rng.uniform(-OMEGA_RANGE, OMEGA_RANGE, size)
    states = [
        slider_crank_state(a, w, SLIDER_CRANK["r"], SLIDER_CRANK["l"]) for a, w in zip(theta, omega)
    ]
    q0, qd0 = (np.stack(x) for x in zip(*states))
    return theta, omega, q0, qd0


def batch(size, t1, h, integrator, soft, repeats, seed=0):
    """The batch case: `size` slider-cranks from `batch_states`, MEMBERS of them saved whole."""
    theta, omega, q0, qd0 = batch_states(size, seed)
    case = slider_crank_case(t1, h, integrator, soft)
    case.update(
        name=f"slider_crank batch={size} t1={t1:g} {integrator} h={h:g} {soft}",
        batch=size,
        seed=seed,
        theta0=theta.tolist(),
        omega0=omega.tolist(),
        q0=q0.tolist(),
        qd0=qd0.tolist(),
    )
    saved, model = simulate(case, q0, qd0, repeats)
    members = np.linspace(0, size - 1, MEMBERS).astype(int).tolist()
    case["members"] = members
    case["member_q"] = [jaxmb_coordinates(model, case, saved[:, k]).tolist() for k in members]
    case["q_final"] = jaxmb_coordinates(model, case, saved[-1]).tolist()
    return case


def run(quick=False, repeats=REPEATS, size=None):
    """Every case; returns the JSON dict documented at the top of this file."""
    load_start = os.getloadavg()  # 1, 5, 15 min: other processes on the machine skew times
    size = size or (256 if quick else BATCH)
    hs = (1e-3,) if quick else (1e-3, 1e-4)
    singles = [
        slider_crank_case(1.0, h, integ, soft)
        for h in hs
        for integ in ("Euler", "RK4")
        for soft in ("default", "stiff")
    ]
    singles += [n_four_bar_case(N, 1.0, 1e-3) for N in ((1, 10) if quick else (1, 10, 50))]
    singles += [n_four_bar_case(10, 1.0, 1e-3, rigid_coupler=True)]
    if not quick:
        singles += [n_four_bar_case(1, 1.0, 1e-4, "RK4")]
    cases = [single(c, repeats) for c in singles]
    batches = [batch(size, 1.0, 1e-3, integ, "stiff", repeats) for integ in ("Euler", "RK4")]
    return dict(
        engine="mjx",
        version=mujoco.__version__,
        jax=jax.__version__,
        device=str(jax.devices()[0]),
        quick=quick,
        machine=f"{platform.machine()} {platform.processor()} {os.cpu_count()} cpus",
        python=platform.python_version(),
        repeats=repeats,
        cases=cases,
        batches=batches,
        loadavg=[load_start, os.getloadavg()],
    )


def table(result):
    rows = [f"{'case':60s} {'ok':>3s} {'compile s':>9s} {'wall ms':>10s} {'steps':>6s}"]
    for c in result["cases"] + result["batches"]:
        rows.append(
            f"{c['name']:60s} {'yes' if c['ok'] else 'NO':>3s} {c['compile_s']:9.2f} "
            f"{1e3 * c['wall_s']:10.2f} {c['steps']:6d}"
        )
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="batch of 256 and fewer cases")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="timed runs per case (median)")
    parser.add_argument(
        "--batch", type=int, default=None, help="batch size (default 1024, 256 with --quick)"
    )
    parser.add_argument(
        "--out", default=None, help="JSON path (default benchmarks/results/peer_mjx[_quick].json)"
    )
    args = parser.parse_args()
    result = run(args.quick, args.repeats, args.batch)
    print(
        f"MuJoCo XLA {result['version']} (jax {result['jax']}, {result['device']}), "
        f"{result['machine']}"
    )
    print(table(result))
    write_result("mjx", args.quick, result, args.out)


if __name__ == "__main__":
    main()
