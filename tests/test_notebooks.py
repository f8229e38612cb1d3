"""The notebooks run top to bottom at reduced size (QUICK = True); their own asserts check the
seed values they show (e.g. the robot's rank 20 and redundancy 2)."""

import os

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOKS = sorted(f for f in os.listdir(os.path.join(ROOT, "notebooks")) if f.endswith(".ipynb"))


# Lines (whitespace-normalized) that an executed notebook must print, from hand derivations
# (restated in tests/test_solvability_maps.py): parallelogram collinear (theta = 0): driven rank
# 9 - 1, free 8 - 1, the revolutes' reactions NOT unique, the motor's unique; elsewhere rank 9,
# all unique; slider-driven dead centres (0, +-180 deg): rank 8 of 9, O, A, B, push NOT unique;
# N-four-bar (N = 3) cranks horizontal: split rank 5N + 2 = 17, p = N, dof N + 1, rigid rank 13.
PRINTED = {
    "05_solvability_maps.ipynb": (
        "0 8 1 1 O2, A, B, O4",
        "90 9 0 0 -",
        "[driven] parallelogram, all links collinear, crank towards O4: s = 0, theta = 0 (0 deg); "
        "rank 8, p = 1, dof = 1; NOT unique: O2, A, B, O4",
        "[free] parallelogram, all links collinear, crank towards O4: s = 0, theta = 0 (0 deg); "
        "rank 7, p = 1, dof = 2; NOT unique: O2, A, B, O4",
        "slider-crank: 3 singular configuration(s) (rank below the generic rank)",
        "[slider_driven] dead centre, extended (crank and rod aligned, slider outermost): theta = 0 "
        "(0 deg); rank 8, p = 1, dof = 1; NOT unique: O, A, B, push",
        "N-four-bar: 6 singular configuration(s) (rank below the generic rank)",
        "[split] cranks horizontal, pointing +x (all bars collinear): angle = 0 (0 deg); rank 17, "
        "p = 3, dof = 4; NOT unique: A0, A1, A2, A3, B0c0, B1c0, B1c1, B2c1, B2c2, B3c2",
        "[rigid] cranks horizontal, pointing +x (all bars collinear): angle = 0 (0 deg); rank 13, "
        "p = 3, dof = 2; NOT unique: A0, A1, A2, A3, B0, B1, B2, B3",
    ),
    # the triple-crank parallelogram (jaxmb/models/parallelogram.py): its one self-stress is an
    # axial force t in cranks 1 and 2 and -2t in crank 3, carried by both pins of each crank, so
    # no revolute reaction is unique and the motor's is
    "07_friction.ipynb": (
        "reactions not unique: O1, O2, O3, A1, A2, A3 | unique: motor",
        "self-stress |lambda_X| per pin: O1 1.000, O2 1.000, O3 2.000, A1 1.000, A2 1.000, "
        "A3 2.000",
    ),
}


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 2 and set(PRINTED) <= set(NOTEBOOKS)


KERNEL = ("01_getting_started.ipynb",)
"""Run in a Jupyter kernel, as a reader runs them; the others run their cells in this process
(one namespace per notebook, JAX's default promotion rules, the working folder a temporary
one), which shares the compiled programs of the tests in the same worker and skips a kernel
start and a JAX import per notebook (about a third of their time)."""


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs(name, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("JAXMB_EXAMPLES", os.path.join(ROOT, "examples"))
    nb = nbformat.read(os.path.join(ROOT, "notebooks", name), as_version=4)
    text = _run_in_kernel(nb, tmp_path) if name in KERNEL else _run_here(nb, tmp_path, monkeypatch)
    lines = {" ".join(line.split()) for line in text.splitlines()}
    assert [want for want in PRINTED.get(name, ()) if want not in lines] == []


def _run_in_kernel(nb, folder):
    """The printed text of `nb` executed top to bottom in a fresh python3 kernel."""
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    )
    client.execute()
    errors = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert not errors
    return "".join(
        o.get("text", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "stream"
    )


def _run_here(nb, folder, monkeypatch):
    """The printed text of `nb`'s code cells executed in order in one namespace in this
    process, with a kernel's settings: JAX's default promotion rules (the suite's are
    strict), the folder as working directory, and jaxmb's logger as it was found."""
    import contextlib
    import io
    import logging
    import sys

    import jax

    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "path", list(sys.path))
    saved = {
        k: getattr(jax.config, k) for k in ("jax_numpy_rank_promotion", "jax_numpy_dtype_promotion")
    }
    jax.config.update("jax_numpy_rank_promotion", "allow")
    jax.config.update("jax_numpy_dtype_promotion", "standard")
    logger = logging.getLogger("jaxmb")
    handlers, level = list(logger.handlers), logger.level
    out = io.StringIO()
    namespace = {"__name__": "__notebook__"}
    try:
        with contextlib.redirect_stdout(out):
            for k, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
                exec(compile(cell.source, f"<cell {k}>", "exec"), namespace)
    finally:
        for key, value in saved.items():
            jax.config.update(key, value)
        logger.handlers[:], logger.level = handlers, level
        import matplotlib.pyplot as plt

        plt.close("all")
    return out.getvalue()
