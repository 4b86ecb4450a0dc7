"""python/README.md's session runs as written: every `>>>` line, from the
top of the checkout (its paths are relative to it), printing exactly what
the page shows."""

from __future__ import annotations

import doctest
import os

from conftest import REPO


def test_the_readme_session_runs_as_written() -> None:
    page = REPO / "python" / "README.md"
    # A code fence closes an example's output, as a blank line does.
    lines = page.read_text().splitlines()
    text = "\n".join("" if line.startswith("```") else line for line in lines)
    test = doctest.DocTestParser().get_doctest(text, {}, "python/README.md", str(page), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    here = os.getcwd()
    os.chdir(REPO)
    try:
        runner.run(test)
    finally:
        os.chdir(here)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 10, f"{result.attempted} examples in {page}"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed (above)"
