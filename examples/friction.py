"""Joint friction (issue 21): what friction costs a driven slider-crank, and why the friction of
a redundant linkage depends on the stiffness of its joints.

    python examples/friction.py [--quick] [--out out]

1. The slider-crank driven at constant crank speed (120 rpm) with friction in every pair: pins
   O, A, B (`mb.RevoluteFriction`, journal radius 10 mm, mu = 0.1) and the guide P
   (`mb.TranslationalFriction`, slider 50 mm long, mu = 0.15). `mb.inverse_dynamics` gives the
   motor torque over one turn without and with friction and the power each pair dissipates.
   Energy balance: the kinetic and potential energy are periodic, so the motor's work over a
   turn equals the energy the friction dissipates (checked here):
   slider_crank_friction.png and a table.
2. The triple-crank parallelogram (`jaxmb.models.parallelogram`: one redundant crank, no
   revolute reaction unique) with friction in its six pins, swung by a motor on crank 1
   (theta1 = -90 deg + 57 deg cos(2 pi t)). How the three cranks share the coupler's load is
   set by the stiffness of the joints (`mb.Compliance`), and with it the pin loads, the
   friction and the motor torque: a stiff, an equally stiff and a compliant middle crank give
   different torques and losses. The minimum-norm multipliers, one arbitrary sharing among
   infinitely many, are refused with an error naming the pair: parallelogram_friction.png and
   a table.

Coulomb's law is regularized: T = mu a N tanh(a s_dot / v_s) with v_s = 1 mm/s, far below the
peak slip speeds here (0.03 to 1.3 m/s), so the friction is Coulomb's except within a few v_s of a
reversal (`jaxmb.elements.friction`). `main(argv)` returns every number it prints.
"""

import argparse
import os
import time

import equinox as eqx
import jax.numpy as jnp
import numpy as np

import jaxmb as mb  # first: float64 and the XLA CPU flags
from jaxmb import plotting
from jaxmb.cli import error_line
from jaxmb.models import parallelogram, slider_crank

G = 9.81
VELOCITY_SCALE = 1e-3  # m/s, the regularization's (module docstring)
ENERGY_RTOL = 1e-9
"""Cycle energy balance, relative to the motor's gross work: the sums below are the periodic
trapezoidal rule, exact to round-off for the smooth periodic dE/dt (the sharp friction
reversals appear in the motor's power and in the friction's alike, sample by sample)."""


def shown(x, digits=4):
    """x rounded for printing, without the sign of a round-off zero (-0.0000)."""
    return round(float(x), digits) + 0.0


# ----- one period of a driven model ---------------------------------------------------------
def cycle(model, period, samples, motor_body, method="min_norm"):
    """One period of the driven `model` by `mb.inverse_dynamics` at `samples` equally spaced
    instants (t = period left out: the sums are the periodic trapezoidal rule).

    The friction element k dissipates P_k = T_k s_dot_k = -Q_k^T qd (Q_k its generalized
    force, `Reactions.friction`); the motor (pair "motor" on `motor_body`) delivers tau omega.

    **Returns:** dict with `ts`, `q`, `qd`, `rx` (the Reactions), `torque` (tau, N m),
    `speed` (omega of `motor_body`, rad/s), `power` (samples x elements, W), `work` (the
    motor's work over the period, J), `loss` (J per element), `gross` (integral of |tau omega|).
    """
    dt = period / samples
    ts = jnp.arange(samples, dtype=jnp.float64) * dt
    traj, rx = mb.inverse_dynamics(model, ts, method=method)
    qd = np.asarray(traj.qd)
    torque = np.asarray(rx.on_body("motor", motor_body)[2])
    speed = qd[:, 3 * model.body_names.index(motor_body) + 2]
    power = (
        -np.einsum("tkn,tn->tk", np.asarray(rx.friction_array), qd)
        if model.friction
        else np.zeros((samples, 0))
    )
    return dict(
        ts=np.asarray(ts),
        q=np.asarray(traj.q),
        qd=qd,
        rx=rx,
        torque=torque,
        speed=speed,
        power=power,
        work=float(np.sum(torque * speed) * dt),
        loss=power.sum(axis=0) * dt,
        gross=float(np.sum(np.abs(torque * speed)) * dt),
    )


