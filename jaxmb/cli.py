"""The `jaxmb` command: `demo`, `report MODEL`, `simulate MODEL`, `plot MODEL`, `animate MODEL`,
`models`.

MODEL is a built-in model name (`jaxmb models`; `jaxmb.cli_parser.BUILTIN_MODELS`), a Python
file defining `build() -> Model` (and optionally `initial_velocity(model) -> qd0`), or a model
file (.json, .yaml, .yml; written by `jaxmb.save`, schema in docs/model_files.md, with an
optional `initial_velocity` list).

The parser, every option's help, and the checks that need no model (the model's name, numbers,
output paths) are `jaxmb/cli_parser.py`, which imports no JAX: the entry point `jaxmb_cli.py`
runs them before it imports this module, and `main` runs them again for in-process callers.

Compiled programs are kept in JAX's persistent compilation cache (`$JAX_COMPILATION_CACHE_DIR`,
default ~/.cache/jaxmb/jax; `JAXMB_NO_CACHE=1` switches it off; see
`jaxmb.enable_compilation_cache`) and reused by later commands, which then compile nothing;
the traced programs are kept too (`jaxmb._runtime.program_store`), so they trace nothing either.
The analyses are called eagerly (not inside `jax.jit`), so their programs carry no host
callbacks and can be cached.
"""

import contextlib
import importlib
import importlib.util
import os
import sys
import tempfile
import time

import numpy as np

from jaxmb.cli_parser import (
    BUILTIN_MODELS as BUILTIN_MODELS,
    MODEL_STIFFNESS as MODEL_STIFFNESS,
    build_parser as build_parser,
    check_model,
    models_text,
    parse_args,
)


def load_model_module(spec: str):
    """The module behind MODEL: a built-in name, a path to a Python file with `build()`, or a
    model file (then an object with `build()` and `initial_velocity`)."""
    check_model(spec)  # as the parser does: a built-in, or a file of a known kind
    if spec in BUILTIN_MODELS:
        return importlib.import_module(BUILTIN_MODELS[spec].module)
    if spec.lower().endswith((".json", ".yaml", ".yml")):
        return _model_file(spec)
    module_spec = importlib.util.spec_from_file_location("jaxmb_user_model", spec)
    if module_spec is None or module_spec.loader is None:
        raise ValueError(f"{spec}: not a Python file that can be imported")
    module = importlib.util.module_from_spec(module_spec)
    try:
        _user_code(spec, "importing it", lambda: module_spec.loader.exec_module(module))  # pyright: ignore[reportOptionalMemberAccess]
    except (SyntaxError, UnicodeDecodeError) as e:
        reason = e.msg if isinstance(e, SyntaxError) else str(e)
        raise SystemExit(f"jaxmb: model file {spec!r} cannot be read as Python: {reason}") from None
    if not callable(getattr(module, "build", None)):
        raise SystemExit(f"jaxmb: model file {spec!r} defines no function build() -> Model")
    return module


def _user_code(spec, what, call):
    """call(), which runs code of the Python model file `spec`; a sys.exit in it ends the
    command with a line naming the file and `what` it was doing (not silently)."""
    try:
        return call()
    except SystemExit as e:
        raise SystemExit(
            f"jaxmb: model file {spec!r}: {what} called sys.exit({e.code!r}); a model file "
            "defines build() -> Model and does not exit"
        ) from None


def build_model(module, spec):
    """`module.build()` (MODEL's), refused with a line naming MODEL unless it is a Model."""
    from jaxmb import Model

    model = _user_code(spec, "build()", module.build)
    if not isinstance(model, Model):
        raise SystemExit(
            f"jaxmb: model {spec!r}: build() returned {model!r} of type "
            f"{type(model).__name__}; it must return a jaxmb Model (mechanism.build())"
        )
    return model


def _model_file(path: str):
    """A JSON/YAML model file as a module-like object; a bad file is a one-line SystemExit."""
    import types

    from jaxmb import _io

    try:
        model, qd0, compliance = _io.load_parts(path)
    except ValueError as e:
        raise SystemExit("jaxmb: " + " ".join(str(e).splitlines())) from None
    return types.SimpleNamespace(
        build=lambda: model,
        initial_velocity=None if qd0 is None else (lambda _: qd0),
        compliance=compliance,
    )


def _phi(model, q, t):
    import equinox as eqx

    return eqx.filter_jit(lambda m, q, t: m.phi(q, t))(model, q, t)  # compiled: one dispatch


