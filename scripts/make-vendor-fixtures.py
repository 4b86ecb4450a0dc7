#!/usr/bin/env python3
"""Writes the vendor-binary delegate fixtures in tests/fixtures/vendor/.

No vendor SDK or GPU runs here, so each program is made through
ExecuTorch's own flow (torch.export -> to_edge_transform_and_lower with a
partitioner -> to_executorch) with a BackendDetails subclass named like the
backend whose preprocess writes that backend's wire layout around small
stand-in artifacts. CUDA's weight manifest is written by ExecuTorch's own
encode_cuda_weight_metadata. The AOTInductor library is a real ELF shared
object built with `cc -shared` from a one-function C file.

Beside each program, <name>.oracle.json records what preprocess wrote
where: every header field with its payload offset, each artifact's offset,
size and sha256, found in the written file by searching for the payload's
own bytes (the writer's record, not a parser's reading).

Run once in a virtual environment with `pip install executorch==1.5.1
flatbuffers torch==2.13.0` (the executorch wheel does not pull torch in
itself) and a C compiler; the fixtures are committed and the tests never
run this. Its output is the same on every run.
"""

import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile

import flatbuffers
import torch
from executorch.exir import (
    EdgeCompileConfig,
    ExecutorchBackendConfig,
    to_edge_transform_and_lower,
)
from executorch.exir._serialize._named_data_store import NamedDataStore
from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from executorch.exir.backend.compile_spec_schema import CompileSpec
from executorch.exir.backend.partitioner import (
    DelegationSpec,
    Partitioner,
    PartitionResult,
)
from executorch.exir.backend.utils import tag_constant_data

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "vendor")

# What each preprocess call wrote, by (backend, variant); filled as the
# programs are lowered and completed with file offsets once written.
WRITTEN = {}


def sha(b):
    return hashlib.sha256(b).hexdigest()


def filler(n, seed):
    """`n` bytes standing in for a vendor artifact, distinct per seed."""
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha256(f"{seed}:{i}".encode()).digest()
        i += 1
    return bytes(out[:n])


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(4, 4)
        self.l2 = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


def variant(specs):
    for s in specs:
        if s.key == "fixture_variant":
            return s.value.decode()
    raise ValueError("no fixture_variant compile spec")


def record(backend, name, payload, fields, artifacts, named=None, extra=None):
    WRITTEN[(backend, name)] = {
        "backend": backend,
        "variant": name,
        "payload_size": len(payload),
        "payload_sha256": sha(payload),
        "payload": payload,
        "fields": fields,
        "artifacts": artifacts,
        "named": named or {},
        "extra": extra or {},
    }


def artifact(offset, data):
    return {"offset": offset, "size": len(data), "sha256": sha(data)}


# ---------------------------------------------------------------- TensorRT


def tensorrt_blob(v):
    meta = {
        "io_bindings": [
            {"name": "x", "dtype": "float32", "shape": [1, 4], "is_input": True},
            {"name": "out", "dtype": "float32", "shape": [1, 2], "is_input": False},
        ],
        "aliased_io": [],
        "hardware_compatible": False,
        "device_id": 0,
        "serialized_metadata": "",
        "target_platform": "linux_x86_64",
    }
    if v == "kv":
        meta["io_bindings"].append(
            {"name": "k_cache", "dtype": "float16", "shape": [1, 8, 16], "is_input": True}
        )
        meta["io_bindings"].append(
            {"name": "k_cache_out", "dtype": "float16", "shape": [1, 8, 16], "is_input": False}
        )
        meta["aliased_io"] = [{"output": "k_cache_out", "input": "k_cache", "kind": "kv_cache_update"}]
        meta["hardware_compatible"] = True
        meta["device_id"] = 1
    mj = json.dumps(meta, separators=(",", ":")).encode()
    engine = filler({"empty": 0}.get(v, 100), "trt-" + v)
    magic = b"TR02" if meta["aliased_io"] else b"TR01"
    mo = 32
    eo = (mo + len(mj) + 15) & ~15
    esize = len(engine)
    if v == "overclaim":
        esize = len(engine) + 1000
    if v == "wrap":
        esize = (1 << 64) - 8
    if v == "misaligned":
        eo = eo + 8
    reserved = b"\x01" + b"\x00" * 7
    head = struct.pack("<4sIIIQ8s", magic, mo, len(mj), eo, esize, reserved)
    blob = head + mj + b"\x00" * (eo - mo - len(mj)) + engine
    fields = {
        "magic": [0, magic.decode()],
        "metadata_offset": [4, mo],
        "metadata_size": [8, len(mj)],
        "engine_offset": [12, eo],
        "engine_size": [16, esize],
        "reserved": [24, reserved.hex()],
    }
    arts = {"metadata.json": artifact(mo, mj)}
    if v not in ("overclaim", "wrap"):
        arts["engine.plan"] = artifact(eo, engine)
    # The runtime adds engine offset and size in size_t: "wrap" passes its
    # check (the sum wraps below the blob's size), so only these two fail.
    accepts = v not in ("overclaim", "misaligned")
    return blob, fields, arts, {"runtime_accepts": accepts, "metadata": meta}


