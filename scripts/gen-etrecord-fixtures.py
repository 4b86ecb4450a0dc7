"""Writes tests/fixtures/etrecord/: ETRecords from ExecuTorch 1.5.1's
generate_etrecord for a portable MLP and an XNNPACK-delegated conv net, their
programs, ETDumps with debug buffers, and oracles from ExecuTorch's and
torch's own readers (parse_etrecord, torch.load, Inspector); and a small GPT
(portable) and a ResNet-style net (XNNPACK), each run once by the runtime,
with Inspector's events as their oracle (`... tiny_gpt xnnpack_resnetish`
writes those two alone).

Run with the ExecuTorch venv's python; the portable MLP's debug run is made
by the runtime of ET_RUNTIME_PYTHON (default: this one), for a venv whose
torch can hand the runtime tensors:

    ET_RUNTIME_PYTHON=/path/to/venv2/bin/python /venv/bin/python scripts/gen-etrecord-fixtures.py

The stack traces torch.export records name the model's file (/src/model.py,
below) and torch's own files where the venv has them: run the venv as
/venv (a symlink to it will do) so that they name no path of one machine.

Times in the ETDumps are real, so re-running changes those bytes only.
"""
import hashlib, io, json, linecache, os, subprocess, sys, zipfile
import torch
from executorch.exir import to_edge, to_edge_transform_and_lower
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.devtools import Inspector
from executorch.devtools.etrecord import parse_etrecord

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
OUT = os.path.join(FIXTURES, "etrecord")
ETDUMP = os.path.join(FIXTURES, "etdump")


# The models' source, compiled as /src/model.py: the stack traces torch.export
# records name that file, not where this script happens to live.
MODEL_SOURCE = """\
import torch


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(16, 32)
        self.l2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


class MobileNetish(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1); self.bn = torch.nn.BatchNorm2d(8)
        self.dw = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8); self.pw = torch.nn.Conv2d(8, 16, 1)
        self.pool = torch.nn.AdaptiveAvgPool2d(1); self.fc = torch.nn.Linear(16, 4)

    def forward(self, x):
        x = torch.nn.functional.relu6(self.bn(self.stem(x)))
        x = torch.nn.functional.relu6(self.pw(torch.nn.functional.relu6(self.dw(x))))
        return self.fc(torch.flatten(self.pool(x), 1))


class MLPGrown(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(16, 32)
        self.l2 = torch.nn.Linear(32, 8)
        self.l3 = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.l3(self.l2(torch.relu(self.l1(x))))


class ConvReluTan(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        return torch.tan(y)

class Attention(torch.nn.Module):
    def __init__(self, d, heads, ctx):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.register_buffer("causal", torch.tril(torch.ones(ctx, ctx)) == 0)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = q @ k.transpose(-2, -1)
        att = att.masked_fill(self.causal[:t, :t], float("-inf"))
        att = torch.softmax(att / (d // self.heads) ** 0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class Feedforward(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.up = torch.nn.Linear(d, 2 * d)
        self.down = torch.nn.Linear(2 * d, d)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


class Block(torch.nn.Module):
    def __init__(self, d, heads, ctx):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d)
        self.attn = Attention(d, heads, ctx)
        self.ln2 = torch.nn.LayerNorm(d)
        self.mlp = Feedforward(d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class TinyGPT(torch.nn.Module):
    def __init__(self, vocab=16, d=8, heads=2, ctx=4, layers=2):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.randn(ctx, d) * 0.1)
        self.blocks = torch.nn.ModuleList([Block(d, heads, ctx) for _ in range(layers)])
        self.mixer = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln_f = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.tok(idx) + self.pos[: idx.shape[1]]
        for block in self.blocks:
            x = block(x)
        x = x + self.mixer(x, x, x, need_weights=False)[0]
        return self.head(self.ln_f(x))


class ResNetish(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.maxpool = torch.nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = torch.nn.Sequential(BasicBlock(8), BasicBlock(8))
        self.avgpool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        x = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
        x = self.layer1(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))


class BasicBlock(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(c)
        self.conv2 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(c)

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + x)
"""
MODEL_FILE = "/src/model.py"
linecache.cache[MODEL_FILE] = (len(MODEL_SOURCE), None, MODEL_SOURCE.splitlines(True), MODEL_FILE)
exec(compile(MODEL_SOURCE, MODEL_FILE, "exec"), globals())

