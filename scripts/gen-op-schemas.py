#!/usr/bin/env python3
"""Writes src/meta/op_schemas.tsv, the argument names of PyTorch's aten
operators, from PyTorch's own operator schemas (native_functions.yaml).

    scripts/gen-op-schemas.py SOURCE [--check]

SOURCE is native_functions.yaml, or a torch wheel (any platform), which
carries it as torchgen/packaged/ATen/native/native_functions.yaml. With
--check, the table is compared with what SOURCE gives and nothing is
written.

Each line of the table is

    aten::NAME.OVERLOAD <TAB> ARGS <TAB> RETURNS

ARGS are the schema's argument names in order, comma-separated, a name
ending in `!` for an argument the operator writes (an out argument);
RETURNS is how many values the operator returns. ExecuTorch passes a
kernel its arguments in schema order followed by its return values, so a
kernel call's argument position indexes ARGS and then the returns.
Out variants that PyTorch generates (`autogen:`) are included with the
out arguments torchgen gives them: `out` for one return, `out0`, `out1`,
... for several.
"""

import sys
import zipfile
from pathlib import Path

import yaml

WHEEL_MEMBER = "torchgen/packaged/ATen/native/native_functions.yaml"
TABLE = Path(__file__).resolve().parent.parent / "src/meta/op_schemas.tsv"


def split_top(text):
    """Splits at commas outside brackets and parentheses."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def parse(func):
    """(name, [(arg, writes)], returns) of one schema string."""
    head, _, rest = func.partition("(")
    depth, i = 1, 0
    while depth:
        depth += {"(": 1, ")": -1}.get(rest[i], 0)
        i += 1
    args_text, returns_text = rest[: i - 1], rest[i:].split("->", 1)[1].strip()
    args = []
    for a in split_top(args_text):
        if a == "*":
            continue
        decl = a.split("=", 1)[0].strip()
        type_, _, name = decl.rpartition(" ")
        args.append((name, "!" in type_))
    if returns_text.startswith("("):
        returns = len(split_top(returns_text[1:-1]))
    else:
        returns = 1
    return head.strip(), args, returns


def out_variant(args, returns):
    names = ["out"] if returns == 1 else [f"out{i}" for i in range(returns)]
    return args + [(n, True) for n in names], returns


def table(text):
    rows = {}
    for entry in yaml.safe_load(text):
        if not isinstance(entry, dict) or "func" not in entry:
            continue
        name, args, returns = parse(entry["func"])
        rows[name] = (args, returns)
        autogen = entry.get("autogen") or ""
        for gen in (g.strip() for g in autogen.split(",")):
            overload = gen.partition(".")[2]
            # The out variant of a functional or in-place operator takes
            # its inputs (in-place `self` is then only read) and the outs.
            if overload.endswith("out") and returns:
                inputs = [(n, False) for n, _ in args]
                rows.setdefault(gen, out_variant(inputs, returns))
    lines = []
    for name in sorted(rows):
        args, returns = rows[name]
        shown = ",".join(n + ("!" if w else "") for n, w in args)
        lines.append(f"aten::{name}\t{shown}\t{returns}\n")
    return "".join(lines)


def read_source(path):
    if path.endswith(".whl"):
        with zipfile.ZipFile(path) as z:
            return z.read(WHEEL_MEMBER).decode()
    return Path(path).read_text()


def main():
    argv = sys.argv[1:]
    check = "--check" in argv
    argv = [a for a in argv if a != "--check"]
    if len(argv) != 1:
        sys.exit(__doc__)
    text = table(read_source(argv[0]))
    if check:
        if TABLE.read_text() != text:
            sys.exit(f"{TABLE} differs from what {argv[0]} gives")
        print(f"{TABLE}: up to date")
        return
    TABLE.write_text(text)
    print(f"{TABLE}: {text.count(chr(10))} operators")


if __name__ == "__main__":
    main()