class TensorRTBackend(BackendDetails):
    @staticmethod
    def preprocess(edge_program, compile_specs):
        v = variant(compile_specs)
        blob, fields, arts, extra = tensorrt_blob(v)
        record("TensorRTBackend", v, blob, fields, arts, extra=extra)
        return PreprocessResult(processed_bytes=blob)


# ---------------------------------------------------------------- MediaTek


class NeuropilotBackend(BackendDetails):
    @staticmethod
    def preprocess(edge_program, compile_specs):
        v = variant(compile_specs)
        model = filler({"empty": 0}.get(v, 64), "mtk-" + v)
        size = len(model) + (500 if v == "overclaim" else 0)
        head = struct.pack("<BIII", 1, 1, 1, size)
        blob = head + model
        fields = {"version": [0, 1], "input_count": [1, 1], "output_count": [5, 1], "model_size": [9, size]}
        arts = {} if v == "overclaim" else {"model.bin": artifact(13, model)}
        store = None
        named = {}
        for s in compile_specs:
            if s.key == "ExtractSharedBlobKey":
                key = s.value.decode()
                shared = filler(48, "mtk-shared")
                if v != "missing_shared":
                    ds = NamedDataStore()
                    ds.add_named_data(key, shared, alignment=16)
                    store = ds.get_named_data_store_output()
                    named["shared_weights.bin"] = {"key": key, "size": len(shared), "sha256": sha(shared)}
                else:
                    named["shared_weights.bin"] = {"key": key, "missing": True}
        record("NeuropilotBackend", v, blob, fields, arts, named=named)
        return PreprocessResult(processed_bytes=blob, data_store_output=store)


# ---------------------------------------------------------------- NXP


def neutron_blob(v):
    version = 0 if v == "v0" else 1
    n_in, n_out = 1, 1
    header = bytes([n_in, n_out, 1, 1, 0, 0, 0, version])
    mc_size = 64 if v != "overclaim" else 4000
    words = [0] * 16
    words[0] = 0x6443_4D6E if v != "bad_magic" else 0xDEADBEEF
    words[6] = mc_size
    words[7] = 24
    if version == 0:
        words[9], words[10], words[11], words[12] = 128, 0, n_in, n_out
    else:
        words[9], words[10], words[11], words[12], words[13], words[14] = 128, 0, 0, 0, n_in, n_out
    microcode = struct.pack("<16I", *words)
    weights = filler(24, "nxp-w")
    kernels = filler(32, "nxp-k")

    def pad(b):
        return b + b"\x00" * (-len(b) % 16)

    blob = pad(header) + pad(microcode) + pad(weights) + kernels
    fields = {
        "neutron_inputs": [0, n_in],
        "neutron_outputs": [1, n_out],
        "input_args": [2, 1],
        "payload_version": [7, version],
    }
    arts = {"kernels.bin": artifact(16 + 64 + 32, kernels), "weights.bin": artifact(16 + 64, weights)}
    if v != "overclaim":
        arts["microcode.bin"] = artifact(16, microcode)
    else:
        arts = {}
    return blob, fields, arts, {"microcode_words": {"magic": [16, words[0]], "microcode_size": [16 + 24, mc_size], "weights_size": [16 + 28, 24]}}


