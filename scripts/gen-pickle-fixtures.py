"""Writes tests/fixtures/pickle/: pickles made by Python's own pickle module
for the safe pickle reader's tests, each with the JSON the reader must give
(or the global it must refuse). Run: python3 scripts/gen-pickle-fixtures.py"""
import builtins, collections, json, os, pickle, sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "pickle")
os.makedirs(OUT, exist_ok=True)

value = {"a": 1, "neg": -5, "big": 2**40, "negbig": -(2**40), "f": 1.5, "s": "héllo", "t": (1, 2, 3),
         "l": [None, True, False, [1, [2]]], "e": [], "d": {"x": {"y": "z"}}, "b": b"\x00\x01", "n": 70000}
shared = [1, 2]
value["shared"] = [shared, shared]
for proto in (2, 3, 4, 5):
    with open(os.path.join(OUT, f"values.p{proto}.pkl"), "wb") as f:
        pickle.dump(value, f, protocol=proto)
with open(os.path.join(OUT, "ordered.pkl"), "wb") as f:
    pickle.dump(collections.OrderedDict([("k", 1)]), f, protocol=2)


class System:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


class Eval:
    def __reduce__(self):
        return (builtins.eval, ("1+1",))


for name, obj in (("os_system", System()), ("builtins_eval", Eval())):
    for proto in (2, 4):
        with open(os.path.join(OUT, f"{name}.p{proto}.pkl"), "wb") as f:
            pickle.dump(obj, f, protocol=proto)

sys.setrecursionlimit(100000)
deep = []
for _ in range(5000):
    deep = [deep]
with open(os.path.join(OUT, "deep.pkl"), "wb") as f:
    pickle.dump(deep, f, protocol=2)

cyclic = []
cyclic.append(cyclic)
with open(os.path.join(OUT, "cyclic.pkl"), "wb") as f:
    pickle.dump(cyclic, f, protocol=2)

expected = dict(value)
expected["t"] = [1, 2, 3]
expected["b"] = {"bytes": 2}
expected["shared"] = [[1, 2], [1, 2]]
with open(os.path.join(OUT, "values.json"), "w") as f:
    json.dump(expected, f, indent=1, ensure_ascii=False)
    f.write("\n")