# Runs a program with a debug buffer (the method's outputs and each
# instruction's outputs logged) and writes its ETDump and debug buffer.
RUN_DEBUG = """
import json, sys, torch
from executorch.extension.pybindings.portable_lib import _load_for_executorch
pte, etdp, dbg, inputs = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
m = _load_for_executorch(pte, enable_etdump=True, debug_buffer_size=1 << 16)
m.forward(tuple(torch.tensor(x, dtype=torch.float32) for x in inputs))
m.write_etdump_result_to_file(etdp, dbg)
"""


def run_debug(pte, example, etdp):
    """ETDump and debug buffer of one run of `pte`, from the runtime of
    ET_RUNTIME_PYTHON (a venv whose torch can hand the runtime tensors)."""
    python = os.environ.get("ET_RUNTIME_PYTHON", sys.executable)
    dbg = etdp.removesuffix(".etdp") + ".debug.bin"
    subprocess.run([python, "-c", RUN_DEBUG, pte, etdp, dbg, json.dumps([t.tolist() for t in example])],
                   check=True, timeout=600)
    return dbg


# Runs a program once with an ETDump and a debug buffer; inputs are given as
# (values, dtype) pairs.
RUN_PROFILED = """
import json, sys, torch
from executorch.extension.pybindings.portable_lib import _load_for_executorch
pte, etdp, dbg, inputs = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
m = _load_for_executorch(pte, enable_etdump=True, debug_buffer_size=1 << 16)
m.forward(tuple(torch.tensor(x, dtype=getattr(torch, t)) for x, t in inputs))
m.write_etdump_result_to_file(etdp, dbg)
"""


def sha(b):
    return hashlib.sha256(bytes(b)).hexdigest()


def tensor_oracle(t):
    t = t.detach()
    return {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
            "stride": list(t.stride()), "storage_offset": t.storage_offset(),
            "sha256": sha(t.contiguous().numpy().tobytes())}


