"""Writes tests/fixtures/etrecord/hostile/: ETRecords made hostile from
portable_mlp.etrecord with Python's zipfile and pickle only (no torch):
an archive whose pickle calls os.system, one calling builtins.eval, one
nested 5000 levels deep, a storage shorter than its tensors claim, and the
file cut in half. Run: python3 scripts/gen-etrecord-hostile.py"""
import io, os, pickle, sys, zipfile

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "etrecord")
OUT = os.path.join(HERE, "hostile")
os.makedirs(OUT, exist_ok=True)
SRC = os.path.join(HERE, "portable_mlp.etrecord")
src = zipfile.ZipFile(SRC)


def archive(data_pkl, storages=()):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", data_pkl)
        for k, v in storages:
            z.writestr(f"archive/data/{k}", v)
    return buf.getvalue()


def rewrite(name, replace):
    with zipfile.ZipFile(os.path.join(OUT, name), "w") as z:
        for info in src.infolist():
            data = src.read(info.filename)
            z.writestr(info.filename, replace.get(info.filename, data))


class System:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


class Eval:
    def __reduce__(self):
        return (eval, ("1+1",))


sys.setrecursionlimit(100000)
deep = []
for _ in range(5000):
    deep = [deep]

rewrite("os_system.etrecord", {"exported_program_state_dict": archive(pickle.dumps({"w": System()}, protocol=2))})
rewrite("builtins_eval.etrecord", {"exported_program_constants": archive(pickle.dumps(Eval(), protocol=2))})
rewrite("deep.etrecord", {"reference_outputs": archive(pickle.dumps(deep, protocol=2))})

# The state dict with storage 0 cut to 4 bytes: its tensor claims more.
inner = zipfile.ZipFile(io.BytesIO(src.read("exported_program_state_dict")))
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    for info in inner.infolist():
        data = inner.read(info.filename)
        z.writestr(info.filename, data[:4] if info.filename.endswith("/data/0") else data)
rewrite("short_storage.etrecord", {"exported_program_state_dict": buf.getvalue()})

whole = open(SRC, "rb").read()
open(os.path.join(OUT, "truncated.etrecord"), "wb").write(whole[: len(whole) // 2])

# The edge program's JSON cut short: its graph.txt and nodes.tsv cannot be
# made, nor the join of a program with it.
edge = "edge_dialect_exported_program/forward"
rewrite("bad_program_json.etrecord", {edge: src.read(edge)[:-100]})
