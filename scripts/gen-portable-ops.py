#!/usr/bin/env python3
"""Writes src/report/summary/portable_ops.txt, the operators ExecuTorch's
portable kernel library provides, from ExecuTorch's own
kernels/portable/functions.yaml.

    scripts/gen-portable-ops.py [FUNCTIONS_YAML] [--check]

FUNCTIONS_YAML defaults to the one the installed executorch package
carries. With --check, the list is compared with what FUNCTIONS_YAML gives
and nothing is written.

Each line of the list is one operator as programs name it,
`aten::NAME.OVERLOAD` (entries without a namespace are aten's). The report
flags the operators of a program that are not on it: they need a kernel
library besides the portable one (optimized, quantized, a backend's own or
custom kernels), and a runtime built without it fails to load the method.
"""

import pathlib
import re
import sys

OUT = pathlib.Path(__file__).resolve().parent.parent / "src/report/summary/portable_ops.txt"


def default_yaml():
    import executorch  # noqa: PLC0415

    # A namespace package in some installs: no __file__, one __path__.
    return pathlib.Path(list(executorch.__path__)[0]) / "kernels/portable/functions.yaml"


def ops(text):
    # The file is a YAML list of `- op: NAME.OVERLOAD` (or `- func:` with a
    # full schema); a line-oriented read keeps this free of a YAML parser.
    names = set()
    for line in text.splitlines():
        m = re.match(r"^- (?:op|func):\s*([A-Za-z0-9_:.]+)", line)
        if not m:
            continue
        name = m.group(1)
        if "::" not in name:
            name = "aten::" + name
        names.add(name)
    return sorted(names)


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    path = pathlib.Path(args[0]) if args else default_yaml()
    text = "\n".join(ops(path.read_text())) + "\n"
    if check:
        if OUT.read_text() != text:
            print(f"{OUT} differs from what {path} gives; run {sys.argv[0]}", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
