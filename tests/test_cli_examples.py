"""The command line (end to end, in a subprocess) and the examples at reduced size.

References: the seed-001 values printed by `jaxmb report` (ranks 17/4/20, p = 2, the solvable
pairs of section 4.2); a saved trajectory satisfies the model's constraints; the example's
unique reactions agree across the four formulations while the others do not. The friction
example: the power balance at every instant (motor power = dE/dt from q, qd, qdd + the friction
law evaluated in numpy from the multipliers) and the Compliance condition n^T K^-1 lambda = 0
for the self-stress n = null(C^T) (numpy SVD).
"""

import os
import re
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmb as mb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-m", "jaxmb.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )
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


MODEL_FILE = textwrap.dedent("""
    import jaxmb as mb

    def build():
        m = mb.Mechanism()
        rod = m.body("rod", mass=1.0, inertia=1.0 / 12, q=(0.4, -0.1, -0.3))
        m.add(mb.Revolute("pivot", m.ground, rod, s_i=(0.0, 0.0), s_j=(-0.5, 0.0)))
        m.add(mb.Gravity((0.0, -9.81)))
        return m.build()
""")


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
    """The command's exit (`jaxmb.cli.run`: exit handlers, flushed output, no interpreter
    finalization) keeps sys.exit's conventions: a message and status 1, argparse's status 2,
    --help's 0 with its text."""
    proc = run_cli("report", "no_such_model")
    assert proc.returncode == 1 and proc.stderr.startswith(
        "jaxmb: model 'no_such_model' is neither a built-in"
    )
    proc = run_cli("no_such_command")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
    proc = run_cli("--help")
    assert proc.returncode == 0 and "simulate" in proc.stdout
    bad = tmp_path / "bad.py"
    bad.write_text("x = 1\n")
    proc = run_cli("report", str(bad))
    assert proc.returncode != 0 and "defines no function build()" in proc.stderr
    proc = run_cli("simulate", "slider_crank", "--t1", "0.1", "--out", str(tmp_path / "x.txt"))
    assert proc.returncode != 0 and ".npz or .csv" in proc.stderr


def test_cli_refuses_what_it_cannot_do_before_the_work(tmp_path):
    """An existing file as the demo's --out folder, an unknown pair in --group and a number
    of saved instants whose states would not fit in memory are refused at once, in one line
    naming the option and the cause (before any simulation; status 1)."""
    from jaxmb import cli

    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(SystemExit, match=r"--out .*a_file' is a file; give a folder"):
        cli.main(["demo", "--out", str(blocker)])
    with pytest.raises(SystemExit, match=r"--out .*a_file.*deeper'.*a_file' is a file, not a"):
        cli.main(["demo", "--out", str(blocker / "missing" / "deeper")])
    with pytest.raises(
        SystemExit,
        match=r"--group 'rear': the model has no pair 'W9' "
        r"\(pairs: .*\); did you mean W\d, W\d, W\d\?",
    ):
        cli.main(["report", "mobile_robot", "--group", "rear=W3,W9"])
    with pytest.raises(
        SystemExit,
        match=r"--num-saves 1000000000: the saved states would take "
        r"134\.1 GiB \(q and qd, 9 coordinates each\); at most",
    ):
        cli.main(
            [
                "simulate",
                "slider_crank",
                "--t1",
                "1",
                "--num-saves",
                "1000000000",
                "--out",
                str(tmp_path / "x.npz"),
            ]
        )


def run_entry_point(*argv):
    """`jaxmb ARGV` through the console command's entry point (`jaxmb_cli.run`), in a subprocess
    under Python's import log: (process, its stderr without the log, the JAX modules it
    imported). Reference: Python's own import log (`-X importtime`)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-c",
            f"import jaxmb_cli; jaxmb_cli.run({list(argv)!r})",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    log = [line for line in proc.stderr.splitlines() if line.startswith("import time:")]
    imported = [line.split("|")[-1].strip() for line in log]
    assert imported, proc.stderr  # the log is there
    stderr = "\n".join(line for line in proc.stderr.splitlines() if line not in log)
    return proc, stderr, [m for m in imported if m == "jax" or m.startswith("jax.")]


def test_help_and_usage_errors_answer_without_jax():
    """`jaxmb` is `jaxmb_cli.run`: it parses before importing jaxmb (which imports JAX), so
    --help and a mistyped command answer at once. Reference: Python's own import log."""
    for argv, status in ((["--help"], 0), (["no_such_command"], 2)):
        proc, stderr, jax_modules = run_entry_point(*argv)
        assert proc.returncode == status
        assert not jax_modules
        assert "usage: jaxmb" in proc.stdout + stderr