class NeutronBackend(BackendDetails):
    @staticmethod
    def preprocess(edge_program, compile_specs):
        v = variant(compile_specs)
        blob, fields, arts, extra = neutron_blob(v)
        record("NeutronBackend", v, blob, fields, arts, extra=extra)
        return PreprocessResult(processed_bytes=blob)


# ---------------------------------------------------------------- QNN


def qnn_options():
    """A QnnExecuTorchOptions flatbuffer, built table by table."""
    b = flatbuffers.Builder(256)
    saver_dir = b.CreateString("saver_output")
    b.StartObject(2)  # HtpInfo
    b.PrependInt32Slot(0, 79, 0)
    b.PrependUint32Slot(1, 8, 0)
    htp_info = b.EndObject()
    b.StartObject(3)  # SocInfo
    b.PrependInt32Slot(0, 69, 0)  # SM8750
    b.PrependUOffsetTRelativeSlot(1, htp_info, 0)
    soc = b.EndObject()
    b.StartObject(10)  # QnnExecuTorchHtpBackendOptions
    b.PrependInt32Slot(1, 2, 0)  # kHtpBurst
    b.PrependInt32Slot(2, 1, 0)  # kHtpFp16
    b.PrependBoolSlot(4, True, False)
    htp = b.EndObject()
    b.StartObject(4)  # QnnExecuTorchBackendOptions
    b.PrependInt32Slot(0, 2, 0)  # kHtpBackend
    b.PrependUOffsetTRelativeSlot(1, htp, 0)
    backend = b.EndObject()
    b.StartObject(13)  # QnnExecuTorchOptions
    b.PrependUOffsetTRelativeSlot(0, soc, 0)
    b.PrependUOffsetTRelativeSlot(1, backend, 0)
    b.PrependInt32Slot(3, 2, 0)  # kLogLevelWarn
    b.PrependBoolSlot(4, True, False)  # online_prepare
    b.PrependInt32Slot(6, 1, 0)  # kProfileBasic
    b.PrependUOffsetTRelativeSlot(10, saver_dir, 0)
    root = b.EndObject()
    b.Finish(root)
    expected = {
        "soc_info": {"soc_model": "SM8750", "htp_info": {"htp_arch": "V79", "vtcm_size_in_mb": 8}},
        "backend_type": "kHtpBackend",
        "performance_mode": "kHtpBurst",
        "precision": "kHtpFp16",
        "use_conv_hmx": True,
        "log_level": "kLogLevelWarn",
        "online_prepare": True,
        "profile_level": "kProfileBasic",
        "saver_output_dir": "saver_output",
    }
    return bytes(b.Output()), expected


class QnnBackend(BackendDetails):
    @staticmethod
    def preprocess(edge_program, compile_specs):
        v = variant(compile_specs)
        context = filler({"empty": 0}.get(v, 200), "qnn-" + ("shared" if v.startswith("shared") else v))
        if v == "raw":
            blob = context
            fields = {}
            arts = {"context.bin": artifact(0, context)}
        else:
            size = len(context) + (4096 if v == "overclaim" else 0)
            signature = 1234567890123456789
            head = struct.pack("<Iqq", 0x5678ABCD, signature, size)
            head = struct.pack("<IqQ", 0x5678ABCD, signature, size)
            blob = head + b"\x00" * (256 - len(head)) + context
            fields = {"magic": [0, "0x5678abcd"], "signature": [4, signature], "context_binary_size": [12, size]}
            arts = {} if v == "overclaim" else {"context.bin": artifact(256, context)}
        record("QnnBackend", v, blob, fields, arts)
        return PreprocessResult(processed_bytes=blob)


# ---------------------------------------------------------------- AOTInductor


def shared_library(tmp):
    c = os.path.join(tmp, "model.c")
    so = os.path.join(tmp, "model.so")
    with open(c, "w") as f:
        f.write(
            "int AOTInductorModelContainerRun(int n) { return n + 1; }\n"
            "int AOTInductorModelContainerGetNumOutputs(void) { return 1; }\n"
        )
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-s", "-o", so, c], check=True)
    with open(so, "rb") as f:
        return f.read()


SO = None


