"""The IFToMM spatial slider-crank in 3D: motion against Gonzalez's published solution, a 3D
drawing, the joints' reactions, and the planar four-bar of 3D revolutes (p = 3).

Writes into --out (default out/):

    spatial_slider_crank.png       the mechanism at t = 0 and 0.25 s (matplotlib 3D), the path
                                   of the crank pin B
    spatial_slider_crank_x.png     slider x over 5 s with Gonzalez's values at 0.5, 1, 2, 5 s

    python examples/spatial_slider_crank.py            # 5 s, 501 instants
    python examples/spatial_slider_crank.py --quick    # 1 s, 41 instants
"""

import argparse
import os


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()  # before JAX is imported: --help answers at once

    import jax.numpy as jnp
    import matplotlib.pyplot as plt
    import numpy as np

    import jaxmb as mb
    from jaxmb._bodies import quaternion as quat
    from jaxmb.models.spatial import four_bar as spatial_four_bar, slider_crank as ssc
    from jaxmb.plotting import save_figure

    os.makedirs(args.out, exist_ok=True)
    model, v0 = ssc.build(), ssc.initial_velocity()
    t1, count = (1.0, 41) if args.quick else (5.0, 501)
    print(f"simulating the IFToMM spatial slider-crank over {t1} s (compiling first) ...")
    ts = jnp.linspace(0.0, t1, count)
    traj = mb.simulate(model, model.q0, v0, t1, ts=ts)
    x = np.asarray(traj.q[:, 14])
    for t, ref in ssc.REFERENCE_SLIDER_X.items():
        if t <= t1:
            k = int(np.argmin(np.abs(np.asarray(ts) - t)))
            print(
                f"  slider x at {t:3.1f} s: {x[k]:.9f} m (Gonzalez {ref:.9f}, "
                f"difference {x[k] - ref:+.2e})"
            )

    rx = mb.reactions(model, traj.q[0], traj.qd[0], 0.0)
    for pair, body in (("A", "crank"), ("B", "rod"), ("C", "slider"), ("P", "slider")):
        force, moment = (np.asarray(v) for v in rx.on_body(pair, body))
        print(
            f"  {pair} on {body:6s}: force {np.round(force, 4)} N, moment about the centre "
            f"{np.round(moment, 5)} N m (unique: {bool(rx.solvable[pair])})"
        )

    four_bar = spatial_four_bar.build()
    print(mb.solvability(four_bar, four_bar.q0))

    def joints(q):
        """A, B, C and the crank, rod and slider centres at q."""
        qb = np.asarray(q).reshape(3, 7)
        A_c = np.asarray(quat.matrix(jnp.asarray(qb[0, 3:])))
        B = qb[0, :3] + A_c @ np.array([0.0, 0.0, 0.04])
        return ssc.A, B, qb[2, :3]

    fig = plt.figure(figsize=(7.0, 6.0))
    ax = fig.add_subplot(projection="3d")
    for k, style in ((0, "-"), (len(ts) // (4 * int(t1)) or 1, "--")):
        A, B, C = joints(traj.q[k])
        when = f"t = {float(ts[k]):.2f} s"
        ax.plot(*np.stack([A, B]).T, style, color="tab:blue", lw=3, label=f"crank, {when}")
        ax.plot(*np.stack([B, C]).T, style, color="tab:orange", lw=3, label=f"rod, {when}")
        ax.scatter(*C, color="tab:green", s=60, marker="s")
    path = np.stack([joints(q)[1] for q in traj.q])
    ax.plot(*path.T, ":", color="gray", label="path of B")
    ax.plot([-0.05, 0.4], [0, 0], [0, 0], color="black", lw=1, label="slider guide (x axis)")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_zlabel("z (m)")
    ax.set_title("IFToMM spatial slider-crank")
    ax.legend(fontsize="small", loc="upper left")
    save_figure(fig, os.path.join(args.out, "spatial_slider_crank.png"))

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    ax.plot(np.asarray(ts), x, label="jaxmb (defaults)")
    ref_t = [t for t in ssc.REFERENCE_SLIDER_X if t <= t1]
    ax.plot(ref_t, [ssc.REFERENCE_SLIDER_X[t] for t in ref_t], "o", label="Gonzalez (published)")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("slider x (m)")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)
    save_figure(fig, os.path.join(args.out, "spatial_slider_crank_x.png"))
    print(f"wrote {args.out}/spatial_slider_crank.png and spatial_slider_crank_x.png")


if __name__ == "__main__":
    main()
