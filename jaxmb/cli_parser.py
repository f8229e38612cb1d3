"""The `jaxmb` command line without JAX: the parser (every option with its unit and default), the
registry of built-in models, the checks that need no model (model name, numbers, output paths)
and the markdown of docs/cli.md.

Standard library only and no jaxmb import: the console entry point (`jaxmb_cli.py`) loads this
file by its path, so that `--help`, `--version`, `jaxmb models` and any mistyped model name,
option or output path are answered without importing jaxmb, which imports JAX (about 1 s on a
quiet machine, several under load). `jaxmb.cli` runs the same `parse_args` before its work.

docs/cli.md below its marker line is `markdown()`:
`python -m jaxmb.cli_parser --update docs/cli.md` rewrites it (tests/test_cli_examples.py
checks that it is current).
"""

import argparse
import difflib
import functools
import math
import os
import sys
from typing import NamedTuple


class BuiltinModel(NamedTuple):
    """A model the command line knows by name: `module`'s `build()` with its defaults."""

    description: str
    module: str


BUILTIN_MODELS = {
    "mobile_robot": BuiltinModel(
        "the mobile robot of seed 001: 7 bodies, 5 knife edges, steering driven; dof 1, "
        "redundancy 2",
        "jaxmb.models.mobile_robot",
    ),
    "slider_crank": BuiltinModel(
        "a slider-crank under gravity: crank, connecting rod, slider on the x axis; dof 1",
        "jaxmb.models.slider_crank",
    ),
    "four_bar": BuiltinModel(
        "a Grashof crank-rocker four-bar under gravity; dof 1", "jaxmb.models.four_bar"
    ),
    "composed_pendulum": BuiltinModel(
        "the double pendulum of seed 004, both angles driven; dof 0",
        "jaxmb.models.composed_pendulum",
    ),
    "n_four_bar": BuiltinModel(
        "IFToMM benchmark A02: two parallelograms in a row under gravity; dof 1",
        "jaxmb.models.n_four_bar",
    ),
    "parallelogram": BuiltinModel(
        "a parallelogram with a redundant third crank, crank 1 held by a motor; dof 0, "
        "redundancy 1",
        "jaxmb.models.parallelogram",
    ),
}
"""Name -> (one-line description, module): the modules of `jaxmb.models` whose `build()` needs no
argument (tests/test_cli_examples.py checks that this list is theirs)."""

MODEL_SUFFIXES = (".json", ".yaml", ".yml")
"""Model files (`jaxmb.save`, docs/model_files.md); any other MODEL file is Python (.py)."""

IMAGE_SUFFIXES = (
    "png",
    "pdf",
    "svg",
    "svgz",
    "eps",
    "ps",
    "pgf",
    "jpg",
    "jpeg",
    "tif",
    "tiff",
    "webp",
    "raw",
    "rgba",
)
"""What `jaxmb plot` writes: formats matplotlib's Agg canvas writes (a test checks that it does)."""

MODEL_STIFFNESS = "<model>"
"""The value of a bare `--stiffness`: the model file's own `compliance` entry."""

COMMANDS = ("demo", "report", "simulate", "plot", "animate", "models")

_MODEL_HELP = (
    "a built-in model (`jaxmb models` lists them), a model file (.json, .yaml, .yml; "
    "docs/model_files.md) or a Python file defining build() -> Model and optionally "
    "initial_velocity(model) -> qd0"
)

_PROGRESS_HELP = "show the integration's progress meter (that run is then not cached)"

_DURATION_HELP = (
    "simulated time, in seconds (default: one cycle of the driven motion, the "
    "longest period of the drivers, or the length of a drive profile that ends "
    "plus 15%%; undriven, two periods of a pendulum as long as the mechanism under "
    "its gravity)"
)


def _fail(message):
    """End the command with one line on stderr and status 1 (as sys.exit does with a text)."""
    raise SystemExit(f"jaxmb: {message}")