def test_version_answers_without_jax():
    """`jaxmb --version` prints the installed version (the distribution's metadata, which
    pyproject.toml sets) and imports no JAX."""
    from importlib import metadata

    proc, _, jax_modules = run_entry_point("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"jaxmb {metadata.version('jaxmb')}"
    assert not jax_modules


def test_typos_and_bad_values_answer_without_jax(tmp_path):
    """Every CLI call used to import JAX (1 s quiet, 8 s under load) before it looked at the
    model name, and a mistyped built-in name got no suggestion. Now a mistyped name (even with
    the required options missing), a bad number, an output of the wrong kind and an output folder
    that is a file are each answered with one line and status 1 without importing JAX, with the
    closest built-in names; `jaxmb models` lists every built-in model with its description
    (Python's import log is the reference)."""
    from jaxmb.cli_parser import BUILTIN_MODELS

    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    cases = [
        (
            ("simulate", "slidr_crank"),
            r"jaxmb: model 'slidr_crank' is neither a built-in nor "
            r"an existing file; did you mean slider_crank\? "
            r"\(built-in models: mobile_robot, slider_crank, .*\)",
        ),
        (
            ("report", "fourbar"),
            r"jaxmb: model 'fourbar' .*; did you mean four_bar or "
            r"n_four_bar\? .*",
        ),
        (
            ("plot", "four_bar", "--out", str(tmp_path / "x.png"), "--t1", "0"),
            r"jaxmb: --t1 0: expected a positive, finite duration in seconds",
        ),
        (
            ("simulate", "four_bar", "--t1", "1", "--out", str(tmp_path / "x.txt")),
            r"jaxmb: --out '.*x.txt': expected a .npz or .csv file name",
        ),
        (
            ("demo", "--out", str(blocker)),
            r"jaxmb: --out '.*a_file' is a file; give a folder "
            r"\(made if missing\)",
        ),
    ]
    for argv, message in cases:
        proc, stderr, jax_modules = run_entry_point(*argv)
        assert proc.returncode == 1, (argv, stderr)
        assert re.fullmatch(message, stderr.strip()), (argv, stderr)
        assert not jax_modules, argv
    proc, _, jax_modules = run_entry_point("models")
    assert proc.returncode == 0 and not jax_modules
    listed = proc.stdout.splitlines()[1:]
    assert [line.split()[0] for line in listed] == list(BUILTIN_MODELS)
    for line, model in zip(listed, BUILTIN_MODELS.values()):
        assert line.endswith(model.description)


def test_checks_that_need_no_model_each_refusal(tmp_path):
    """The checks that need no model (`jaxmb.cli_parser.check`), each with its one line: the
    demo's duration, --rtol, --fps, --frames, --group's form, a missing --stiffness file, an
    image type matplotlib does not write, a model that is a folder, a file of another kind,
    a mistyped model file name (the closest files in its folder); good command lines pass."""
    from jaxmb.cli_parser import parse_args

    (tmp_path / "crank.yaml").write_text("jaxmb_model: 1\n")
    out = str(tmp_path / "out")
    refusals = {
        ("demo", "--t-end", "-2"): "--t-end -2: expected a positive, finite duration in seconds",
        (
            "simulate",
            "four_bar",
            "--t1",
            "1",
            "--out",
            out + ".npz",
            "--rtol",
            "nan",
        ): "--rtol nan: expected a positive, finite relative tolerance (e.g. 1e-8)",
        (
            "animate",
            "four_bar",
            "--out",
            out + ".gif",
            "--fps",
            "0",
        ): "--fps 0: expected a positive, finite number of frames per second",
        (
            "animate",
            "four_bar",
            "--out",
            out + ".gif",
            "--frames",
            "1",
        ): "--frames 1: expected at least 2 (the first and last instants)",
        ("report", "four_bar", "--group", "axle"): "--group 'axle': expected NAME=PAIR1,PAIR2,...",
        (
            "report",
            "four_bar",
            "--stiffness",
            out + ".yaml",
        ): f"--stiffness '{out}.yaml' does not exist; expected a stiffness file (.json, .yaml, "
        ".yml)",
        (
            "plot",
            "four_bar",
            "--out",
            out + ".gif",
        ): f"--out '{out}.gif': expected an image file name (.png, .pdf, .svg, ...)",
        (
            "plot",
            "four_bar",
            "--out",
            str(tmp_path / "no" / "x.png"),
        ): f"--out '{tmp_path}/no/x.png': folder '{tmp_path}/no' does not exist",
        (
            "report",
            str(tmp_path / "crank.yml"),
        ): f"model '{tmp_path}/crank.yml' is neither a built-in nor an existing file; did you "
        f"mean {tmp_path}/crank.yaml?",
        ("report", str(tmp_path)): f"model '{tmp_path}' is a folder; expected a model file",
        (
            "report",
            os.path.join(ROOT, "README.md"),
        ): f"model file '{ROOT}/README.md': expected a Python file (.py) or a model file",
    }
    for argv, message in refusals.items():
        with pytest.raises(SystemExit) as info:
            parse_args(argv)
        assert info.value.code.startswith("jaxmb: " + message), (argv, info.value.code)
    assert parse_args(["report", str(tmp_path / "crank.yaml"), "--group", "a=O,A"]).group
    assert parse_args(["plot", "four_bar", "--out", out + ".PDF"]).t1 is None  # one cycle


def test_builtin_registry_is_the_models_package():
    """The CLI knows the built-in models without importing them (`BUILTIN_MODELS`, so that a
    name is checked without JAX); its list is the modules of jaxmb.models whose build() needs
    no argument, each description one line."""
    import importlib
    import inspect
    import pkgutil

    import jaxmb.models
    from jaxmb import cli
    from jaxmb.cli_parser import BUILTIN_MODELS

    found = {}
    for info in pkgutil.iter_modules(jaxmb.models.__path__):
        module = importlib.import_module(f"jaxmb.models.{info.name}")
        build = getattr(module, "build", None)
        if build is not None and all(
            p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            for p in inspect.signature(build).parameters.values()
        ):
            found[info.name] = module.__name__
    assert {name: m.module for name, m in BUILTIN_MODELS.items()} == found
    for name, m in BUILTIN_MODELS.items():
        assert cli.load_model_module(name).__name__ == m.module
        assert m.description and "\n" not in m.description and len(m.description) < 100


def test_every_option_has_help_with_its_default():
    """`jaxmb COMMAND --help` explains every argument, with its default where it has one and
    "(required)" where it must be given."""
    import argparse

    from jaxmb.cli_parser import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(commands.choices) == {"demo", "report", "simulate", "plot", "animate", "models"}
    for sub in [parser, *commands.choices.values()]:
        for action in sub._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            text = action.help % {**vars(action), "prog": sub.prog}
            assert len(text) > 10, (sub.prog, action.dest)
            if action.required and action.option_strings:
                assert "(required)" in text, (sub.prog, action.dest)
            elif action.default not in (None, False, argparse.SUPPRESS):
                assert f"(default: {action.default}" in text, (sub.prog, action.dest)


def test_image_suffixes_are_written_by_matplotlib():
    """`jaxmb plot` checks its --out type against a fixed list (no matplotlib import before the
    run): every one of them is a format matplotlib writes."""
    import matplotlib.figure

    from jaxmb.cli_parser import IMAGE_SUFFIXES

    supported = matplotlib.figure.Figure().canvas.get_supported_filetypes()
    assert set(IMAGE_SUFFIXES) <= set(supported)


def test_docs_cli_md_is_generated_from_the_parser():
    """docs/cli.md below its marker line is the parser's own text (usage and the help of every
    option of every command, the built-in models), so it cannot fall behind; after a change to
    the parser, `python -m jaxmb.cli_parser --update docs/cli.md` rewrites it."""
    from jaxmb import cli_parser

    with open(os.path.join(ROOT, "docs", "cli.md"), encoding="utf-8") as fh:
        page = fh.read()
    assert page == cli_parser.docs_page(page), (
        "docs/cli.md is behind the parser: run python -m jaxmb.cli_parser --update docs/cli.md"
    )
    for name in cli_parser.BUILTIN_MODELS:
        assert f"| `{name}` |" in page


def test_warnings_are_one_line_and_plot_names_non_unique_reactions(capsys, monkeypatch, tmp_path):
    """`jaxmb plot` of a model with non-unique reactions printed Python's raw warning with its
    source line (`cli.py:376:` and `rx = mb.reactions(model, traj)`); it now says in one line
    which reactions are drawn dashed and why, and any other warning prints as one line
    `jaxmb: warning: ...`."""
    import warnings

    from jaxmb import cli

    with cli._warnings_on_one_line():
        warnings.simplefilter("always")
        warnings.warn("first line\n  second line", UserWarning)
    assert capsys.readouterr().err == "jaxmb: warning: first line second line\n"
    monkeypatch.setenv("JAXMB_NO_CACHE", "1")
    monkeypatch.setattr(cli, "_QUIET", [False])
    out = tmp_path / "p.png"
    assert (
        cli.main(["plot", "parallelogram", "--t1", "0.1", "--num-saves", "5", "--out", str(out)])
        == 0
    )
    err = capsys.readouterr().err
    assert "Warning" not in err and "cli.py" not in err and "mb.reactions" not in err
    assert (
        "jaxmb: the reactions of O1, O2, O3, A1, A2, A3 are not unique: drawn dashed, the "
        "minimum-norm ones"
    ) in err
    assert out.stat().st_size > 10_000


def test_progress_lines_name_the_analysis_and_stay_off_stdout(capsys, monkeypatch):
    """The command line's compile lines (`jaxmb._runtime.announce`, also tested in
    tests/test_compile_cache.py) go to stderr, name the model and the analysis's public name,
    come only when a program is compiled, and --quiet silences them."""
    import logging

    from jaxmb import cli
    from jaxmb._runtime import announce

    monkeypatch.setattr(cli, "_QUIET", [False])
    monkeypatch.setattr(announce.logger, "level", announce.logger.level)
    # the suite's persistent cache may hold these programs already (from another process):
    # off here, so that they are compiled and announced
    cached = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    cli.announce_compiles("pendulum.py")
    try:
        model = _pendulum_model("bob_progress_lines")
        q0 = mb.assemble(model, model.q0)
        mb.consistent_velocity(model, q0, jnp.zeros(model.n))
        cli.say("simulating 0.1 s of pendulum.py")
        out, err = capsys.readouterr()
        assert out == ""
        lines = err.splitlines()
        assert lines[0] == "jaxmb: compiling assemble for pendulum.py ..."
        assert lines[1].startswith("jaxmb: compiled assemble in ")
        assert lines[2] == "jaxmb: compiling consistent_velocity for pendulum.py ..."
        assert lines[-1] == "jaxmb: simulating 0.1 s of pendulum.py"
        mb.assemble(model, model.q0)  # compiled already: says nothing
        assert capsys.readouterr() == ("", "")
        cli._QUIET[0] = True
        cli.announce_compiles("pendulum.py")
        cli.say("anything")
        mb.assemble(_pendulum_model("bob_quiet"), None)
        assert capsys.readouterr() == ("", "")
    finally:
        jax.config.update("jax_enable_compilation_cache", cached)
        announce.name_models(None)
        announce.logger.setLevel(logging.NOTSET)


def _pendulum_model(name):
    """A point-mass pendulum whose body name makes its programs new to this process."""
    m = mb.Mechanism()
    bob = m.body(name, mass=1.0, inertia=1e-3, q=(1.0, 0.0, 0.0))
    m.add(mb.Revolute("pin", m.ground, bob, s_i=(0.0, 0.0), s_j=(-1.0, 0.0)))
    return m.build()


def _example(name):
    """The example module examples/<name>.py, imported in this process (compiled programs are
    shared with the other tests)."""
    import importlib

    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


def _run_printing(main, argv):
    """main(argv) and the lines it printed."""
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        result = main(argv)
    return result, buffer.getvalue().splitlines()


@pytest.fixture(scope="module")
def robot_example(tmp_path_factory):
    example = _example("mobile_robot")
    out = tmp_path_factory.mktemp("robot")
    result, printed = _run_printing(example.main, ["--quick", "--out", str(out)])
    return result, out, printed


def test_examples_say_what_they_start_before_they_start_it(robot_example, friction_example):
    """A script is not silent while it works: each long step is announced by a line ending in
    "..." before it starts (the compiles are announced on stderr by `mb.log_progress`)."""
    assert robot_example[2][0].endswith("...")
    printed = friction_example[3]
    starts = [k for k, line in enumerate(printed) if line.endswith("...")]
    assert starts[0] == 0 and len(starts) == 2
    assert any(
        line.startswith("Slider-crank at 120 rpm") for line in printed[starts[0] : starts[1]]
    )


def test_mobile_robot_example_quick(robot_example):
    """examples/mobile_robot.py --quick: the four methods on one trajectory (the separately
    integrated variants are tested in test_dynamics.py); unique reactions agree to 1e-8
    relative, non-unique ones differ by O(1); both figures are written."""
    from jaxmb.studies import variant_spread

    result, out, _ = robot_example
    spread = variant_spread(result, result["model"].pair_names)
    for name in ("A", "D", "E", "F", "G", "H", "driver", "W5"):
        assert spread[name] < 1e-8, name
    for name in ("B", "C", "W1", "W2", "W3", "W4"):
        assert spread[name] > 1e-2, name
    for fig in ("robot_paths.png", "robot_reactions.png"):
        assert (out / fig).stat().st_size > 10_000


# ------------------------------------------------------------------------------------------
# examples/friction.py --quick
# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def friction_example(tmp_path_factory):
    example = _example("friction")
    out = tmp_path_factory.mktemp("friction")
    result, printed = _run_printing(example.main, ["--quick", "--out", str(out)])
    return example, result, out, printed


def friction_power(model, lam, qd):
    """(samples, elements): P_k = mu a N tanh(a s_dot / v_s) s_dot by the friction law, in
    numpy from the multipliers and velocities alone: N = |lambda_X| for a revolute,
    |N / 2 + M / l| + |N / 2 - M / l| for a translational pair (multipliers N, M); s_dot the
    relative angular velocity phid_j - phid_i (arm a = r), or the sliding speed along the guide
    (the slider-crank's guide is the global x axis; a = 1)."""
    out = []
    for f in model.friction:
        pair = model.pair(f.pair)
        lk = lam[:, model.rows(f.pair)]
        i = model.body_names.index(pair.i.name) if not pair.i.is_ground else None
        j = model.body_names.index(pair.j.name) if not pair.j.is_ground else None
        if type(f).__name__ == "RevoluteFriction":
            a, load = float(f.radius), np.linalg.norm(lk, axis=1)
            rate = (qd[:, 3 * j + 2] if j is not None else 0.0) - (
                qd[:, 3 * i + 2] if i is not None else 0.0
            )
        else:
            a, length = 1.0, float(f.length)
            half, edge = lk[:, 0] / 2, lk[:, 1] / length
            load = np.abs(half + edge) + np.abs(half - edge)
            rate = qd[:, 3 * i]  # slider i on the ground (j), sliding along x
        out.append(float(f.mu) * a * load * np.tanh(a * rate / float(f.velocity_scale)) * rate)
    return np.stack(out, axis=1)


def energy_rate(model, q, qd, qdd):
    """dE/dt of E = 1/2 qd^T M qd + sum m g y (numpy; M diagonal: m, m, J per body)."""
    diag = np.stack(
        [np.asarray(model.masses), np.asarray(model.masses), np.asarray(model.inertias)], axis=1
    ).ravel()
    return np.sum(qd * diag * qdd, axis=1) + 9.81 * qd[:, 1::3] @ np.asarray(model.masses)


def check_power_balance(model, c):
    """tau omega = dE/dt + sum_k P_k at every instant, to 1e-9 of the peak motor power (the
    friction forces are solved to 1e-12 relative, the rest is float64 algebra)."""
    qdd = np.asarray(c["rx"].qdd)
    P = friction_power(model, np.asarray(c["rx"].lam), c["qd"])
    np.testing.assert_allclose(c["power"], P, rtol=0, atol=1e-9 * np.abs(P).max(initial=1.0))
    motor = c["torque"] * c["speed"]
    np.testing.assert_allclose(
        motor,
        energy_rate(model, c["q"], c["qd"], qdd) + P.sum(axis=1),
        rtol=0,
        atol=1e-9 * np.abs(motor).max(),
    )


def test_friction_example_slider_crank(friction_example):
    """Slider-crank at 120 rpm: at every instant the motor power equals dE/dt (numpy, from
    q, qd, qdd) plus the friction power of the friction law evaluated in numpy from the
    multipliers (`check_power_balance`; without friction dE/dt alone); over the turn the motor
    work equals the loss (E periodic) to round-off, the mean torque is loss / (2 pi) (constant
    crank speed) and is zero without friction."""
    example, result, out, _ = friction_example
    runs = result["slider_crank"]
    for mu, (label, c) in zip((0.0, 0.1), runs.items()):
        model = example.slider_crank_model(mu, 1.5 * mu)
        check_power_balance(model, c)
        np.testing.assert_allclose(c["speed"], example.CRANK_SPEED, rtol=1e-12)
        assert abs(c["work"] - np.sum(c["loss"])) < 1e-12 * c["gross"], label
    assert abs(np.mean(runs["no friction"]["torque"])) < 1e-12 * runs["no friction"]["gross"]
    loss = float(np.sum(runs["friction"]["loss"]))
    assert np.mean(runs["friction"]["torque"]) == pytest.approx(loss / (2 * np.pi), rel=1e-12)
    assert np.all(runs["friction"]["loss"] > 0)
    assert (out / "slider_crank_friction.png").stat().st_size > 10_000


def test_friction_example_parallelogram(friction_example):
    """Triple-crank parallelogram: the power balance at every instant for every stiffness
    distribution (`check_power_balance`); the multipliers are the Compliance ones, i.e.
    orthogonal in K^-1 to the self-stress n (the null space of C^T, numpy SVD of C(q)):
    n^T K^-1 lambda = 0 to 1e-9 relative; the sharing changes the loss (stiff middle crank,
    whose pins have 4 times the radius, dissipates more than twice what the compliant one
    does); method='min_norm' is refused naming a pair and the remedy."""
    example, result, out, _ = friction_example
    linkage = result["parallelogram"]
    model = linkage["model"]
    some = slice(None, None, 9)  # every run has the same kinematics: C(q) once
    Cs = np.asarray(
        jax.jit(jax.vmap(model.C))(
            linkage["runs"]["no friction"]["q"][some], linkage["runs"]["no friction"]["ts"][some]
        )
    )
    for label, c in linkage["runs"].items():
        check_power_balance(
            example.parallelogram_model(mu=0.0) if label == "no friction" else model, c
        )
        k3 = example.STIFFNESS.get(label, example.DEFAULT_STIFFNESS)
        stiffness = np.full(model.num_rows, example.DEFAULT_STIFFNESS)
        for pin in ("O3", "A3"):
            stiffness[model.rows(pin)] = k3
        np.testing.assert_array_equal(c["q"][some], linkage["runs"]["no friction"]["q"][some])
        for C, lam in zip(Cs, np.asarray(c["rx"].lam)[some]):
            u, s, _ = np.linalg.svd(C)  # 13 rows, rank 12 = n: one self-stress
            assert C.shape == (13, 12) and s[-1] > 1e-3 * s[0]
            n = u[:, -1]
            assert abs(n @ (lam / stiffness)) < 1e-9 * np.linalg.norm(lam / stiffness), label
    losses = {label: float(np.sum(c["loss"])) for label, c in linkage["runs"].items()}
    assert losses["stiff middle crank"] > 2 * losses["compliant middle crank"]
    assert "'O1'" in linkage["refusal"] and "not unique" in linkage["refusal"]
    assert "mb.Compliance" in linkage["refusal"]
    assert (out / "parallelogram_friction.png").stat().st_size > 10_000


def test_printed_numbers_have_no_negative_zero():
    """`jaxmb describe` and `report` printed -0.0000 for coordinates that are -1e-17 (round-off
    of an assembled state) and -0 for exact negative zeros; they print 0.0000 and 0 now, and
    keep the sign of a real value."""
    from jaxmb import cli
    from jaxmb.models import slider_crank

    model = slider_crank.build()
    q = np.asarray(model.q0).copy()
    q[1], q[2] = -1e-17, -0.25
    text = cli.describe(model, q)
    assert "-0.0000" not in text and "-0.2500" in text
    assert cli._vector([-0.0, -1e-3]) == "[ 0, -0.001]"