def flat(prefix, x, out):
    """Tensors of a nested list/tuple/dict value, by their path."""
    if isinstance(x, torch.Tensor):
        out[prefix] = tensor_oracle(x)
    elif isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            flat(f"{prefix}/{i}" if prefix else str(i), v, out)
    elif isinstance(x, dict):
        for k, v in x.items():
            flat(f"{prefix}/{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = {"value": repr(x)}
    return out


def archive_oracle(path):
    """Each torch.save member of the ETRecord, as torch.load reads it."""
    z = zipfile.ZipFile(path)
    members = {}
    for info in z.infolist():
        name = info.filename
        entry = {"size": info.file_size, "compress_type": info.compress_type}
        if name.endswith(("_state_dict", "_constants", "_example_inputs")) or name in ("reference_outputs", "representative_inputs"):
            value = torch.load(io.BytesIO(z.read(name)), weights_only=True)
            entry["tensors"] = flat("", value, {})
        members[name] = entry
    return members


def graphs_oracle(rec):
    graphs = {}
    eps = {}
    if rec.exported_program is not None:
        eps["exported_program"] = rec.exported_program
    edge = rec.edge_dialect_program
    if isinstance(edge, dict):
        for m, ep in edge.items():
            eps[f"edge_dialect_exported_program/{m}"] = ep
    elif edge is not None:
        eps["edge_dialect_exported_program/forward"] = edge
    for k, ep in (rec.graph_map or {}).items():
        eps[k] = ep
    for name, ep in eps.items():
        nodes = []
        for n in ep.graph.nodes:
            nodes.append({"name": n.name, "op": n.op, "target": str(n.target),
                          "debug_handle": n.meta.get("debug_handle"),
                          "nn_module_stack": {k: [v[0], str(v[1])] for k, v in (n.meta.get("nn_module_stack") or {}).items()},
                          "stack_trace": n.meta.get("stack_trace")})
        graphs[name] = {"nodes": nodes, "state_dict": sorted(ep.state_dict.keys()),
                        "constants": sorted(ep.constants.keys())}
    return graphs


def output_gaps(insp, etdp):
    """Each method output a run logged against the reference output
    Inspector pairs it with (the ETRecord's, by the run's bundled input
    index), by Inspector's own numeric-gap comparators; max_abs and max_rel
    (max |a - b| over max |a|, a the reference) computed alike in float64."""
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc
    from executorch.devtools.inspector._inspector_utils import convert_to_float_tensor
    from executorch.devtools.inspector.numerical_comparator import L1Comparator, MSEComparator, SNRComparator

    # The ETDump's run data blocks that logged method outputs, in order: the
    # runs/<n> of each of Inspector's event blocks with a run output.
    ed = deserialize_from_etdump_flatcc(open(etdp, "rb").read())
    runs = [i for i, rd in enumerate(ed.run_data)
            if any(e.debug_event is not None and e.debug_event.debug_entry.output is not None
                   and e.debug_event.debug_entry.output.bool_val for e in rd.events or [])]
    blocks = [eb for eb in insp.event_blocks if eb.run_output]
    assert len(runs) == len(blocks), (runs, [eb.name for eb in blocks])
    out = []
    for run, eb in zip(runs, blocks):
        for k, (ref, got) in enumerate(zip(eb.reference_output, eb.run_output)):
            a, b = convert_to_float_tensor(ref), convert_to_float_tensor(got)
            max_abs = float((a - b).abs().max())
            out.append({"run": run, "output": k, "shape": list(got.shape),
                        "max_abs": max_abs, "max_rel": max_abs / float(a.abs().max()),
                        "MSE": MSEComparator().element_compare(ref, got),
                        "L1": L1Comparator().element_compare(ref, got),
                        "SNR": SNRComparator().element_compare(ref, got)})
    return out


def make(name, model, example, lower, program, etdump, debug_etdump):
    ep = torch.export.export(model, example)
    if lower:
        edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()], generate_etrecord=True)
    else:
        edge = to_edge(ep, generate_etrecord=True)
    et = edge.to_executorch()
    rec = et.get_etrecord()
    rec.update_representative_inputs([example])
    rec.update_reference_outputs([[model(*example)]])
    pte = os.path.join(OUT, name + ".pte")
    with open(pte, "wb") as f:
        f.write(et.buffer)
    etrecord = os.path.join(OUT, name + ".etrecord")
    rec.save(etrecord)

    # The Python runtime of this venv cannot run programs (its torch is newer
    # than its pybindings), so the ETDumps are the ones tests/fixtures/etdump
    # holds: they were written running these very programs, checked here to
    # be byte-identical.
    ref = os.path.join(ETDUMP, program)
    assert open(ref, "rb").read() == et.buffer, f"{ref} differs from this export"
    # A run that logged its outputs in a debug buffer, for the numeric gaps:
    # tests/fixtures/etdump's own where it has one, else one run here.
    if debug_etdump is None:
        debug_etdp = os.path.join(OUT, name + "_debug.etdp")
        debug_dbg = run_debug(pte, example, debug_etdp)
    else:
        debug_etdp = os.path.join(ETDUMP, debug_etdump)
        debug_dbg = debug_etdp.removesuffix(".etdp") + ".debug.bin"
    os.remove(pte)
    etdp = os.path.join(ETDUMP, etdump)
    dbg = etdp.removesuffix(".etdp") + ".debug.bin"
    dbg = dbg if os.path.exists(dbg) else None

    parsed = parse_etrecord(etrecord)
    oracle = {
        "etrecord": os.path.basename(etrecord),
        "sha256": sha(open(etrecord, "rb").read()),
        "members": archive_oracle(etrecord),
        "graphs": graphs_oracle(parsed),
        "debug_handle_map": parsed._debug_handle_map,
        "delegate_map": parsed._delegate_map,
        "instruction_id_to_num_outs_map": parsed._instruction_id_to_num_outs_map,
        "program": program, "etdump": etdump,
        "reference_outputs": [tensor_oracle(model(*example))],
    }

    insp = Inspector(etdump_path=etdp, etrecord=etrecord, debug_buffer_path=dbg)
    events = []
    for eb in insp.event_blocks:
        for e in eb.events:
            events.append({"block": eb.name, "name": e.name, "instruction_id": e._instruction_id,
                           "delegate_debug_identifier": e.delegate_debug_identifier,
                           "is_delegated_op": e.is_delegated_op,
                           "debug_handles": e.debug_handles,
                           "module_hierarchy": {k: {m: [v[0], str(v[1])] for m, v in (h or {}).items()} for k, h in e.module_hierarchy.items()},
                           "stack_traces": e.stack_traces,
                           "op_types": e.op_types})
    oracle["inspector_events"] = events
    gap_insp = Inspector(etdump_path=debug_etdp, etrecord=etrecord, debug_buffer_path=debug_dbg)
    gaps = {}
    for metric in ("MSE", "L1", "SNR"):
        df = gap_insp.calculate_numeric_gap(metric)
        rows = json.loads(df.drop(columns=["gap"]).to_json(orient="records", default_handler=str))
        for row, gap in zip(rows, df["gap"]):  # as computed, not rounded as to_json would
            row["gap"] = [float(g) for g in gap]
        gaps[metric] = rows
    oracle["numeric_gaps_etdump"] = os.path.relpath(debug_etdp, FIXTURES)
    oracle["numeric_gaps"] = gaps
    oracle["output_gaps"] = output_gaps(gap_insp, debug_etdp)
    with open(os.path.join(OUT, name + ".inspector_table.txt"), "w") as f:
        df = insp.to_dataframe()
        cols = [c for c in ["event_block_name", "event_name", "instruction_id", "is_delegated_op", "module_hierarchy", "stack_traces"] if c in df.columns]
        f.write(df[cols].to_string() + "\n")
    with open(os.path.join(OUT, name + ".oracle.json"), "w") as f:
        json.dump(oracle, f, indent=1, sort_keys=True, default=str)
        f.write("\n")
    print("wrote", name, os.path.getsize(etrecord), "bytes")