def check_model(spec: str) -> str:
    """MODEL, if it names a built-in model or an existing, readable model or Python file; else the
    command ends at once, with the closest built-in names (or the closest files in MODEL's
    folder). Used as the argument's `type`, so that a mistyped name is answered as it is read,
    even when required options are missing too."""
    if spec in BUILTIN_MODELS:
        return spec
    builtins = f"built-in models: {', '.join(BUILTIN_MODELS)}; `jaxmb models` describes them"
    if not os.path.exists(spec):
        close = difflib.get_close_matches(spec, BUILTIN_MODELS, n=3, cutoff=0.6)
        folder, base = os.path.split(spec)
        if folder or base.lower().endswith((*MODEL_SUFFIXES, ".py")):
            try:  # the files the user may have meant, in that folder
                files = [
                    f
                    for f in os.listdir(folder or ".")
                    if f.lower().endswith((*MODEL_SUFFIXES, ".py"))
                ]
            except OSError:
                files = []
            close = [
                os.path.join(folder, f)
                for f in difflib.get_close_matches(base, files, n=3, cutoff=0.8)
            ] + close
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        _fail(f"model {spec!r} is neither a built-in nor an existing file{hint} ({builtins})")
    if os.path.isdir(spec):
        _fail(
            f"model {spec!r} is a folder; expected a model file (.json, .yaml, .yml), a "
            f"Python file (.py) or a built-in name ({builtins})"
        )
    if not spec.lower().endswith((*MODEL_SUFFIXES, ".py")):
        _fail(
            f"model file {spec!r}: expected a Python file (.py) or a model file (.json, .yaml, "
            ".yml)"
        )
    if not os.access(spec, os.R_OK):
        _fail(f"model file {spec!r} is not readable")
    return spec