def aoti_preprocess(backend, edge_program, compile_specs):
    from executorch.backends.cuda.cuda_weight_collector import (
        CudaWeightEntry,
        encode_cuda_weight_metadata,
    )
    from executorch.exir.tensor import scalar_type_enum

    v = variant(compile_specs)
    ds = NamedDataStore()
    named = {}
    so_key = sha(SO) + "_so_blob"
    if v == "keys":
        weights = filler(80, "aoti-weights")
        wkey = sha(weights) + "_weights_blob"
        ds.add_named_data(so_key, SO, alignment=16)
        ds.add_named_data(wkey, weights, alignment=16)
        blob = f"{so_key}\n{wkey}".encode()
        named = {"model.so": {"key": so_key, "size": len(SO), "sha256": sha(SO)},
                 "weights.bin": {"key": wkey, "size": len(weights), "sha256": sha(weights)}}
        fields = {"so_blob_key": [0, so_key], "weights_blob_key": [len(so_key) + 1, wkey]}
    elif v == "missing":
        blob = b"0000_so_blob\n1111_weights_blob"
        named = {"model.so": {"key": "0000_so_blob", "missing": True},
                 "weights.bin": {"key": "1111_weights_blob", "missing": True}}
        fields = {"so_blob_key": [0, "0000_so_blob"], "weights_blob_key": [13, "1111_weights_blob"]}
    elif v == "empty":
        weights = filler(40, "aoti-legacy")
        ds.add_named_data("legacy_so_blob", SO, alignment=16)
        ds.add_named_data("legacy_weights_blob", weights, alignment=16)
        blob = b""
        named = {"model.so": {"key": "legacy_so_blob", "size": len(SO), "sha256": sha(SO)},
                 "weights.bin": {"key": "legacy_weights_blob", "size": len(weights), "sha256": sha(weights)}}
        fields = {}
    elif v == "cuda":
        ds.add_named_data(so_key, SO, alignment=16)
        w = torch.arange(16, dtype=torch.float32).reshape(4, 4) / 8
        bias = torch.tensor([0.5, -1.0, 2.0, 0.25], dtype=torch.float32)
        half = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float16)
        bf = torch.tensor([1.0, -2.0], dtype=torch.bfloat16)

        def raw(t):
            return t.contiguous().view(torch.uint8).numpy().tobytes()

        def key(fqn):
            return f"cuda_fqn_weight:cuda:{fqn}"

        entries = [
            ("l1.weight", key("l1.weight"), w, [4, 4], [4, 1], 0),
            ("l1.bias", key("l1.bias"), bias, [4], [1], 0),
            ("l1.weight_t", key("l1.weight"), w, [4, 4], [1, 4], 0),
            ("half", key("half"), half, [3], [1], 0),
            ("bf", key("bf"), bf, [2], [1], 0),
            ("ghost", key("ghost"), bias, [4], [1], 0),
        ]
        out = []
        stored = set()
        for fqn, k, t, sizes, strides, off in entries:
            data = raw(t)
            if fqn != "ghost" and k not in stored:
                ds.add_named_data(k, data, alignment=16, external_tag="aoti_cuda_blob")
                stored.add(k)
            out.append(CudaWeightEntry(fqn=fqn, storage_key=k, storage_nbytes=len(data),
                                       dtype=scalar_type_enum(t.dtype), device_type=1,
                                       storage_offset=off, sizes=tuple(sizes), strides=tuple(strides)))
            named[f"weights/{fqn}.bin"] = {
                "key": k, "size": len(data), "sha256": sha(data), "missing": fqn == "ghost",
                "dtype_code": scalar_type_enum(t.dtype), "sizes": sizes, "strides": strides,
                "npy": fqn in ("l1.weight", "l1.bias", "half"),
                "values": t.float().flatten().tolist() if fqn == "bf" else None,
            }
        named["model.so"] = {"key": so_key, "size": len(SO), "sha256": sha(SO)}
        blob = encode_cuda_weight_metadata(so_key, out)
        fields = {"magic": [0, "ETCUDAFQN3"], "so_blob_key": [14, so_key]}
    else:
        raise ValueError(v)
    record(backend, v, blob, fields, {}, named=named,
           extra={"symbols": ["AOTInductorModelContainerGetNumOutputs", "AOTInductorModelContainerRun"]})
    return PreprocessResult(processed_bytes=blob, data_store_output=ds.get_named_data_store_output())