def check_energy_balance(c, label):
    """Motor work over a period = energy the friction dissipates (the kinetic and potential
    energy are periodic), and each element dissipates (P_k >= 0 at every instant)."""
    mismatch = c["work"] - float(np.sum(c["loss"]))
    if abs(mismatch) > ENERGY_RTOL * c["gross"]:
        raise AssertionError(
            f"{label}: motor work {c['work']:.12g} J differs from the friction "
            f"loss {np.sum(c['loss']):.12g} J by {mismatch:.3g} J"
        )
    if np.any(c["power"] < -ENERGY_RTOL * np.abs(c["power"]).max(initial=0.0)):
        raise AssertionError(f"{label}: a friction element delivers power")
    return mismatch


# ----- 1. the slider-crank ------------------------------------------------------------------
CRANK, ROD = 0.1, 0.3  # m
CRANK_SPEED = 4 * np.pi  # rad/s (120 rpm)
SLIDER_PAIRS = ("O", "A", "B", "P")


def slider_crank_model(
    mu_pin=0.1,
    mu_guide=0.15,
    radius=0.01,
    length=0.05,
    velocity_scale=VELOCITY_SCALE,
    omega=CRANK_SPEED,
):
    """`jaxmb.models.slider_crank` (crank 1 kg, rod 2 kg, slider 0.5 kg, gravity) driven at
    crank speed `omega` from theta = 0, with `mb.RevoluteFriction` "fO", "fA", "fB" (mu_pin,
    journal `radius`) and `mb.TranslationalFriction` "fP" (mu_guide, slider `length`). Every
    number is data: mu = 0 (no friction) reuses the compiled programs."""
    m = mb.Mechanism()
    q_crank, q_rod, q_slider = slider_crank.configuration(jnp.asarray(0.0), CRANK, ROD)
    crank = m.body("crank", mass=1.0, inertia=1.0 * CRANK**2 / 12, q=q_crank)
    rod = m.body("rod", mass=2.0, inertia=2.0 * ROD**2 / 12, q=q_rod)
    slider = m.body("slider", mass=0.5, inertia=1e-3, q=q_slider)
    m.add(mb.Revolute("O", m.ground, crank, s_i=(0.0, 0.0), s_j=(-CRANK / 2, 0.0)))
    m.add(mb.Revolute("A", crank, rod, s_i=(CRANK / 2, 0.0), s_j=(-ROD / 2, 0.0)))
    m.add(mb.Revolute("B", rod, slider, s_i=(ROD / 2, 0.0), s_j=(0.0, 0.0)))
    m.add(mb.Translational("P", slider, m.ground, s_i=(0.0, 0.0), s_j=(0.0, 0.0), v=(0.0, 1.0)))
    m.add(mb.RelativeAngleDriver("motor", m.ground, crank, f=mb.drive.Linear(omega)))
    m.add(mb.Gravity((0.0, -G)))
    for pair in SLIDER_PAIRS[:3]:
        m.add(
            mb.RevoluteFriction(
                f"f{pair}", pair, mu=mu_pin, radius=radius, velocity_scale=velocity_scale
            )
        )
    m.add(
        mb.TranslationalFriction(
            "fP", "P", mu=mu_guide, length=length, velocity_scale=velocity_scale
        )
    )
    return m.build()


def slider_crank_study(samples=720):
    """One turn without (mu = 0) and with friction: {label: cycle}, energy balance checked."""
    period = 2 * np.pi / CRANK_SPEED
    runs = {
        "no friction": cycle(slider_crank_model(0.0, 0.0), period, samples, "crank"),
        "friction": cycle(slider_crank_model(), period, samples, "crank"),
    }
    for label, c in runs.items():
        c["mismatch"] = check_energy_balance(c, f"slider-crank, {label}")
    return runs