def _installed_version():
    """jaxmb's version from the installed distribution's metadata (no jaxmb import)."""
    from importlib import metadata

    try:
        return metadata.version("jaxmb")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def build_parser(width=None) -> argparse.ArgumentParser:
    """The parser of every command; `width`: the help's line length (default: the terminal's)."""
    fmt = (
        argparse.HelpFormatter
        if width is None
        else functools.partial(argparse.HelpFormatter, width=width)
    )
    parser = argparse.ArgumentParser(
        prog="jaxmb",
        formatter_class=fmt,
        description="Planar rigid multibody dynamics: the demo, and the solvability report, "
        "simulation, plot or animation of a model.",
        epilog=f"MODEL is {_MODEL_HELP}. Built-in models: {', '.join(BUILTIN_MODELS)}. "
        "`jaxmb COMMAND --help` shows a command's options.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"jaxmb {_installed_version()}",
        help="print jaxmb's version and exit",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress lines on stderr (what compiles, what runs)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")

    def command(name, summary, description=None):
        return sub.add_parser(
            name, help=summary, description=description or summary, formatter_class=fmt
        )

    def drawing(name, summary, description, out_metavar, out_help):
        """A command that simulates MODEL as `simulate` does and draws the motion: MODEL, the
        required --out (`out_metavar`, `out_help`) and the optional duration --t1."""
        drawn = command(name, summary, description)
        drawn.add_argument("model", metavar="MODEL", type=check_model, help=_MODEL_HELP)
        drawn.add_argument("--out", required=True, metavar=out_metavar, help=out_help)
        drawn.add_argument("--t1", type=float, default=None, metavar="T", help=_DURATION_HELP)
        return drawn

    demo = command(
        "demo",
        "the seed-001 mobile robot: model, solvability, reactions, pictures",
        "The mobile robot of seed 001 (Wojtyra & Fraczek 2013, section 4): its "
        "bodies and pairs, the solvability table, a simulation with the reactions "
        "computed four ways, a drawing with the unique and non-unique joints marked "
        "and an animation.",
    )
    demo.add_argument(
        "--out",
        default="jaxmb-demo",
        metavar="DIR",
        help="folder for the pictures, made if missing (default: %(default)s)",
    )
    demo.add_argument(
        "--t-end",
        type=float,
        default=5.0,
        metavar="T",
        help="duration of the manoeuvre, in seconds (default: %(default)s; the "
        "paper's 20 s manoeuvre, time-compressed)",
    )

    report = command(
        "report",
        "dof, redundancy and the solvability table of MODEL",
        "MODEL's bodies and pairs, its number of coordinates n, holonomic rows m "
        "and nonholonomic rows h, the residual of its constraints, then dof, "
        "redundancy and whether each pair's reaction is unique, at MODEL's "
        "configuration assembled at time T.",
    )
    report.add_argument("model", metavar="MODEL", type=check_model, help=_MODEL_HELP)
    report.add_argument(
        "--t",
        type=float,
        default=0.0,
        metavar="T",
        help="time of the analysis, in seconds (default: %(default)s)",
    )
    report.add_argument(
        "--method",
        default="qr",
        choices=("qr", "svd", "rank"),
        help="the test of solvability (seed 001, section 3): qr, the "
        "pivoted QR of C^T; svd, the singular value decomposition; rank, "
        "rank C_X + rank C_rest = rank C (default: %(default)s)",
    )
    report.add_argument(
        "--group",
        action="append",
        metavar="NAME=P1,P2",
        help="also test the combined reaction of pairs P1, P2, ... under the "
        "name NAME; repeat for more groups (default: none)",
    )
    report.add_argument(
        "--stiffness",
        metavar="FILE",
        nargs="?",
        const=MODEL_STIFFNESS,
        help="print the reactions that the joints' stiffness selects "
        "(mb.Compliance) next to the min-norm ones; FILE: JSON/YAML "
        "{stiffness: {pair: k}, default: k}, k in the rows' units (N/m, "
        "N m/rad; a knife edge's lateral damping N s/m); without FILE the "
        "model file's own 'compliance' entry",
    )

    simulate = command(
        "simulate",
        "integrate MODEL and save t, q, qd",
        "Integrate MODEL from its configuration assembled at t = 0 and its "
        "initial velocity (zero if it gives none) made consistent with the "
        "constraints, and save the coordinates q and velocities qd at evenly "
        "spaced instants.",
    )
    simulate.add_argument("model", metavar="MODEL", type=check_model, help=_MODEL_HELP)
    simulate.add_argument(
        "--t1", type=float, required=True, metavar="T", help="simulated time, in seconds (required)"
    )
    simulate.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="output file (required): .npz (arrays ts, q, qd, coordinates) or "
        ".csv (a header line, then t, q, qd per instant); a failed run "
        "leaves any previous file unchanged",
    )
    simulate.add_argument(
        "--num-saves",
        type=int,
        default=201,
        metavar="N",
        help="number of saved instants, evenly spaced from 0 to T, both "
        "included (default: %(default)s)",
    )
    simulate.add_argument(
        "--rtol",
        type=float,
        default=1e-8,
        metavar="R",
        help="relative tolerance of the integrator's step-size control (default: %(default)s)",
    )
    simulate.add_argument("--progress", action="store_true", help=_PROGRESS_HELP)

    plot = drawing(
        "plot",
        "drawing of MODEL with its solvability, paths, reactions",
        "Simulate MODEL as `simulate` does and draw one figure: the mechanism at "
        "t = 0 with each pair marked unique or not, the paths of the bodies and the "
        "reactions (dashed where not unique: method-dependent).",
        "FIG",
        f"output image (required): .png, .pdf, .svg, ... (any of {', '.join(IMAGE_SUFFIXES)})",
    )
    plot.add_argument(
        "--num-saves",
        type=int,
        default=201,
        metavar="N",
        help="number of saved instants the paths and reactions are drawn from "
        "(default: %(default)s)",
    )
    plot.add_argument("--progress", action="store_true", help=_PROGRESS_HELP)

    anim = drawing(
        "animate",
        "simulate MODEL and write an animation",
        "Simulate MODEL as `simulate` does and write an animation of the mechanism, "
        "one frame per saved instant.",
        "ANIM",
        "output animation (required): .gif, or .mp4 (needs ffmpeg)",
    )
    anim.add_argument(
        "--frames",
        type=int,
        default=50,
        metavar="N",
        help="number of frames, evenly spaced from 0 to T (default: %(default)s)",
    )
    anim.add_argument(
        "--fps",
        type=float,
        default=None,
        metavar="F",
        help="frames per second (default: real time, N / T)",
    )
    anim.add_argument(
        "--solvability",
        action="store_true",
        help="mark each pair unique / not unique (solvability at t = 0)",
    )
    anim.add_argument("--progress", action="store_true", help=_PROGRESS_HELP)

    command(
        "models",
        "list the built-in models, each with a one-line description",
        "The built-in models, each with a one-line description; MODEL may be any of these "
        "names. Imports no JAX: it answers at once.",
    )
    return parser