def describe(model, q=None, t=0.0) -> str:
    """Bodies, pairs (with their rows), n, m, h and the residual |Phi(q, t)|."""
    import jax.numpy as jnp

    q = model.q0 if q is None else q
    lines = [f"bodies ({model.num_bodies}):"]
    for k, name in enumerate(model.body_names):
        x, y, phi = np.asarray(q[3 * k : 3 * k + 3])
        lines.append(
            f"  {name:<12} m = {float(model.masses[k]):<7.4g} J = {float(model.inertias[k]):<8.4g}"
            f" q = ({_fixed(x)}, {_fixed(y)}, {_fixed(phi)})"
        )
    lines.append(f"pairs ({len(model.pairs)}), rows of C in this order:")
    for pair in model.pairs:
        rows = model.rows(pair.name)
        span = f"{rows.start}" if rows.stop - rows.start == 1 else f"{rows.start}-{rows.stop - 1}"
        bodies = " - ".join(b.name for b in pair.bodies())
        kind = "holonomic" if pair.holonomic else "nonholonomic"
        lines.append(
            f"  {pair.name:<8} {type(pair).__name__:<20} rows {span:<6} {kind:<13} {bodies}"
        )
    residual = float(jnp.max(jnp.abs(_phi(model, q, jnp.asarray(t))))) if model.m else 0.0
    lines.append(
        f"n = {model.n} coordinates, m = {model.m} holonomic rows, h = {model.h} nonholonomic rows"
    )
    lines.append(f"max |Phi(q0, {t:g})| = {residual:.3e}")
    return "\n".join(lines)


def _parse_groups(items):
    groups = {}
    for item in items or ():
        if "=" not in item:
            raise SystemExit(f"jaxmb: --group {item!r}: expected NAME=PAIR1,PAIR2,...")
        name, members = item.split("=", 1)
        groups[name.strip()] = tuple(m.strip() for m in members.split(",") if m.strip())
    return groups


def cmd_demo(args):
    import jaxmb as mb
    from jaxmb.models import mobile_robot
    from jaxmb.studies import mobile_robot_study, variant_spread

    print("jaxmb demo: the mobile robot of seed 001 (Wojtyra & Fraczek), section 4\n")
    announce_compiles("mobile_robot")
    model = mobile_robot.build(t_end=args.t_end)
    print(describe(model))
    report = mb.solvability(model, model.q0, 0.0, groups={"rear axle": ("W3", "W4")})
    print()
    print(report)
    print(
        f"\nSimulating {args.t_end:g} s (the paper's 20 s manoeuvre, time-compressed) "
        f"and computing reactions four ways:"
    )
    start = time.perf_counter()
    result = mobile_robot_study(args.t_end, num_saves=201, out_dir=args.out, resimulate=False)
    print(f"  total {time.perf_counter() - start:.1f} s")
    spread = variant_spread(result, model.pair_names)
    flags = report.solvable_dict()
    print("\nLargest relative difference of each pair's reaction across the four methods:")
    for name in model.pair_names:
        verdict = "unique    " if flags[name] else "NOT unique"
        print(f"  {name:<8} {verdict}  {spread[name]:.2e}")
    for path in [*result["figures"], *_demo_pictures(model, report, result, args.out)]:
        print(f"wrote {path}")
    return 0


def _demo_pictures(model, report, result, out):
    """mechanism.png (the robot at q0, pairs marked unique / not unique) and robot.gif (the
    manoeuvre, 60 frames)."""
    from jaxmb import drawing

    title = "Mobile robot of seed 001 at q0: is each joint reaction unique?"
    drawing_path = drawing.save_drawing(
        model, model.q0, os.path.join(out, "mechanism.png"), solvable=report, title=title
    )
    traj = next(iter(result["trajectories"].values()))
    gif = drawing.animate(
        model, traj, os.path.join(out, "robot.gif"), frames=60, solvable=report, trace=("W1", "W5")
    )
    return drawing_path, gif["path"]


def cmd_report(args):
    import jax.numpy as jnp

    import jaxmb as mb

    module = load_model_module(args.model)
    announce_compiles(os.path.basename(args.model))
    model = build_model(module, args.model)
    compliance = _compliance(args, module, model)  # a bad --stiffness fails before the work
    q = mb.assemble(model, model.q0, args.t) if model.m else jnp.asarray(model.q0)
    print(describe(model, q, args.t))
    groups = _parse_groups(args.group)
    _check_groups(model, groups)
    report = mb.solvability(model, q, args.t, method=args.method, groups=groups)
    print()
    print(report)
    if compliance is not None:
        print()
        print(compliance_table(model, q, _velocity(module, model, q, args.t), args.t, compliance))
    return 0