def print_slider_crank(runs):
    print("Slider-crank at 120 rpm, one turn (mb.inverse_dynamics): motor torque and energy")
    print(
        f"  {'':<13}{'mean torque':>12}{'peak |torque|':>15}{'motor work':>12}"
        f"{'friction loss':>15}{'work - loss':>13}"
    )
    for label, c in runs.items():
        print(
            f"  {label:<13}{shown(np.mean(c['torque'])):>10.4f} N m"
            f"{np.abs(c['torque']).max():>11.4f} N m{shown(c['work']):>10.4f} J"
            f"{np.sum(c['loss']):>13.4f} J{c['mismatch']:>11.1e} J"
        )
    c = runs["friction"]
    total = float(np.sum(c["loss"]))
    print(
        "  friction loss per turn by pair: "
        + ", ".join(
            f"{pair} {loss:.4f} J ({100 * loss / total:.0f} %)"
            for pair, loss in zip(SLIDER_PAIRS, c["loss"])
        )
    )


def closed(t, x, period):
    """(t, x) with the period's end appended (x there equals x at t = 0): a closed curve."""
    return np.append(t, t[0] + period), np.concatenate([x, x[:1]])


def plot_slider_crank(runs, path):
    """Motor torque against crank angle without and with friction; friction power per pair."""
    fig, axes = plotting.new_figure(1, 2, size=(6.0, 4.2))
    for label, c in runs.items():
        angle, torque = closed(np.degrees(c["ts"] * CRANK_SPEED), c["torque"], 360.0)
        axes[0, 0].plot(
            angle,
            torque,
            lw=1.5 if label == "friction" else 1.0,
            ls="-" if label == "friction" else "--",
            label=f"{label}: mean {shown(np.mean(c['torque']), 3):.3f} N m",
        )
    c = runs["friction"]
    for k, pair in enumerate(SLIDER_PAIRS):
        angle, power = closed(np.degrees(c["ts"] * CRANK_SPEED), c["power"][:, k], 360.0)
        axes[0, 1].plot(angle, power, label=f"{pair}: {c['loss'][k]:.3f} J per turn")
    axes[0, 0].set_ylabel("motor torque (N m)")
    axes[0, 0].set_title("Slider-crank at 120 rpm: motor torque", fontsize=10)
    axes[0, 1].set_ylabel("friction power (W)")
    axes[0, 1].set_title("Power dissipated in each pair", fontsize=10)
    for ax in axes[0]:
        ax.set_xlabel("crank angle (deg)")
        ax.set_xticks(np.arange(0, 361, 60))
        ax.grid(True, color="0.9")
        ax.legend(fontsize=8)
    return plotting.save_figure(fig, path)


# ----- 2. the redundant triple-crank parallelogram ------------------------------------------
SWING_CENTRE, SWING_AMPLITUDE, SWING_OMEGA = -np.pi / 2, 1.0, 2 * np.pi  # rad, rad, rad/s
PIN_RADII = {"1": 0.005, "2": 0.005, "3": 0.02}
"""Journal radius (m) of both pins of crank k: the middle crank runs in larger bearings."""
PINS = ("O1", "O2", "O3", "A1", "A2", "A3")
DEFAULT_STIFFNESS = 1e8  # N/m, every pin but those of the middle crank
STIFFNESS = {"stiff middle crank": 1e10, "equal stiffness": 1e8, "compliant middle crank": 1e6}
"""Stiffness (N/m) of the middle crank's pins O3 and A3 in each distribution."""