# ------------------------------------------------------------------------------------------
# checks of the options that need no model
# ------------------------------------------------------------------------------------------
def _check_positive(flag, value, what):
    if not (math.isfinite(value) and value > 0.0):
        _fail(f"{flag} {value:g}: expected a positive, finite {what}")


def _check_count(flag, count):
    if count < 2:
        _fail(f"{flag} {count}: expected at least 2 (the first and last instants)")


def check_output_path(out):
    """Refuse an --out file that cannot be written, before the run (not after it)."""
    folder = os.path.dirname(os.path.abspath(out))
    if os.path.isdir(out):
        _fail(f"--out {out!r} is a folder; give a file name")
    if not os.path.isdir(folder):
        _fail(f"--out {out!r}: folder {folder!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        _fail(f"--out {out!r}: folder {folder!r} is not writable")


def check_output_folder(out):
    """Refuse an --out folder that cannot be made or written, before the run: an existing
    file, or a nearest existing ancestor that is a file or not writable (missing folders
    are made)."""
    if os.path.exists(out) and not os.path.isdir(out):
        _fail(f"--out {out!r} is a file; give a folder (made if missing)")
    existing = os.path.abspath(out)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        _fail(f"--out {out!r}: {existing!r} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        _fail(f"--out {out!r}: folder {existing!r} is not writable")


def _check_suffix(out, suffixes, expected):
    if os.path.splitext(out)[1].lstrip(".").lower() not in suffixes:
        _fail(f"--out {out!r}: expected {expected}")


def check(args):
    """Everything of the command line that can be checked without the model, in one line naming
    the option (status 1): durations and counts, tolerances, --group's form, --stiffness FILE,
    the output's file type and folder. MODEL is checked while parsing (`check_model`)."""
    if args.command == "demo":
        _check_positive("--t-end", args.t_end, "duration in seconds")
        check_output_folder(args.out)
    elif args.command == "report":
        if not math.isfinite(args.t):
            _fail(f"--t {args.t:g}: expected a finite time in seconds")
        for item in args.group or ():
            name, _, members = item.partition("=")
            if not name.strip() or not [m for m in members.split(",") if m.strip()]:
                _fail(f"--group {item!r}: expected NAME=PAIR1,PAIR2,...")
        stiffness = args.stiffness
        if stiffness not in (None, MODEL_STIFFNESS):
            if not os.path.isfile(stiffness):
                what = (
                    "is a folder"
                    if os.path.isdir(stiffness)
                    else "is not a regular file (a device, a pipe)"
                    if os.path.exists(stiffness)
                    else "does not exist"
                )
                _fail(
                    f"--stiffness {stiffness!r} {what}; expected a stiffness file (.json, "
                    ".yaml, .yml)"
                )
            if not stiffness.lower().endswith(MODEL_SUFFIXES):
                _fail(f"--stiffness {stiffness!r}: expected a .json, .yaml or .yml file")
    elif args.command in ("simulate", "plot", "animate"):
        if args.command == "simulate":
            _check_suffix(args.out, ("npz", "csv"), "a .npz or .csv file name")
        elif args.command == "plot":
            _check_suffix(args.out, IMAGE_SUFFIXES, "an image file name (.png, .pdf, .svg, ...)")
        else:
            _check_suffix(args.out, ("gif", "mp4"), "a .gif or .mp4 file name")
        if args.t1 is not None:  # a default of None would leave the duration to the command
            _check_positive("--t1", args.t1, "duration in seconds")
        if args.command == "animate":
            _check_count("--frames", args.frames)
            if args.fps is not None:
                _check_positive("--fps", args.fps, "number of frames per second")
        else:
            _check_count("--num-saves", args.num_saves)
        if args.command == "simulate":
            _check_positive("--rtol", args.rtol, "relative tolerance (e.g. 1e-8)")
        check_output_path(args.out)
    return args


def parse_args(argv=None) -> argparse.Namespace:
    """The parsed command line, checked (`check`); --help, --version and usage errors end here
    as argparse ends them (status 0, 0, 2), a refused value with one line and status 1."""
    return check(build_parser().parse_args(argv))


def models_text() -> str:
    """What `jaxmb models` prints."""
    width = max(map(len, BUILTIN_MODELS))
    lines = [
        "Built-in models (MODEL of report, simulate, plot, animate; "
        "jaxmb.models.NAME.build() with its defaults):"
    ]
    lines += [f"  {name:<{width}}  {m.description}" for name, m in BUILTIN_MODELS.items()]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------
# docs/cli.md
# ------------------------------------------------------------------------------------------
MARKER = (
    "<!-- Generated from jaxmb/cli_parser.py: edit the parser, then run "
    "`python -m jaxmb.cli_parser --update docs/cli.md`. -->"
)
"""The line of docs/cli.md after which the page is `markdown()`."""

_DOCS_WIDTH = 88


def _cell(text) -> str:
    return " ".join(str(text).split()).replace("|", "\\|").replace("<", "&lt;")


def _invocation(action) -> str:
    if not action.option_strings:
        return action.metavar or action.dest.upper()
    names = ", ".join(action.option_strings)
    if action.nargs == 0:
        return names
    metavar = action.metavar or (
        "{" + ",".join(action.choices) + "}" if action.choices else action.dest.upper()
    )
    return f"{names} [{metavar}]" if action.nargs == "?" else f"{names} {metavar}"


def _help(action, prog) -> str:
    """The action's help with its %(...)s filled in, as argparse fills them."""
    params = {**vars(action), "prog": prog}
    if action.choices is not None:
        params["choices"] = ", ".join(map(str, action.choices))
    return action.help % params


def _options_table(parser) -> list[str]:
    lines = ["| argument | meaning |", "|---|---|"]
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        lines.append(f"| `{_invocation(action)}` | {_cell(_help(action, parser.prog))} |")
    return lines


def _usage(parser) -> list[str]:
    return ["```text", parser.format_usage().strip(), "```"]


def markdown() -> str:
    """The generated part of docs/cli.md: every command's usage and options (from the parser)
    and the built-in models."""
    parser = build_parser(width=_DOCS_WIDTH)
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {c.dest: c.help for c in subparsers._choices_actions}
    out = ["## Commands", "", "| command | what it does |", "|---|---|"]
    out += [
        f"| [`jaxmb {name}`](#jaxmb-{name}) | {_cell(summaries[name])} |"
        for name in subparsers.choices
    ]
    out += [
        "",
        "Options of `jaxmb` itself, before the command (`-h`, `--help` after any "
        "command shows its options):",
        "",
        *_usage(parser),
        "",
        *_options_table(parser),
    ]
    for name, sub in subparsers.choices.items():
        out += ["", f"## jaxmb {name}", "", _cell(sub.description), "", *_usage(sub)]
        if len(sub._actions) > 1:
            out += ["", *_options_table(sub)]
    out += [
        "",
        "## Built-in models",
        "",
        "MODEL may be one of these names (`jaxmb models` lists them); each is "
        "`jaxmb.models.NAME.build()` with its defaults ([Ready-made models](api/models.md)).",
        "",
        "| MODEL | model |",
        "|---|---|",
    ]
    out += [f"| `{name}` | {_cell(m.description)} |" for name, m in BUILTIN_MODELS.items()]
    return "\n".join(out) + "\n"


def docs_page(text: str) -> str:
    """`text` (a docs/cli.md) with everything after its MARKER line replaced by `markdown()`."""
    head, found, _ = text.partition(MARKER + "\n")
    if not found:
        raise ValueError(f"no marker line {MARKER!r}")
    return head + MARKER + "\n\n" + markdown()


def _main(argv=None):
    tool = argparse.ArgumentParser(
        prog="python -m jaxmb.cli_parser",
        description="Print the generated part of docs/cli.md, or "
        "rewrite it in place with --update.",
    )
    tool.add_argument("--update", metavar="PAGE", help="the docs page to rewrite after its marker")
    args = tool.parse_args(argv)
    if args.update is None:
        sys.stdout.write(markdown())
        return
    with open(args.update, encoding="utf-8") as fh:
        old = fh.read()
    new = docs_page(old)
    if new != old:
        with open(args.update, "w", encoding="utf-8") as fh:
            fh.write(new)
    print(f"{args.update}: {'rewritten' if new != old else 'already current'}")


if __name__ == "__main__":
    _main()