def _compliance(args, module, model):
    """None without --stiffness; the mb.Compliance of --stiffness FILE, or with a bare
    --stiffness the model file's `compliance` entry (or a Python model's `compliance()`)."""
    import jaxmb as mb
    from jaxmb import _io

    if args.stiffness is None:
        return None
    if args.stiffness == MODEL_STIFFNESS:
        compliance = getattr(module, "compliance", None)
        if callable(compliance) and not isinstance(compliance, mb.AbstractReactionMethod):
            compliance = compliance()  # a Python model's `compliance()`
        if compliance is None:
            raise SystemExit(
                f"jaxmb: --stiffness: model {args.model!r} has no 'compliance' "
                "entry; pass a stiffness file (--stiffness FILE)"
            )
        return compliance
    try:
        return _io.load_compliance(args.stiffness, model)
    except (ValueError, OSError) as e:
        raise SystemExit("jaxmb: " + " ".join(str(e).splitlines())) from None


def _velocity(module, model, q, t):
    """The module's initial velocity (else zero), made consistent at (q, t)."""
    import jax
    import jax.numpy as jnp

    import jaxmb as mb

    init = getattr(module, "initial_velocity", None)
    qd = init(model) if init is not None else jnp.zeros(model.n)
    return jax.jit(mb.consistent_velocity)(model, q, qd, t) if model.num_rows else qd


def compliance_table(model, q, qd, t, compliance) -> str:
    """Each pair's multipliers (its rows' units: N, N m; a knife edge's lateral force) by
    `compliance` and by the minimum norm, flagged unique or not (seed 001, section 3)."""
    import warnings

    import jaxmb as mb

    with warnings.catch_warnings():  # the table shows which answers are not unique
        warnings.simplefilter("ignore", mb.NonUniqueReactionWarning)
        physical = mb.reactions(model, q, qd, t, method=compliance)
        other = mb.reactions(model, q, qd, t, method="min_norm")
    lines = [
        f"Reactions at t = {t:g} (multipliers of each pair's rows): {compliance.name} "
        "against the minimum norm",
        f"  {'pair':<10}{'reaction':<12}{'compliance':<34}min-norm",
    ]
    flags = physical.solvable
    for name in model.pair_names:
        rows = model.rows(name)
        a, b = (np.asarray(r.lam[rows]) for r in (physical, other))
        verdict = "unique" if bool(flags[name]) else "NOT unique"
        lines.append(f"  {name:<10}{verdict:<12}{_vector(a):<34}{_vector(b)}")
    return "\n".join(lines)


def _vector(x) -> str:
    return "[" + ", ".join(f"{float(v) + 0.0: .4g}" for v in x) + "]"  # + 0.0: no "-0"


def _fixed(v) -> str:
    """v with 4 decimals; a value that rounds to zero prints as 0.0000, not -0.0000."""
    return f"{round(float(v), 4) + 0.0: .4f}"


def say(*parts):
    """A progress line on stderr (not with --quiet), so that stdout keeps the results."""
    if not _QUIET[0]:
        print("jaxmb:", *parts, file=sys.stderr, flush=True)


_QUIET = [False]


def announce_compiles(model_name):
    """Say on stderr (not with --quiet) when an analysis compiles and how long it took,
    naming the model (`jaxmb._runtime.announce`)."""
    import logging

    from jaxmb._runtime import announce

    announce.name_models(model_name)
    announce.log_progress(logging.WARNING if _QUIET[0] else logging.INFO)


def _trajectory(spec, t1, num_saves, rtol=1e-8, progress=False):
    """MODEL simulated from its assembled q0 and consistent initial velocity (the module's
    `initial_velocity`, else zero) to t1 (None: `jaxmb.durations.default_duration`, one cycle
    of the driven motion or the drive's length), saved at num_saves times: (model, Trajectory).
    simulate runs eagerly (its integration is compiled inside), so a failure is reported
    with the time it happened. `progress`: diffrax's text progress meter (a host callback:
    that program is compiled every time instead of coming from the cache)."""
    import jax.numpy as jnp

    import jaxmb as mb

    module = load_model_module(spec)
    announce_compiles(os.path.basename(spec))
    model = build_model(module, spec)
    _check_saved_size(model, num_saves)
    # eager calls: each runs one compiled program without host callbacks (cacheable)
    q0 = mb.assemble(model, model.q0, 0.0) if model.m else jnp.asarray(model.q0)
    init = getattr(module, "initial_velocity", None)
    qd0 = init(model) if init is not None else jnp.zeros(model.n)
    qd0 = mb.consistent_velocity(model, q0, qd0, 0.0)
    if t1 is None:
        from jaxmb.durations import default_duration

        t1 = default_duration(model, qd0)
    say(f"simulating {t1:g} s of {os.path.basename(spec)}")
    start = time.perf_counter()
    traj = mb.simulate(
        model, q0, qd0, t1, ts=_save_grid(t1, num_saves), rtol=rtol, progress=progress
    )
    say(f"simulated in {time.perf_counter() - start:.1f} s ({int(traj.num_steps)} steps)")
    return model, _first_saves(traj, num_saves)