def parallelogram_model(mu=0.2, radii=PIN_RADII, velocity_scale=VELOCITY_SCALE):
    """`jaxmb.models.parallelogram` (L = 0.2 m, d = 0.4 m; cranks 0.5 kg, coupler 1 kg;
    gravity) without its holding motor, swung by the motor "motor" on crank 1 (theta1 =
    SWING_CENTRE + SWING_AMPLITUDE cos(SWING_OMEGA t)), with `mb.RevoluteFriction` "fO1" ...
    "fA3" in its six pins (mu, journal radius `radii[k]` for crank k)."""
    L, d = 0.2, 0.4
    m = mb.Mechanism()
    q = parallelogram.configuration(SWING_CENTRE + SWING_AMPLITUDE, L, d).reshape(4, 3)
    names, masses, lengths = (
        ("crank1", "crank2", "crank3", "coupler"),
        (0.5, 0.5, 0.5, 1.0),
        (L, L, L, d),
    )
    bodies = {
        nm: m.body(nm, mass=mm, inertia=mm * ll**2 / 12, q=qq)
        for nm, mm, ll, qq in zip(names, masses, lengths, q)
    }
    for k, f in parallelogram.PIVOTS.items():
        m.add(
            mb.Revolute(f"O{k}", m.ground, bodies[f"crank{k}"], s_i=(f * d, 0.0), s_j=(-L / 2, 0.0))
        )
    for k, f in parallelogram.PIVOTS.items():
        m.add(
            mb.Revolute(
                f"A{k}",
                bodies[f"crank{k}"],
                bodies["coupler"],
                s_i=(L / 2, 0.0),
                s_j=((f - 0.5) * d, 0.0),
            )
        )
    m.add(
        mb.RelativeAngleDriver(
            "motor",
            m.ground,
            bodies["crank1"],
            f=mb.drive.Harmonic(SWING_AMPLITUDE, SWING_OMEGA, offset=SWING_CENTRE),
        )
    )
    m.add(mb.Gravity((0.0, -G)))
    for pin in PINS:
        m.add(
            mb.RevoluteFriction(
                f"f{pin}", pin, mu=mu, radius=radii[pin[1]], velocity_scale=velocity_scale
            )
        )
    return m.build()


def compliance(middle):
    """`mb.Compliance`: stiffness `middle` (N/m) in the middle crank's pins O3 and A3,
    DEFAULT_STIFFNESS elsewhere (the same pairs listed every time: one compiled program)."""
    return mb.Compliance({"O3": middle, "A3": middle}, default=DEFAULT_STIFFNESS)


def pin_loads(model, rx):
    """|F| (N) of each pin over time: the norm of its two multipliers."""
    lam = np.asarray(rx.lam)
    return {pin: np.linalg.norm(lam[:, model.rows(pin)], axis=1) for pin in PINS}


def parallelogram_study(samples=720):
    """One swing period per stiffness distribution (and without friction, where the sharing
    does not change the motor torque), energy balance checked; then the refusal of
    method="min_norm". Returns dict(model, runs {label: cycle}, refusal (the error line))."""
    period = 2 * np.pi / SWING_OMEGA
    model = parallelogram_model()
    runs = {
        "no friction": cycle(
            parallelogram_model(mu=0.0), period, samples, "crank1", compliance(1e8)
        )
    }
    for label, k in STIFFNESS.items():
        runs[label] = cycle(model, period, samples, "crank1", compliance(k))
    for label, c in runs.items():
        c["mismatch"] = check_energy_balance(c, f"parallelogram, {label}")
        c["pin_loads"] = pin_loads(model, c["rx"])
    c = runs["equal stiffness"]
    k = samples // 4  # mid-swing, crank 1 at its largest speed
    try:  # inverse_dynamics, reactions and simulate refuse it alike
        mb.friction_forces(model, c["q"][k], c["qd"][k], c["ts"][k], method="min_norm")
    except eqx.EquinoxRuntimeError as err:
        refusal = error_line(err)
    else:
        raise AssertionError("method='min_norm' was not refused for the redundant linkage")
    return dict(model=model, runs=runs, refusal=refusal)


def print_parallelogram(result):
    print(
        "Triple-crank parallelogram swung by a motor (one period, mb.inverse_dynamics with "
        "mb.Compliance):"
    )
    print(
        f"  {'':<24}{'O3, A3 (N/m)':>13}{'peak |torque|':>15}{'motor work':>12}"
        f"{'loss in O3+A3':>15}{'peak |F| O1':>13}{'peak |F| O3':>13}"
    )
    for label, c in result["runs"].items():
        k = f"{STIFFNESS[label]:.0e}" if label in STIFFNESS else "1e+08"
        loads = c["pin_loads"]
        middle = float(np.sum(c["loss"][[PINS.index("O3"), PINS.index("A3")]]))
        print(
            f"  {label:<24}{k:>13}{np.abs(c['torque']).max():>11.4f} N m"
            f"{shown(c['work']):>10.4f} J{middle:>13.4f} J{loads['O1'].max():>11.3f} N"
            f"{loads['O3'].max():>11.3f} N"
        )