def node_diff(a, b):
    """Nodes of graph b against graph a by name: added, removed, and for
    those in both which of op, target, args and module stack differ."""
    na = {n.name: n for n in a.graph.nodes}
    nb = {n.name: n for n in b.graph.nodes}
    stack = lambda n: {k: [v[0], str(v[1])] for k, v in (n.meta.get("nn_module_stack") or {}).items()}
    changed = {}
    for name in sorted(na.keys() & nb.keys()):
        x, y = na[name], nb[name]
        fields = [f for f, same in [("op", x.op == y.op), ("target", str(x.target) == str(y.target)),
                                    ("args", str(x.args) == str(y.args)), ("module", stack(x) == stack(y))]
                  if not same]
        if fields:
            changed[name] = fields
    return {"added": sorted(nb.keys() - na.keys()), "removed": sorted(na.keys() - nb.keys()), "changed": changed}


def tensor_diff(a, b):
    """State-dict and constant tensors of b against a by name: added,
    removed, and for those in both that differ, how many elements and the
    largest absolute difference."""
    out = {}
    for part in ("state_dict", "constants"):
        ta, tb = getattr(a, part), getattr(b, part)
        changed = {}
        for k in sorted(ta.keys() & tb.keys()):
            x, y = ta[k].detach(), tb[k].detach()
            if x.shape != y.shape or x.dtype != y.dtype:
                changed[k] = {"shape": [list(x.shape), list(y.shape)]}
            elif not torch.equal(x, y):
                d = (x.double() - y.double()).abs()
                changed[k] = {"differing": int((d > 0).sum()), "elements": x.numel(), "max_abs": float(d.max())}
        out[part] = {"added": sorted(tb.keys() - ta.keys()), "removed": sorted(ta.keys() - tb.keys()),
                     "changed": changed}
    return out


