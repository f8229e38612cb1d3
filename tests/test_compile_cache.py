"""The programs jaxmb compiles for eager calls hold no host callback, so JAX's persistent
compilation cache stores them and a second process compiles nothing; numeric options are data
(a new rtol or t1 reuses the compiled simulate).

References: the second process's results must equal the first's bit for bit (same programs);
JAX's own cache monitoring events count the misses; the rtol test compares two tolerances'
trajectories with each other (a looser rtol changes the step sequence, within its accuracy).
"""

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import pytest

import jaxmb as mb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Eager simulate, reactions along the run and jax.grad of a reaction loss (through assemble,
# consistent_velocity, simulate and reactions: programs called from inside jax.grad's trace,
# kept with their VJP), with mb.enable_compilation_cache (so also the program
# store, jaxmb._runtime.program_store), counting the traces of the eager calls, the persistent
# cache's misses and the programs it refused for their host callbacks (a pendulum: the smallest
# model that has every program kind, so the two processes compile little).
_SCRIPT = textwrap.dedent(
    """
    import collections, json, logging, sys
    import jax
    from jax._src import monitoring
    events, refused = collections.Counter(), []
    monitoring.register_event_listener(lambda event, **kw: events.update([event]))

    class Refused(logging.Handler):
        def emit(self, record):
            if "host callbacks" in record.getMessage():
                refused.append(record.getMessage())

    logging.getLogger("jax._src.compiler").addHandler(Refused())
    announced = []  # jaxmb's own compile announcements (jaxmb._runtime.announce)

    class Announced(logging.Handler):
        def emit(self, record):
            announced.append(record.getMessage())

    logging.getLogger("jaxmb").addHandler(Announced())
    logging.getLogger("jaxmb").setLevel(logging.INFO)
    jax.config.update("jax_explain_cache_misses", True)  # the refusals at WARNING level
    logging.getLogger("jax._src.compiler").setLevel(logging.WARNING)
    import jax.numpy as jnp
    import jaxmb as mb
    from jaxmb._runtime import errors as _errors
    mb.enable_compilation_cache(sys.argv[1])  # with the program store
    from jaxmb._runtime import program_store as _program_store
    compiled = []  # what the command line announces on a first run (jaxmb.cli.say)
    _program_store.compile_listeners.append(compiled.append)
    traced = []  # checked programs traced (one _Collector per trace)
    _count = _errors._Collector.__init__
    _errors._Collector.__init__ = lambda self: traced.append(1) or _count(self)
    def pendulum(length):  # the smallest closed model: compile time is not what is tested
        m = mb.Mechanism()
        bob = m.body("bob", mass=1.0, inertia=1e-3, q=jnp.stack([length, 0.0, 0.0]))
        m.add(mb.Revolute("pin", m.ground, bob, s_i=(0.0, 0.0), s_j=jnp.stack([-length, 0.0])))
        m.add(mb.Gravity((0.0, -9.81)))
        return m.build()

    def state(model):
        q = mb.assemble(model, model.q0, 0.0)
        return q, mb.consistent_velocity(model, q, jnp.zeros(model.n).at[1].set(1.0), 0.0)

    model = pendulum(1.0)
    q0, qd0 = state(model)
    traj = mb.simulate(model, q0, qd0, 0.2, ts=jnp.linspace(0.0, 0.2, 5))
    rx = mb.reactions(model, traj)
    eager_traces = len(traced)

    def loss(length):  # through simulate and the reactions along it
        m = pendulum(length)
        q, qd = state(m)
        run = mb.simulate(m, q, qd, 0.2, ts=jnp.linspace(0.0, 0.2, 5))
        return jnp.sum(mb.reactions(m, run).lam ** 2)

    before = len(traced)
    g = jax.grad(loss)(1.0)
    grad_traces = len(traced) - before
    print(json.dumps({
        "q": traj.q.tolist(), "lam": rx.lam.tolist(), "grad": float(g),
        "misses": events["/jax/compilation_cache/cache_misses"],
        "hits": events["/jax/compilation_cache/cache_hits"],
        "refused": refused, "eager_traces": eager_traces, "compiled": compiled,
        "announced": announced, "grad_traces": grad_traces,
    }))
    """
)


def _run(cache_dir):
    env = dict(
        os.environ,
        JAX_COMPILATION_CACHE_DIR=str(cache_dir),
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
        JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0",
        JAXMB_NO_CACHE="",
        JAXMB_PROGRAM_STORE="1",
        PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(cache_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_second_process_compiles_nothing(tmp_path):
    first = _run(tmp_path)
    assert first["refused"] == []  # no program kept out of the cache for a host callback
    assert first["misses"] > 0  # the first process compiled (and stored) its programs
    second = _run(tmp_path)
    assert second["misses"] == 0 and second["hits"] > 0
    assert second["refused"] == []
    # the eager calls' programs come traced from the program store: nothing is traced, and
    # the compile announcements of the command line (jaxmb.cli.announce_compiles) fire only in
    # the first process, once per program, named by the analysis
    assert first["eager_traces"] > 0 and second["eager_traces"] == 0
    assert first["grad_traces"] > 0 and second["grad_traces"] == 0  # the gradient's too
    assert {"assemble", "velocity", "simulate", "reactions"} <= set(first["compiled"])
    assert second["compiled"] == []
    # the logger's announcements: each eager compile of the first process, before it ("...")
    # and after it (with its time); none in the second, which compiles nothing; none for the
    # gradient's calls, which run inside jax.grad's trace
    said = first["announced"]
    for name in ("assemble", "consistent_velocity", "simulate", "reactions"):
        start = said.index(f"compiling {name} for a model of 1 bodies and 1 pairs ...")
        assert said[start + 1].startswith(f"compiled {name} in ")
    assert len(said) == 8
    assert second["announced"] == []
    for key in ("q", "lam", "grad"):  # the same programs: identical numbers
        assert second[key] == first[key]


def _pendulum(name):
    """A point-mass pendulum (length 1, gravity 9.81) with its own body name, so that its
    compiled simulate is new to this test."""
    m = mb.Mechanism()
    bob = m.body(name, mass=1.0, inertia=1e-3, q=(1.0, 0.0, 0.0))
    m.add(mb.Revolute("pin", m.ground, bob, s_i=(0.0, 0.0), s_j=(-1.0, 0.0)))
    m.add(mb.Gravity((0.0, -9.81)))
    return m.build()


def test_new_tolerance_or_end_time_reuses_the_compiled_simulate(count_calls):
    from jaxmb._formulations import state_ode

    # check_initial_state runs once per trace of simulate's program
    traces = count_calls(state_ode, "check_initial_state")
    model = _pendulum("bob_retrace_test")
    q0, qd0 = model.q0, jnp.zeros(model.n)
    ts = jnp.linspace(0.0, 0.5, 6)
    tight = mb.simulate(model, q0, qd0, 0.5, ts=ts, rtol=1e-9, atol=1e-11)
    assert len(traces) == 1
    loose = mb.simulate(model, q0, qd0, 0.5, ts=ts, rtol=1e-5, atol=1e-7)
    longer = mb.simulate(model, q0, qd0, 0.6, ts=ts, rtol=1e-5, atol=1e-7)
    assert len(traces) == 1  # neither the new rtol, atol nor t1 retraced
    # the new tolerance was used: fewer steps, the same motion within the loose tolerance
    assert int(loose.num_steps) < int(tight.num_steps)
    assert float(jnp.max(jnp.abs(loose.q - tight.q))) < 1e-4
    assert int(longer.num_steps) > int(loose.num_steps)  # ran on to the new t1
    # at rtol <= 1e-10 the default solver is Dopri8 (jaxmb._formulations.solvers): one more
    # program, which the tighter tolerances below it share
    tighter = mb.simulate(model, q0, qd0, 0.5, ts=ts, rtol=1e-10, atol=1e-12)
    mb.simulate(model, q0, qd0, 0.5, ts=ts, rtol=1e-12, atol=1e-14)
    assert len(traces) == 2
    assert float(jnp.max(jnp.abs(tighter.q - tight.q))) < 1e-7


def test_save_time_checks_still_raise():
    """diffrax's own SaveAt(ts) checks are off inside simulate's program; simulate's own
    replace them (same model and shapes as above: the compiled program is reused)."""
    model = _pendulum("bob_retrace_test")
    q0, qd0 = model.q0, jnp.zeros(model.n)
    outside = jnp.linspace(0.0, 0.7, 6)
    # eager: refused before the program runs, naming the entry
    with pytest.raises(ValueError, match=r"ts\[4\] = 0.5599.* lies outside \[t0, t1\]"):
        mb.simulate(model, q0, qd0, 0.5, ts=outside)
    with pytest.raises(ValueError, match=r"ts\[2\] = nan is not finite"):
        mb.simulate(model, q0, qd0, 0.5, ts=outside.at[2].set(jnp.nan))
    with pytest.raises(ValueError, match="ts must be increasing"):
        mb.simulate(model, q0, qd0, 0.5, ts=jnp.linspace(0.5, 0.0, 6))
    # traced ts (inside the user's jit): the program's own checks
    run = jax.jit(lambda ts: mb.simulate(model, q0, qd0, 0.5, ts=ts).q)
    with pytest.raises(RuntimeError, match=r"every save time in ts must lie within \[t0, t1\]"):
        run(outside)
    with pytest.raises(RuntimeError, match="ts has a nan or inf entry"):
        run(outside.at[2].set(jnp.nan))
    with pytest.raises(RuntimeError, match="ts must be ordered from t0 towards t1"):
        run(jnp.linspace(0.5, 0.0, 6))


_SETTINGS = (
    "jax_compilation_cache_dir",
    "jax_persistent_cache_min_compile_time_secs",
    "jax_persistent_cache_min_entry_size_bytes",
)


@pytest.fixture
def jax_cache_setting(monkeypatch):
    """The program store on (the suite leaves it off); JAX's compilation cache settings (the
    suite's folder) restored after the test."""
    from jax.experimental.compilation_cache import compilation_cache

    monkeypatch.setenv("JAXMB_PROGRAM_STORE", "1")
    saved = {name: getattr(jax.config, name) for name in _SETTINGS}
    yield
    moved = jax.config.jax_compilation_cache_dir != saved["jax_compilation_cache_dir"]
    for name, value in saved.items():
        jax.config.update(name, value)
    if moved:
        compilation_cache.reset_cache()


def _bad_folder(tmp_path, case):
    """A cache folder and the end of the message that refuses it."""
    folder = tmp_path / "cache"
    if case == "file":
        folder.write_text("not a folder")
        return str(folder), "is a file, not a folder"
    if case == "under a file":
        folder.write_text("not a folder")
        return str(folder / "jax"), "cannot be a folder: a part of that path is a file"
    if case == "programs folder shared":
        (folder / "jaxmb-programs").mkdir(parents=True)
        (folder / "jaxmb-programs").chmod(0o777)
        return str(folder / "jaxmb-programs"), "is writable by group and others (mode 0o777)"
    folder.mkdir()
    folder.chmod(0o777 if case == "world-writable" else 0o770)
    who = "group and others (mode 0o777)" if case == "world-writable" else "group (mode 0o770)"
    return str(folder), f"is writable by {who}"


_CASES = ["file", "under a file", "world-writable", "group-writable", "programs folder shared"]


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")
@pytest.mark.parametrize("case", _CASES)
def test_enable_compilation_cache_refuses_a_folder_it_cannot_trust(
    tmp_path, case, jax_cache_setting
):
    """An explicit folder: ValueError naming it and the problem; nothing switched on (JAX's
    compilation cache setting and the program store unchanged)."""
    from jaxmb._runtime import program_store as _program_store

    folder, problem = _bad_folder(tmp_path, case)
    path = str(tmp_path / "cache") if case == "programs folder shared" else folder
    saved = jax.config.jax_compilation_cache_dir
    with pytest.raises(ValueError) as err:
        mb.enable_compilation_cache(path)
    assert str(err.value).startswith(f"enable_compilation_cache: {folder} {problem}")
    assert "\n" not in str(err.value)
    assert jax.config.jax_compilation_cache_dir == saved
    assert _program_store.directory() is None
    if case != "programs folder shared":  # JAX's own folder is checked without the store too
        with pytest.raises(ValueError, match="^enable_compilation_cache: "):
            mb.enable_compilation_cache(path, store_programs=False)


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")
@pytest.mark.parametrize("case", _CASES)
def test_a_bad_cache_folder_in_the_environment_warns_and_leaves_the_cache_off(
    tmp_path, case, monkeypatch, jax_cache_setting
):
    """`$JAX_COMPILATION_CACHE_DIR` (the default folder): one warning naming it and the
    problem, the cache off, JAX's own use of the variable included."""
    from jaxmb._runtime import program_store as _program_store

    folder, problem = _bad_folder(tmp_path, case)
    path = str(tmp_path / "cache") if case == "programs folder shared" else folder
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", path)
    jax.config.update("jax_compilation_cache_dir", path)  # as JAX reads it at import
    with pytest.warns(UserWarning) as record:
        assert mb.enable_compilation_cache() is None
    assert [str(w.message) for w in record] == [
        f"the compilation cache is off: {folder} (from JAX_COMPILATION_CACHE_DIR) {problem}"
        + (
            ""
            if case in ("file", "under a file")
            else f": a program planted there would run in this process; use a folder of your own or "
            f"remove their write access (chmod go-w {folder})"
        )
    ]
    assert jax.config.jax_compilation_cache_dir is None
    assert _program_store.directory() is None


def test_a_new_cache_folder_is_the_users_only(tmp_path, jax_cache_setting):
    old = os.umask(0o002)  # a umask that would let the group write
    try:
        path = mb.enable_compilation_cache(tmp_path / "new" / "cache")
    finally:
        os.umask(old)
    from jaxmb._runtime import program_store as _program_store

    _program_store.disable()
    for folder in (path, os.path.join(path, "jaxmb-programs")):
        assert os.stat(folder).st_mode & 0o777 == 0o700


def test_cli_with_a_file_as_cache_folder_says_one_line(tmp_path, monkeypatch, capsys):
    """`JAX_COMPILATION_CACHE_DIR=<a file> jaxmb simulate ...`: the command runs without the
    cache and says why on one line (no traceback)."""
    from jaxmb import cli

    not_a_folder = tmp_path / "cache-file"
    not_a_folder.write_text("a file")
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(not_a_folder))
    monkeypatch.setenv("JAXMB_NO_CACHE", "")
    out = tmp_path / "run.csv"
    assert (
        cli.main(
            [
                "--quiet",
                "simulate",
                "slider_crank",
                "--t1",
                "0.05",
                "--num-saves",
                "3",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"jaxmb: warning: the compilation cache is off: {not_a_folder} (from "
        "JAX_COMPILATION_CACHE_DIR) is a file, not a folder"
    ]
    assert out.exists() and "wrote" in captured.out


def test_cli_commands_of_one_model_share_their_programs(tmp_path):
    """`jaxmb plot`, `animate` (10 frames against simulate's 201 saves) and `report` of a
    model after `jaxmb simulate` of the same model (each with its own defaults) load the
    simulate program from the cache: their stderr announces no simulate compile, while the
    first command's did (the announcement comes exactly with a compile); `report` after `plot`
    compiles nothing."""
    env = dict(
        os.environ,
        JAX_COMPILATION_CACHE_DIR=str(tmp_path / "cache"),
        JAXMB_NO_CACHE="",
        JAXMB_PROGRAM_STORE="1",
        PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    runs = [
        subprocess.run(
            [sys.executable, "-m", "jaxmb.cli", *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        for args in (
            ["simulate", "slider_crank", "--t1", "0.5", "--out", "s.npz"],
            ["plot", "slider_crank", "--t1", "0.5", "--out", "s.png"],
            ["animate", "slider_crank", "--t1", "0.5", "--frames", "10", "--out", "s.gif"],
            ["report", "slider_crank"],
        )
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    assert "jaxmb: compiling simulate for slider_crank ..." in runs[0].stderr
    assert "compiling simulate" not in runs[1].stderr
    assert "compiling reactions for slider_crank ..." in runs[1].stderr  # new to plot
    assert "compiling" not in runs[2].stderr and "(10 frames" in runs[2].stdout
    assert "compiling" not in runs[3].stderr
