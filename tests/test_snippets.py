"""Every ```python block of README.md and of the documentation pages (docs/*.md,
docs/concepts/*.md; the API reference pages hold only `::: name` directives) runs as written.

The blocks of one page run in order in one namespace, so a continued example builds on the
blocks before it, as a reader pasting them into one session would. A ```text block that
follows a ```python block directly (nothing but blank lines between) is that block's printed
output, and what the block prints must match it line by line. A block that cannot run in a
test (e.g. it needs several hosts) is marked on the line before its fence with
`<!-- snippet: skip (the reason) -->`, visible in the page's source. Bash blocks are not run.
The blocks run in a temporary folder (files they write land there) and may set environment
variables (restored after the page)."""

import contextlib
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "docs" / "concepts").glob("*.md")),
]
SKIP = re.compile(r"<!--\s*snippet:\s*skip\s*\((?P<reason>[^)]+)\)\s*-->")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")


@dataclass
class Block:
    lang: str
    line: int  # 1-based line of the first code line in the page
    code: str
    skip: str | None  # the reason, when marked to skip
    output: str | None = None  # the ```text block that follows, if any


@dataclass
class _Found:
    block: Block
    end: int  # line index of the closing fence


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of `page`, each ```text block right after a ```python block attached
    to it as its expected output."""
    lines = page.read_text().splitlines()
    found, k = [], 0
    while k < len(lines):
        fence = FENCE.match(lines[k])
        if not fence:
            k += 1
            continue
        end = next(e for e in range(k + 1, len(lines)) if lines[e].startswith("```"))
        before = lines[k - 1] if k else ""
        skip = SKIP.search(before)
        block = Block(
            fence["lang"], k + 2, "\n".join(lines[k + 1 : end]), skip["reason"] if skip else None
        )
        between = lines[found[-1].end + 1 : k] if found else []
        if (
            block.lang == "text"
            and found
            and found[-1].block.lang == "python"
            and not any(s.strip() for s in between)
        ):
            found[-1].block.output = block.code
        found.append(_Found(block, end))
        k = end + 1
    return [f.block for f in found]


def python_pages():
    return [p for p in PAGES if any(b.lang == "python" for b in blocks(p))]


def _lines(text):
    return [line.rstrip() for line in text.strip("\n").splitlines()]


@pytest.mark.parametrize("page", python_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_page_snippets_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    environ = dict(os.environ)
    namespace = {"__name__": "__main__"}
    try:
        for block in blocks(page):
            if block.lang != "python" or block.skip:
                continue
            # padded so that a traceback names the page's own line numbers
            code = compile("\n" * (block.line - 1) + block.code, str(page), "exec")
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                exec(code, namespace)
            if block.output is not None:
                where = f"{page.name}, block at line {block.line}: printed output"
                assert _lines(printed.getvalue()) == _lines(block.output), where
    finally:
        os.environ.clear()
        os.environ.update(environ)


def test_snippets_are_found_and_skips_are_few():
    """README.md and the docs pages hold the examples; skipping is the exception."""
    every = [(p, b) for p in PAGES for b in blocks(p) if b.lang == "python"]
    assert {p.name for p, _ in every} >= {
        "README.md",
        "getting_started.md",
        "index.md",
        "friction.md",
        "solvability.md",
    }
    assert len(every) >= 15
    skipped = [(p.name, b.line, b.skip) for p, b in every if b.skip]
    assert len(skipped) <= 1, skipped
    # a marker must sit right before a python fence, or it would silently skip nothing
    for page in PAGES:
        lines = page.read_text().splitlines()
        for k, line in enumerate(lines):
            if SKIP.search(line):
                assert k + 1 < len(lines) and lines[k + 1].startswith("```python"), (
                    page.name,
                    k + 1,
                )


def test_block_parsing(tmp_path):
    """Output blocks attach to the python block right before them; skip markers are read."""
    page = "\n".join(
        [
            "text",
            "```python",
            "print(1)",
            "```",
            "",
            "```text",
            "1",
            "```",
            "<!-- snippet: skip (needs two hosts) -->",
            "```python",
            "x",
            "```",
            "```bash",
            "ls",
            "```",
            "```text",
            "not output",
            "```",
        ]
    )
    path = tmp_path / "page.md"
    path.write_text(page)
    found = blocks(path)
    assert [(b.lang, b.line, b.skip) for b in found] == [
        ("python", 3, None),
        ("text", 7, None),
        ("python", 11, "needs two hosts"),
        ("bash", 14, None),
        ("text", 17, None),
    ]
    assert found[0].output == "1" and found[2].output is None and found[3].output is None