def make_grown(mlp, example):
    """A second ETRecord of the portable MLP: the same l1 and l2 but for
    l2.bias[0], 0.25 larger, and a layer l3 added after l2; the oracle
    holds what changed, from the two ETRecords as parse_etrecord reads them."""
    torch.manual_seed(1)
    grown = MLPGrown().eval()
    grown.load_state_dict(mlp.state_dict(), strict=False)
    with torch.no_grad():
        grown.l2.bias[0] += 0.25
    rec = to_edge(torch.export.export(grown, example), generate_etrecord=True).to_executorch().get_etrecord()
    path = os.path.join(OUT, "portable_mlp_grown.etrecord")
    rec.save(path)
    a = parse_etrecord(os.path.join(OUT, "portable_mlp.etrecord"))
    b = parse_etrecord(path)
    edge = lambda r: r.edge_dialect_program if isinstance(r.edge_dialect_program, dict) else {"forward": r.edge_dialect_program}
    graphs = {"exported_program": (a.exported_program, b.exported_program)}
    for m, ep in edge(b).items():
        graphs[f"edge_dialect_exported_program/{m}"] = (edge(a)[m], ep)
    oracle = {
        "etrecord": os.path.basename(path),
        "sha256": sha(open(path, "rb").read()),
        "against": "portable_mlp.etrecord",
        "made_by": "l2.bias[0] made 0.25 larger; l3 = Linear(8, 8) added after l2",
        "nodes": {g: node_diff(x, y) for g, (x, y) in graphs.items()},
        "tensors": {g: tensor_diff(x, y) for g, (x, y) in graphs.items()},
    }
    with open(os.path.join(OUT, "portable_mlp_grown.oracle.json"), "w") as f:
        json.dump(oracle, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote portable_mlp_grown", os.path.getsize(path), "bytes")


def make_delegate_mapped():
    """A conv net lowered whole to ExecuTorch's delegate-mapping demo
    backend, whose delegate map names, for each of its own operators (a
    fused conv + relu, and tan as sin, cos and div), the nodes it comes
    from. The oracle holds the map and, per operator, those nodes of the
    edge program (by debug handle, as Inspector finds them)."""
    from executorch.exir.backend.canonical_partitioners.all_node_partitioner import AllNodePartitioner
    from executorch.exir.backend.test.backend_with_delegate_mapping_demo import BackendWithDelegateMappingDemo  # noqa: F401 (registers the backend)

    torch.manual_seed(2)
    model = ConvReluTan().eval()
    example = (torch.randn(1, 3, 8, 8),)
    et = to_edge_transform_and_lower(torch.export.export(model, example),
                                     partitioner=[AllNodePartitioner("BackendWithDelegateMappingDemo", [])],
                                     generate_etrecord=True).to_executorch()
    name = "delegate_map_demo"
    with open(os.path.join(OUT, name + ".pte"), "wb") as f:
        f.write(et.buffer)
    path = os.path.join(OUT, name + ".etrecord")
    et.get_etrecord().save(path)
    rec = parse_etrecord(path)
    edge = rec.edge_dialect_program
    edge = edge["forward"] if isinstance(edge, dict) else edge
    operators = []
    for instruction, d in rec._delegate_map["forward"].items():
        for debug_id, handles in d["delegate_map"].items():
            nodes = [n for n in edge.graph.nodes if n.meta.get("debug_handle") in handles]
            operators.append({
                "instruction": instruction, "debug_id": debug_id, "debug_handles": list(handles),
                "nodes": [{"name": n.name,
                           "nn_module_stack": {k: [v[0], str(v[1])] for k, v in (n.meta.get("nn_module_stack") or {}).items()},
                           "stack_trace": n.meta.get("stack_trace")} for n in nodes]})
    oracle = {"etrecord": os.path.basename(path), "program": name + ".pte",
              "sha256": sha(open(path, "rb").read()), "delegate_map": rec._delegate_map,
              "debug_handle_map": rec._debug_handle_map, "delegate_operators": operators}
    with open(os.path.join(OUT, name + ".oracle.json"), "w") as f:
        json.dump(oracle, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", name, os.path.getsize(path), "bytes")


def inspector_events(insp):
    """Inspector's events with their debug handles, module hierarchies and
    whole stack traces."""
    events = []
    for eb in insp.event_blocks:
        for e in eb.events:
            events.append({"block": eb.name, "name": e.name, "instruction_id": e._instruction_id,
                           "delegate_debug_identifier": e.delegate_debug_identifier,
                           "is_delegated_op": e.is_delegated_op,
                           "debug_handles": e.debug_handles,
                           "module_hierarchy": {k: {m: [v[0], str(v[1])] for m, v in (h or {}).items()} for k, h in e.module_hierarchy.items()},
                           "stack_traces": e.stack_traces,
                           "op_types": e.op_types})
    return events


def make_profiled(name, model, example, lower):
    """A model exported (lowered to XNNPACK when `lower`), its program and
    ETRecord, and one run by the runtime with an ETDump and a debug buffer;
    the oracle holds Inspector's events of that run, with their module
    hierarchies and whole stack traces, and the edge program's nodes."""
    ep = torch.export.export(model, example)
    if lower:
        edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()], generate_etrecord=True)
    else:
        edge = to_edge(ep, generate_etrecord=True)
    et = edge.to_executorch()
    rec = et.get_etrecord()
    rec.update_representative_inputs([example])
    rec.update_reference_outputs([[model(*example)]])
    pte = os.path.join(OUT, name + ".pte")
    with open(pte, "wb") as f:
        f.write(et.buffer)
    etrecord = os.path.join(OUT, name + ".etrecord")
    rec.save(etrecord)
    etdp = os.path.join(OUT, name + ".etdp")
    dbg = os.path.join(OUT, name + ".debug.bin")
    inputs = [[t.tolist(), str(t.dtype).removeprefix("torch.")] for t in example]
    subprocess.run([os.environ.get("ET_RUNTIME_PYTHON", sys.executable), "-c", RUN_PROFILED,
                    pte, etdp, dbg, json.dumps(inputs)], check=True, timeout=600)
    parsed = parse_etrecord(etrecord)
    insp = Inspector(etdump_path=etdp, etrecord=etrecord, debug_buffer_path=dbg)
    # Stack traces and module hierarchies repeat: each is kept once, in
    # "traces" and "hierarchies", and named by its index there.
    traces, hierarchies = [], []
    def index(table, v):
        if v is None:
            return None
        if v not in table:
            table.append(v)
        return table.index(v)
    events = inspector_events(insp)
    for e in events:
        e["stack_traces"] = {k: index(traces, t) for k, t in (e["stack_traces"] or {}).items()}
        e["module_hierarchy"] = {k: index(hierarchies, h) for k, h in e["module_hierarchy"].items()}
    edge = graphs_oracle(parsed)["edge_dialect_exported_program/forward"]
    for n in edge["nodes"]:
        n["stack_trace"] = index(traces, n["stack_trace"])
        n["nn_module_stack"] = index(hierarchies, n["nn_module_stack"])
    oracle = {
        "etrecord": os.path.basename(etrecord), "program": os.path.basename(pte),
        "etdump": os.path.basename(etdp), "debug_buffer": os.path.basename(dbg),
        "sha256": sha(open(etrecord, "rb").read()),
        "edge_nodes": edge["nodes"],
        "debug_handle_map": parsed._debug_handle_map,
        "delegate_map": parsed._delegate_map,
        "inspector_events": events,
        "traces": traces,
        "hierarchies": hierarchies,
    }
    with open(os.path.join(OUT, name + ".oracle.json"), "w") as f:
        json.dump(oracle, f, indent=0, sort_keys=True, default=str)
        f.write("\n")
    print("wrote", name, os.path.getsize(etrecord), "bytes")


