"""The command line (end to end, in a subprocess) and the examples at reduced size.

References: the seed-001 values printed by `jaxmb report` (ranks 17/4/20, p = 2, the solvable
pairs of section 4.2); a saved trajectory satisfies the model's constraints; the example's
unique reactions agree across the four formulations while the others do not.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "jaxmb.cli", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=600)
    return proc


def test_report_builtin_mobile_robot():
    proc = run_cli("report", "mobile_robot", "--group", "rear axle=W3,W4")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "rank C = 20  (holonomic 17, nonholonomic 4)" in out
    assert "redundancy p = 2, dof = 1" in out
    verdicts = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] in "A B C D E F G H driver W1 W2 W3 W4 W5".split():
            verdicts[parts[0]] = parts[1] == "unique"
    assert {k for k, v in verdicts.items() if v} == {"A", "D", "E", "F", "G", "H", "driver", "W5"}
    assert "group 'rear axle' (W3+W4)" in out


MODEL_FILE = textwrap.dedent('''
    import jaxmb as mb

    def build():
        m = mb.Mechanism()
        rod = m.body("rod", mass=1.0, inertia=1.0 / 12, q=(0.4, -0.1, -0.3))
        m.add(mb.Revolute("pivot", m.ground, rod, s_i=(0.0, 0.0), s_j=(-0.5, 0.0)))
        m.add(mb.Gravity((0.0, -9.81)))
        return m.build()
''')


def test_report_and_simulate_python_model_file(tmp_path):
    path = tmp_path / "pendulum.py"
    path.write_text(MODEL_FILE)
    proc = run_cli("report", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "redundancy p = 0, dof = 1" in proc.stdout
    assert "max |Phi" in proc.stdout
    out = tmp_path / "traj.npz"
    proc = run_cli("simulate", str(path), "--t1", "1.0", "--out", str(out), "--num-saves", "11")
    assert proc.returncode == 0, proc.stderr
    data = np.load(out)
    q = data["q"]
    assert q.shape == (11, 3)
    # the pivot stays on the ground origin: r - A(phi) (0.5, 0) = 0 (assembled q0, then simulated)
    x, y, phi = q[:, 0], q[:, 1], q[:, 2]
    assert np.max(np.abs(x - 0.5 * np.cos(phi))) < 1e-8
    assert np.max(np.abs(y - 0.5 * np.sin(phi))) < 1e-8
    assert np.ptp(phi) > 0.1  # it swings


def test_cli_errors_name_the_problem(tmp_path):
    proc = run_cli("report", "no_such_model")
    assert proc.returncode != 0 and "neither a built-in" in proc.stderr
    bad = tmp_path / "bad.py"
    bad.write_text("x = 1\n")
    proc = run_cli("report", str(bad))
    assert proc.returncode != 0 and "defines no function build()" in proc.stderr
    proc = run_cli("simulate", "slider_crank", "--t1", "0.1", "--out", str(tmp_path / "x.txt"))
    assert proc.returncode != 0 and ".npz or .csv" in proc.stderr


@pytest.fixture(scope="module")
def robot_example(tmp_path_factory):
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        import mobile_robot as example
    finally:
        sys.path.pop(0)
    out = tmp_path_factory.mktemp("robot")
    return example.main(["--quick", "--out", str(out)]), out


def test_mobile_robot_example_quick(robot_example):
    """examples/mobile_robot.py --quick: the four methods on one trajectory (the separately
    integrated variants are tested in test_dynamics.py); unique reactions agree to 1e-8
    relative, non-unique ones differ by O(1); both figures are written."""
    from jaxmb.studies import variant_spread

    result, out = robot_example
    spread = variant_spread(result, result["model"].pair_names)
    for name in ("A", "D", "E", "F", "G", "H", "driver", "W5"):
        assert spread[name] < 1e-8, name
    for name in ("B", "C", "W1", "W2", "W3", "W4"):
        assert spread[name] > 1e-2, name
    for fig in ("robot_paths.png", "robot_reactions.png"):
        assert (out / fig).stat().st_size > 10_000
