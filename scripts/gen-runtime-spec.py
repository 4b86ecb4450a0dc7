#!/usr/bin/env python3
"""Writes src/report/check/executorch-1.5.1.json, the built-in runtime spec
`executorch-1.5.1` of `ptefs check`: the operators and backends ExecuTorch's
PyPI runtime registers, as its Python API lists them.

    scripts/gen-runtime-spec.py [--check]

With --check, the file is compared with what the installed runtime gives
and nothing is written. The same JSON is what the one-liner of docs/check.md
prints for any Python runtime.
"""

import json
import pathlib
import sys

OUT = pathlib.Path(__file__).resolve().parent.parent / "src/report/check/executorch-1.5.1.json"


def spec():
    import executorch  # noqa: PLC0415
    from executorch.runtime import Runtime  # noqa: PLC0415

    r = Runtime.get()
    return {
        "version": getattr(executorch, "__version__", None) or "1.5.1",
        "operators": sorted(r.operator_registry.operator_names),
        "backends": sorted(r.backend_registry.registered_backend_names),
    }


def main(argv):
    text = json.dumps(spec(), indent=1) + "\n"
    if "--check" in argv:
        if OUT.read_text() != text:
            print(f"{OUT} differs from the installed runtime; run {sys.argv[0]}", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