os.makedirs(OUT, exist_ok=True)
# `gen-etrecord-fixtures.py tiny_gpt xnnpack_resnetish` writes those alone.
ONLY = set(sys.argv[1:])
if ONLY:
    torch.manual_seed(3)
    if "tiny_gpt" in ONLY:
        make_profiled("tiny_gpt", TinyGPT().eval(), (torch.tensor([[1, 5, 2, 7]]),), False)
    if "xnnpack_resnetish" in ONLY:
        make_profiled("xnnpack_resnetish", ResNetish().eval(), (torch.randn(1, 3, 16, 16),), True)
    sys.exit(0)
# The same seed and order as tests/fixtures/etdump's generator, so that the
# programs come out the same.
torch.manual_seed(0)
mlp = MLP().eval(); mob = MobileNetish().eval()
x = (torch.randn(1, 16),); xm = (torch.randn(1, 3, 32, 32),)
make("portable_mlp", mlp, x, False, "portable_mlp.pte", "portable_mlp.etdp", None)
make("xnnpack_mobilenetish", mob, xm, True, "xnnpack_mobilenetish.pte", "xnnpack_mobilenetish_debug.etdp",
     "xnnpack_mobilenetish_debug.etdp")
make_grown(mlp, x)
make_delegate_mapped()
torch.manual_seed(3)
make_profiled("tiny_gpt", TinyGPT().eval(), (torch.tensor([[1, 5, 2, 7]]),), False)
make_profiled("xnnpack_resnetish", ResNetish().eval(), (torch.randn(1, 3, 16, 16),), True)