class MetalBackend(BackendDetails):
    @staticmethod
    def preprocess(edge_program, compile_specs):
        return aoti_preprocess("MetalBackend", edge_program, compile_specs)


class CudaBackend(BackendDetails):
    @staticmethod
    def preprocess(edge_program, compile_specs):
        return aoti_preprocess("CudaBackend", edge_program, compile_specs)


# ---------------------------------------------------------------- lowering


class WholeGraph(Partitioner):
    def __init__(self, backend, specs):
        super().__init__()
        self.delegation_spec = DelegationSpec(backend, specs)

    def partition(self, ep):
        for node in ep.graph_module.graph.nodes:
            if node.op == "call_function":
                node.meta["delegation_tag"] = "tag0"
        tag_constant_data(ep)
        return PartitionResult(tagged_exported_program=ep, partition_tags={"tag0": self.delegation_spec})


def write(name, methods):
    """Lowers one method per (method name, backend, variant, extra specs)
    and writes `<name>.pte`, any `.ptd`, and `<name>.oracle.json`."""
    eps = {}
    parts = {}
    for m, backend, v, specs in methods:
        eps[m] = torch.export.export(Mlp().eval(), (torch.ones(1, 4),), strict=True)
        cs = [CompileSpec("fixture_variant", v.encode())] + [CompileSpec(k, val) for k, val in specs]
        parts[m] = [WholeGraph(backend, cs)]
    edge = to_edge_transform_and_lower(eps, partitioner=parts,
                                       compile_config=EdgeCompileConfig(_check_ir_validity=False))
    et = edge.to_executorch(ExecutorchBackendConfig())
    path = os.path.join(OUT, name + ".pte")
    with open(path, "wb") as f:
        et.write_to_file(f)
    et.write_tensor_data_to_file(OUT)
    data = open(path, "rb").read()
    oracle = {"program": name + ".pte", "how": "scripts/make-vendor-fixtures.py", "methods": {}}
    for m, backend, v, specs in methods:
        w = dict(WRITTEN[(backend, v)])
        payload = w.pop("payload")
        at = data.find(payload) if payload else None
        w["payload_offset"] = at
        w["compile_specs"] = {k: val.decode("utf-8", "replace") for k, val in specs}
        oracle["methods"][m] = w
    with open(os.path.join(OUT, name + ".oracle.json"), "w") as f:
        json.dump(oracle, f, indent=1, sort_keys=True)
        f.write("\n")
    print(name, len(data), "bytes")


def main():
    global SO
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        SO = shared_library(tmp)
    trt = "TensorRTBackend"
    write("tensorrt", [(m, trt, m, []) for m in ("forward", "kv", "empty", "overclaim", "wrap", "misaligned")])
    mtk = "NeuropilotBackend"
    write("mediatek", [
        ("forward", mtk, "forward", []),
        ("empty", mtk, "empty", []),
        ("overclaim", mtk, "overclaim", []),
        ("shared", mtk, "shared", [("ExtractSharedBlobKey", b"mtk_shared_weights")]),
        ("missing_shared", mtk, "missing_shared", [("ExtractSharedBlobKey", b"mtk_nowhere")]),
    ])
    write("nxp", [(m, "NeutronBackend", m, []) for m in ("forward", "v0", "bad_magic", "overclaim")])
    opts, expected = qnn_options()
    WRITTEN[("QnnOptions", "expected")] = expected
    write("qnn", [
        ("forward", "QnnBackend", "forward", [("qnn_compile_spec", opts)]),
        ("shared_a", "QnnBackend", "shared_a", [("qnn_compile_spec", opts)]),
        ("shared_b", "QnnBackend", "shared_b", [("qnn_compile_spec", opts)]),
        ("raw", "QnnBackend", "raw", []),
        ("empty", "QnnBackend", "empty", []),
        ("overclaim", "QnnBackend", "overclaim", []),
    ])
    with open(os.path.join(OUT, "qnn_options.expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    write("aoti", [
        ("metal", "MetalBackend", "keys", []),
        ("cuda", "CudaBackend", "cuda", []),
        ("legacy", "MetalBackend", "empty", [("method_name", b"legacy")]),
        ("missing", "CudaBackend", "missing", []),
    ])


if __name__ == "__main__":
    sys.exit(main())
