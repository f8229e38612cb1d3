"""Seed 001 sections 4.3-4.4: the mobile robot's 20 s manoeuvre, simulated with the null-space
formulation and with the paper's three eliminations of redundant equations.

Writes out/robot_paths.png (like the paper's Fig. 3) and out/robot_reactions.png (Fig. 4) and
prints, per pair, whether its reaction is unique and how far the four variants disagree.

    python examples/mobile_robot.py            # the paper's 20 s run (about 1 minute)
    python examples/mobile_robot.py --quick    # 2 s, time-compressed, integrated once (tests)
"""

import argparse

import numpy as np

from jaxmb.studies import mobile_robot_study, variant_spread


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="2 s instead of 20 s, one integration shared by the variants",
    )
    parser.add_argument("--out", default="out", help="folder for the figures")
    args = parser.parse_args(argv)
    import jaxmb as mb

    mb.log_progress()  # say on stderr what compiles, and for how long
    t_end = 2.0 if args.quick else 20.0
    how = "one shared integration" if args.quick else "each integrated separately"
    print(f"Mobile robot, {t_end:g} s, four ways to resolve the redundancy ({how}) ...", flush=True)
    result = mobile_robot_study(
        t_end, num_saves=101 if args.quick else 401, out_dir=args.out, resimulate=not args.quick
    )
    model, report = result["model"], result["report"]
    print(report)

    trajectories = list(result["trajectories"].values())
    motion_spread = max(
        float(np.max(np.abs(np.asarray(t.q) - np.asarray(trajectories[0].q)))) for t in trajectories
    )
    print(
        f"\nlargest difference of q between the variants: {motion_spread:.2e}"
        " (adaptive steps: at the integration tolerance)"
    )
    spread = variant_spread(result, model.pair_names)
    flags = report.solvable_dict()
    print(f"{'pair':<8}{'reaction':<12}{'relative spread across variants':>34}")
    for name in model.pair_names:
        print(f"{name:<8}{'unique' if flags[name] else 'NOT unique':<12}{spread[name]:>34.2e}")
    for path in result["figures"]:
        print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
