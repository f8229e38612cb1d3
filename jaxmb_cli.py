"""The `jaxmb` command's entry point, outside the jaxmb package: importing any jaxmb module
imports JAX first (about 1 s), and `jaxmb --help` or a mistyped argument should answer at once.

The parser is `jaxmb/cli.py`'s `build_parser`, read from the file without importing the
package; only a valid command line goes on to `jaxmb.cli.run` (which imports JAX).
"""

import importlib.util
import os
import sys


def _parser():
    package = importlib.util.find_spec("jaxmb")  # finds the folder; runs no jaxmb code
    path = os.path.join(package.submodule_search_locations[0], "cli.py")
    spec = importlib.util.spec_from_file_location("_jaxmb_cli_arguments", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the module imports only the standard library and numpy
    return module.build_parser()


def run(argv=None):
    """Parse (help and usage errors end here, status 0 / 2), then run the command."""
    argv = sys.argv[1:] if argv is None else list(argv)
    _parser().parse_args(argv)
    from jaxmb.cli import run as run_command

    run_command(argv)


if __name__ == "__main__":
    run()
