"""The `jaxmb` command's entry point, outside the jaxmb package: importing any jaxmb module
imports JAX first (about 1 s, several under load), and `jaxmb --help`, `jaxmb models` or a
mistyped model name, option or output path should answer at once.

The parser and its checks are `jaxmb/cli_parser.py` (standard library only), read from the file
without importing the package; only a command line that passes them goes on to `jaxmb.cli.run`
(which imports JAX).
"""

import importlib.util
import os
import sys


def _parser_module():
    package = importlib.util.find_spec("jaxmb")  # finds the folder; runs no jaxmb code
    path = os.path.join(package.submodule_search_locations[0], "cli_parser.py")
    spec = importlib.util.spec_from_file_location("_jaxmb_cli_parser", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the module imports only the standard library
    return module


def run(argv=None):
    """Parse and check (help, usage errors and refused values end here: status 0, 2, 1), answer
    `jaxmb models`, else run the command."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = _parser_module()
    args = parser.parse_args(argv)
    if args.command == "models":
        print(parser.models_text())
        return
    from jaxmb.cli import run as run_command

    run_command(argv)


if __name__ == "__main__":
    run()
