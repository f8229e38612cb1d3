"""What the peer scripts share (pure numpy, no engine): the model numbers, the closed-form
consistent initial states in jaxmb coordinates, the fields every case records, where results go.

The numbers are the `build()` defaults of `jaxmb/models/slider_crank.py` and
`jaxmb/models/n_four_bar.py`; `compare_jaxmb.py` rebuilds the jaxmb model from a case's `params`
and checks the recorded initial state against it, so a mismatch here cannot go unnoticed.
"""

import json
import os

import numpy as np

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results")
# jaxmb/models/slider_crank.py build() defaults; J = m L^2 / 12, slider J = 1e-3
SLIDER_CRANK = dict(
    r=0.1, l=0.3, m_crank=1.0, m_rod=2.0, m_slider=0.5, theta0=0.3, gravity=(0.0, -9.81)
)
SLIDER_J = 1e-3
OMEGA0 = 20.0  # initial crank rate of the single slider-crank trajectory (rad/s): it turns over
# jaxmb/models/n_four_bar.py: IFToMM A02, cranks vertical, B_0 at 1 m/s along +x
N_FOUR_BAR = dict(angle0=np.pi / 2, length=1.0, mass=1.0, gravity=(0.0, -9.81))
RATE0 = -1.0  # every crank's initial rate (rad/s): -1 / L
SAMPLES = 100  # sample intervals per trajectory


def slider_crank_state(theta, omega, r, l):
    """(q, qd) of jaxmb slider_crank.configuration(theta, r, l) with the crank turning at omega.

    A = r (cos, sin) theta, x_B = a_x + s, s = sqrt(l^2 - a_y^2), beta = atan2(-a_y, s);
    rates: dA = r omega (-sin, cos), dx_B = da_x - a_y da_y / s, dbeta = -da_y / s."""
    ax, ay = r * np.cos(theta), r * np.sin(theta)
    s = np.sqrt(l**2 - ay**2)
    xb, beta = ax + s, np.arctan2(-ay, s)
    dax, day = -r * omega * np.sin(theta), r * omega * np.cos(theta)
    dxb, dbeta = dax - ay * day / s, -day / s
    q = [ax / 2, ay / 2, theta, (ax + xb) / 2, ay / 2, beta, xb, 0.0, 0.0]
    qd = [dax / 2, day / 2, omega, (dax + dxb) / 2, day / 2, dbeta, dxb, 0.0, 0.0]
    return np.array(q), np.array(qd)


def n_four_bar_state(N, angle, rate, length, rigid_coupler=False):
    """(q, qd) of jaxmb n_four_bar.configuration / velocity: cranks at `angle` turning at `rate`,
    couplers horizontal and translating with the crank tips."""
    L = length
    u = np.array([np.cos(angle), np.sin(angle)])
    du = np.array([-np.sin(angle), np.cos(angle)]) * rate
    q = [[k * L + L / 2 * u[0], L / 2 * u[1], angle] for k in range(N + 1)]
    qd = [[L / 2 * du[0], L / 2 * du[1], rate]] * (N + 1)
    centres = [N * L / 2] if rigid_coupler else [(j + 0.5) * L for j in range(N)]
    q += [[c + L * u[0], L * u[1], 0.0] for c in centres]
    qd += [[L * du[0], L * du[1], 0.0]] * len(centres)
    return np.array(q).ravel(), np.array(qd).ravel()


def slider_crank_base(t1, omega0=OMEGA0, theta0=None):
    """The engine-independent fields of a free slider-crank case (crank at theta0, rate omega0)."""
    params = dict(SLIDER_CRANK) if theta0 is None else dict(SLIDER_CRANK, theta0=float(theta0))
    q0, qd0 = slider_crank_state(params["theta0"], omega0, params["r"], params["l"])
    return dict(
        model="slider_crank",
        params=params,
        omega0=omega0,
        body_names=["crank", "rod", "slider"],
        q0=q0.tolist(),
        qd0=qd0.tolist(),
        t1=t1,
    )


def n_four_bar_base(N, t1, rigid_coupler=False):
    """The engine-independent fields of an N-four-bar case (IFToMM A02 start)."""
    params = dict(N_FOUR_BAR, N=N, rigid_coupler=rigid_coupler)
    q0, qd0 = n_four_bar_state(N, params["angle0"], RATE0, params["length"], rigid_coupler)
    couplers = ["coupler"] if rigid_coupler else [f"coupler{j}" for j in range(N)]
    return dict(
        model="n_four_bar",
        params=params,
        rate0=RATE0,
        body_names=[f"crank{k}" for k in range(N + 1)] + couplers,
        q0=q0.tolist(),
        qd0=qd0.tolist(),
        t1=t1,
    )


def write_result(engine, quick, result, path=None):
    """Write a peer script's result to `path` (default benchmarks/results/peer_<engine>[_quick]
    .json, the file bench_peers.py reads) and say so."""
    path = path or os.path.join(RESULTS, f"peer_{engine}{'_quick' if quick else ''}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f)
    print(f"wrote {path}")
    return path