SAVE_GRID = 201
"""The save grids of the commands are padded to at least this many instants (the default
`--num-saves`), so that `simulate`, `plot` and `animate` of one model run one compiled
simulate program (its shape is the number of saves): an animation's 50 frames are the first
50 of 201 saves, the rest repeating t1."""


def _save_grid(t1, num_saves):
    """`num_saves` instants evenly spaced over [0, t1], then t1 repeated up to SAVE_GRID."""
    import jax.numpy as jnp

    ts = jnp.linspace(0.0, t1, num_saves)
    return jnp.concatenate([ts, jnp.full(max(0, SAVE_GRID - num_saves), ts[-1])])


def _first_saves(traj, num_saves):
    """The trajectory at its first `num_saves` saved instants (the grid without its padding)."""
    import dataclasses

    cut = {
        name: getattr(traj, name)[:num_saves]
        for name in ("ts", "q", "qd", "repartitioned")
        if getattr(traj, name) is not None
    }
    return dataclasses.replace(traj, **cut)


SAVED_BYTES_LIMIT = 2 << 30
"""Largest memory the saved states of a command may take (q and qd, float64): 2 GiB."""


def _check_saved_size(model, num_saves, flag="--num-saves"):
    """Refuse a number of saved instants whose states (q and qd) would not fit in
    SAVED_BYTES_LIMIT, before the run (the process would otherwise grow until it is killed)."""
    need = 2 * 8 * model.n * int(num_saves)
    if need > SAVED_BYTES_LIMIT:
        most = SAVED_BYTES_LIMIT // (2 * 8 * model.n)
        raise SystemExit(
            f"jaxmb: {flag} {num_saves}: the saved states would take "
            f"{need / 2**30:.1f} GiB (q and qd, {model.n} coordinates each); at "
            f"most {most} instants fit in {SAVED_BYTES_LIMIT / 2**30:g} GiB"
        )


def _check_groups(model, groups):
    """Every pair named in --group exists (with the closest names when it does not)."""
    import difflib

    for name, members in groups.items():
        for pair in members:
            if pair not in model.pair_names:
                close = difflib.get_close_matches(pair, model.pair_names, n=3, cutoff=0.5)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise SystemExit(
                    f"jaxmb: --group {name!r}: the model has no pair {pair!r} "
                    f"(pairs: {', '.join(model.pair_names)}){hint}"
                )