def plot_parallelogram(result, path):
    """Motor torque over the swing per stiffness distribution; pin loads at O1 and O3 (the
    sharing); the energy each crank's pins dissipate per period."""
    runs = result["runs"]
    period = 2 * np.pi / SWING_OMEGA
    fig, axes = plotting.new_figure(1, 3, size=(5.0, 4.2))
    colours = dict(zip(runs, ("0.5", "tab:red", "tab:blue", "tab:green")))
    for label, c in runs.items():
        axes[0, 0].plot(
            *closed(c["ts"], c["torque"], period),
            color=colours[label],
            ls="--" if label == "no friction" else "-",
            label=f"{label}: {shown(c['work'], 3):.3f} J per period",
        )
        if label != "no friction":
            axes[0, 1].plot(
                *closed(c["ts"], c["pin_loads"]["O1"], period), color=colours[label], ls="--"
            )
            axes[0, 1].plot(
                *closed(c["ts"], c["pin_loads"]["O3"], period), color=colours[label], label=label
            )
    width = 0.25
    cranks = ("1", "2", "3")
    for j, label in enumerate(list(runs)[1:]):
        loss = runs[label]["loss"]
        per_crank = [loss[PINS.index(f"O{k}")] + loss[PINS.index(f"A{k}")] for k in cranks]
        axes[0, 2].bar(
            np.arange(3) + (j - 1) * width, per_crank, width, color=colours[label], label=label
        )
    low, high = axes[0, 0].get_ylim()
    axes[0, 0].set_ylim(low, high + 0.7 * (high - low))  # room for the legend
    axes[0, 0].set_title("Motor torque (crank 1)", fontsize=10)
    axes[0, 0].set_ylabel("N m")
    axes[0, 1].set_title("Pin loads |F|: O3 (solid), O1 (dashed)", fontsize=10)
    axes[0, 1].set_ylabel("N")
    for ax in axes[0, :2]:
        ax.set_xlabel("t (s)")
    axes[0, 2].set_title("Friction loss per period, pins of crank k", fontsize=10)
    axes[0, 2].set_xticks(np.arange(3), [f"crank {k}" for k in cranks])
    axes[0, 2].set_ylabel("J")
    for ax, loc in zip(axes[0], ("upper center", "upper center", "upper left")):
        ax.grid(True, color="0.9")
        ax.legend(fontsize=8, loc=loc)
    fig.suptitle(
        "Triple-crank parallelogram with pin friction (pins of crank 3: r = 20 mm, "
        "cranks 1, 2: 5 mm): the joints' stiffness shares the load, and so the friction",
        fontsize=10,
    )
    return plotting.save_figure(fig, path)


# ----- main ---------------------------------------------------------------------------------
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="72 instants per period, not 720")
    parser.add_argument("--out", default="out", help="folder for the figures (default out/)")
    args = parser.parse_args(argv)
    mb.log_progress()  # say on stderr what compiles, and for how long
    os.makedirs(args.out, exist_ok=True)
    samples = 72 if args.quick else 720
    start = time.perf_counter()
    print(f"slider-crank with friction: inverse dynamics at {samples} instants ...", flush=True)
    crank = slider_crank_study(samples)
    print_slider_crank(crank)
    print("redundant parallelogram with friction: Compliance-resolved loads ...", flush=True)
    linkage = parallelogram_study(samples)
    print_parallelogram(linkage)
    print(f"method='min_norm' refused: {linkage['refusal']}")
    figures = [
        plot_slider_crank(crank, os.path.join(args.out, "slider_crank_friction.png")),
        plot_parallelogram(linkage, os.path.join(args.out, "parallelogram_friction.png")),
    ]
    for path in figures:
        print(f"wrote {path}")
    print(f"({time.perf_counter() - start:.1f} s)")
    return dict(slider_crank=crank, parallelogram=linkage, figures=figures, samples=samples)


if __name__ == "__main__":
    main()