def write_atomically(path, write):
    """Call write(binary file) on a temporary file in path's folder, then rename it to path: a
    failed or interrupted write leaves any previous file at path intact. The new file gets
    the previous file's permissions (else the usual ones, 0o666 less the umask)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        if os.path.exists(path):
            mode = os.stat(path).st_mode & 0o7777
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def cmd_simulate(args):
    model, traj = _trajectory(args.model, args.t1, args.num_saves, args.rtol, args.progress)
    names = [f"{b}.{c}" for b in model.body_names for c in ("x", "y", "phi")]
    ts, q, qd = np.asarray(traj.ts), np.asarray(traj.q), np.asarray(traj.qd)
    if args.out.endswith(".npz"):

        def write(fh):
            np.savez(fh, ts=ts, q=q, qd=qd, coordinates=np.asarray(names))
    else:
        header = ",".join(["t"] + names + [f"d({n})/dt" for n in names])

        def write(fh):
            np.savetxt(fh, np.column_stack([ts, q, qd]), delimiter=",", header=header, comments="")

    try:
        write_atomically(args.out, write)
    except OSError as e:
        raise SystemExit(
            f"jaxmb: --out {args.out!r}: cannot write it: {e.strerror or e}; "
            "any previous file there is unchanged"
        ) from None
    print(f"simulated {args.t1:g} s in {int(traj.num_steps)} steps; wrote {args.out}")
    return 0


def cmd_plot(args):
    import warnings

    import jaxmb as mb
    from jaxmb import drawing

    model, traj = _trajectory(args.model, args.t1, args.num_saves, progress=args.progress)
    report = mb.solvability(model, traj.q[0], traj.ts[0])
    with warnings.catch_warnings():  # said below in one line, in the command's terms
        warnings.simplefilter("ignore", mb.NonUniqueReactionWarning)
        rx = mb.reactions(model, traj)
    solvable = np.reshape(rx.solvable_array, (-1, len(rx.pair_names)))
    flags = [bool(np.all(solvable[:, k])) for k in range(len(rx.pair_names))]
    not_unique = [name for name, ok in zip(rx.pair_names, flags) if not ok]
    if not_unique:
        say(
            f"the reactions of {', '.join(not_unique)} are not unique: drawn dashed, the "
            "minimum-norm ones (one of infinitely many); `jaxmb report MODEL --stiffness` "
            "compares those the joints' stiffness selects"
        )
    drawing.overview(model, traj, rx, report, args.out)
    print(
        f"simulated {float(traj.ts[-1]):g} s; wrote {args.out} (mechanism at t = 0 with the "
        "solvability "
        "of each pair, paths, reactions; dashed: not unique, method-dependent)"
    )
    return 0


def cmd_animate(args):
    import jaxmb as mb
    from jaxmb import drawing

    model, traj = _trajectory(args.model, args.t1, args.frames, progress=args.progress)
    flags = mb.solvability(model, traj.q[0], traj.ts[0]) if args.solvability else None
    try:
        info = drawing.animate(
            model, traj, args.out, frames=args.frames, fps=args.fps, solvable=flags
        )
    except RuntimeError as e:
        raise SystemExit(f"jaxmb: {e}") from None
    print(
        f"simulated {float(traj.ts[-1]):g} s; wrote {args.out} ({len(info['frames'])} frames, "
        f"{info['size_bytes'] / 1e3:.0f} kB)"
    )
    return 0


def cmd_models(args):
    print(models_text())
    return 0


COMMANDS = {
    "demo": cmd_demo,
    "report": cmd_report,
    "simulate": cmd_simulate,
    "plot": cmd_plot,
    "animate": cmd_animate,
    "models": cmd_models,
}
"""The function of each command; the parser, its options (help, units, defaults) and the checks
that need no model are in jaxmb/cli_parser.py."""


def use_compilation_cache():
    """Switch on JAX's persistent compilation cache for this process (see the module docstring
    and `jaxmb.enable_compilation_cache`); JAXMB_NO_CACHE=1 leaves it off."""
    from jaxmb import enable_compilation_cache

    enable_compilation_cache()


def error_line(err) -> str:
    """The readable part of a library error on one line: jaxmb's own message (for a runtime
    check inside jit it sits in the last 'EquinoxRuntimeError: ...' line of the text)."""
    lines = str(err).splitlines()
    marked = [
        ln.split("EquinoxRuntimeError: ", 1)[1] for ln in lines if "EquinoxRuntimeError: " in ln
    ]
    text = marked[-1] if marked else next((ln for ln in lines if ln.strip()), type(err).__name__)
    return " ".join(text.split())


def main(argv=None):
    """Run a command; a library error (bad model, failed run, ...) ends the process with one
    line naming the cause and exit status 1 (JAXMB_TRACEBACK=1 shows the traceback)."""
    args = parse_args(argv)  # and checked: model name, numbers, output paths
    _QUIET[0] = args.quiet
    if args.command == "models":
        return cmd_models(args)
    try:
        with _warnings_on_one_line():
            use_compilation_cache()  # a refused cache folder: one warning line, no cache
            return COMMANDS[args.command](args)
    except (RuntimeError, ValueError) as err:
        if os.environ.get("JAXMB_TRACEBACK") == "1":
            raise
        raise SystemExit(f"jaxmb: {error_line(err)}") from None


@contextlib.contextmanager
def _warnings_on_one_line():
    """Warnings as one line on stderr, `jaxmb: warning: ...`, without the source file and line
    that Python's format shows (restored after the command)."""
    import warnings

    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        print(f"jaxmb: warning: {text}", file=sys.stderr if file is None else file, flush=True)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def run(argv=None):
    """The `jaxmb` console command (reached through `jaxmb_cli.run`, which parses first): `main`,
    then the exit handlers (`atexit`: JAX waits for pending work, matplotlib removes its temporary
    folder), flushed output and the exit status, without the interpreter's finalization (freeing the
    modules of JAX and matplotlib one by one: design measurement D1). In-process callers use
    `main`."""
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code
    if status is not None and not isinstance(status, int):
        print(status, file=sys.stderr)  # as sys.exit prints a message
        status = 1
    run_exit_handlers = getattr(__import__("atexit"), "_run_exitfuncs", None)
    if run_exit_handlers is None:  # not CPython: the ordinary exit
        sys.exit(status)
    run_exit_handlers()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status or 0)


if __name__ == "__main__":
    run()
