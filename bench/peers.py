#!/usr/bin/env python3
"""sluice against its peers on the same work: PyTorch and onnxruntime.

For each workload, one ONNX file is the shared source for sluice and
onnxruntime, and PyTorch runs the same computation with the same weights and
inputs. Peers:

  sluice GPU        `sluice bench MODEL --device gpu:0 --json` (p50), and
                    `sluice run` for the output
  sluice CPU        the same with --device cpu:0
  torch eager       PyTorch on cuda:0
  torch CUDA graph  the same step captured once (after warm-up on a side
                    stream) and replayed with torch.cuda.CUDAGraph
  onnxruntime CPU   CPUExecutionProvider, intra-op threads = all cores

Times are medians over N steps after warm-up. A sluice bench step starts and
ends on the host (Session::Run copies the feeds to the GPU and returns the
outputs as new host tensors), so the timed PyTorch step does the same work:
copy the inputs in from pinned host tensors, run, take the output with
.cpu(), with torch.cuda.synchronize() before and after. PyTorch's time with
the output copied into a pinned tensor instead (pinned_out_ms), and without
any copy (compute_ms, device-resident inputs), are in peers.json and in
peers.md's second table. The copies are not quite alike in the first table
(sluice feeds from ordinary memory, PyTorch from pinned tensors), which
shows at large inputs; sluice's GPU step is also timed with `--pinned`
(pinned_ms: feeds and results in page-locked memory) and with
`--io-device` (io_device_ms: no copies), beside PyTorch's pinned-output and
compute-only steps in peers.md's last two tables. float32 with TF32 off everywhere, unless
--precision float16|bfloat16: then sluice's GPU peer runs with that
`--precision` and PyTorch's GPU peers under torch.autocast("cuda", dtype),
eager and captured alike (the CPU peers stay float32). With --tf32 both
sides' float32 GPU products may use TF32 (sluice: `allow_tf32: true` in a
config file; PyTorch: torch.backends.cuda.matmul.allow_tf32 and
torch.backends.cudnn.allow_tf32).
Ratios are peer time / sluice time: above 1, sluice is faster (GPU peers
against sluice GPU, onnxruntime against sluice CPU). Outputs are compared
with sluice's on the same kind of device (max |d| and relative L2).

    python3 bench/peers.py --sluice .gpu/bin/sluice --out $OUT [--quick]

Writes $OUT/peers.json and $OUT/peers.md and prints the table. Workloads:
encoder_b1 / encoder_b32 (bench/models/encoder_layer.py), matmul_4096 /
matmul_8192 (fp32), neg_chain (2,000 chained Neg on 1,024 floats),
resnet50_b1 / resnet50_b32 (bench/models/resnet50.py), mobilenet_v2_b1 /
mobilenet_v2_b32 (bench/models/mobilenet_v2.py: depthwise convolutions,
ReLU6 as Clip) and densenet121_b1 / densenet121_b32
(bench/models/densenet121.py: Concat, AveragePool), each run in PyTorch
node by node from the same ONNX file with torch.nn.functional; with
`--only zoo` (or zoo_NAME_b1; zoo_b32 or zoo_NAME_b32 at batch 32),
torchvision's CNNs of bench/cpu_zoo.py
(bench/models/torchvision_zoo.py), PyTorch running torchvision's module;
with `--only tzoo` (or tzoo_NAME_b1; tzoo_b16 or tzoo_NAME_b16 at batch
16), bench/models/transformer_zoo.py's GPT-2, DistilBERT, Llama (GQA) and
Whisper encoder exported with TorchScript, PyTorch running the transformers
module; and, when
torchvision and transformers are importable and time allows,
scripts/real_onnx_models.py's ResNet-18, small GPT-2 and small BERT. Without
torch the PyTorch columns are skipped, without a GPU the GPU columns; every
failure is recorded and the rest goes on. Needs numpy, onnx, onnxruntime;
torch optional.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "models"))
import densenet121  # noqa: E402  (bench/models/densenet121.py)
import encoder_layer  # noqa: E402  (bench/models/encoder_layer.py)
import mobilenet_v2  # noqa: E402  (bench/models/mobilenet_v2.py)
import resnet50  # noqa: E402  (bench/models/resnet50.py)
import torchvision_zoo  # noqa: E402  (bench/models/torchvision_zoo.py)
import transformer_zoo  # noqa: E402  (bench/models/transformer_zoo.py)
from bench_env import cpu_model, sluice_gpus, tool_env  # noqa: E402

GPU_PEERS = ("torch_eager", "torch_graph", "torch_compiled")
PEER_TITLES = {
    "sluice_gpu": "sluice GPU", "sluice_cpu": "sluice CPU",
    "torch_eager": "torch eager", "torch_graph": "torch CUDA graph",
    "torch_compiled": "torch.compile reduce-overhead",
    "onnxruntime_cpu": "onnxruntime CPU", "torch_cpu": "torch CPU (check)",
}


# ---------------------------------------------------------------- workloads
#
# A workload is a dict: name, title, onnx (path), feeds (input name -> array,
# in the order the PyTorch callable takes them), torch (a function of
# (torch, device) returning that callable, or None), runs_gpu, runs_cpu,
# warmup_cpu, files (paths to delete afterwards).

def encoder_workload(work, batch, quick):
    paths = encoder_layer.write(work, batch)
    weights = encoder_layer.load_weights(paths["npz"])

    def make_torch(torch, device):
        layer = encoder_layer.torch_layer(weights).to(device)
        return lambda x: layer(x)

    return {"name": f"encoder_b{batch}",
            "title": f"encoder layer d768 h12 ff3072, {batch}x128",
            "onnx": paths["onnx"], "feeds": {"x": np.load(paths["x"])},
            "torch": make_torch,
            "runs_gpu": 30 if quick else 100,
            "runs_cpu": (5 if quick else 20) if batch == 1 else (3 if quick else 10),
            "warmup_cpu": 2, "files": [paths["onnx"], paths["x"]]}


def matmul_workload(work, n, quick):
    import onnx
    from onnx import TensorProto, helper
    path = os.path.join(work, f"matmul_{n}.onnx")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="matmul")],
        f"matmul_{n}",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, [n, n])
         for k in ("a", "b")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])])
    save_model(onnx, helper, graph, path)
    rng = np.random.default_rng(n)
    feeds = {k: rng.standard_normal((n, n), dtype=np.float32)
             for k in ("a", "b")}
    big = n >= 8192
    return {"name": f"matmul_{n}", "title": f"MatMul {n}^3 fp32",
            "onnx": path, "feeds": feeds,
            "torch": lambda torch, device: torch.matmul,
            "runs_gpu": (5 if quick else 10) if big else (10 if quick else 30),
            "runs_cpu": (1 if quick else 3) if big else (2 if quick else 5),
            "warmup_cpu": 0 if big and quick else 1, "files": [path]}


def neg_chain_workload(work, quick, length=2000, size=1024):
    import onnx
    from onnx import TensorProto, helper
    path = os.path.join(work, "neg_chain.onnx")
    names = ["x"] + [f"n{i}" for i in range(1, length)] + ["y"]
    nodes = [helper.make_node("Neg", [names[i]], [names[i + 1]], name=f"neg{i}")
             for i in range(length)]
    graph = helper.make_graph(
        nodes, "neg_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [size])])
    save_model(onnx, helper, graph, path)

    def make_torch(torch, device):
        def chain(x):
            for _ in range(length):
                x = torch.neg(x)
            return x
        return chain

    feeds = {"x": np.random.default_rng(7).standard_normal(size).astype(np.float32)}
    return {"name": "neg_chain", "title": f"{length} chained Neg, {size} floats",
            "onnx": path, "feeds": feeds, "torch": make_torch,
            "runs_gpu": 20 if quick else 50, "runs_cpu": 20 if quick else 50,
            "warmup_cpu": 3, "files": [path]}


def onnx_cnn_torch(path):
    """A PyTorch callable that runs a CNN ONNX graph (Conv with groups,
    BatchNormalization, Relu, Clip with constant bounds, MaxPool,
    AveragePool, Add, Concat, GlobalAveragePool, Flatten, Gemm: what
    bench/models/resnet50.py, mobilenet_v2.py and densenet121.py write) node
    by node with torch.nn.functional and the file's own weights, so PyTorch
    computes exactly the model sluice reads. Returns make_torch(torch,
    device)."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(path)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    nodes = list(model.graph.node)
    in_name = model.graph.input[0].name
    out_name = model.graph.output[0].name

    def attrs(node):
        return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}

    def bound(node, i):
        """Clip's min (i = 1) or max (i = 2) as a Python float, read from the
        initializers once here: a .item() on a GPU tensor inside the step
        would synchronise and break the CUDA graph capture."""
        if len(node.input) <= i or not node.input[i]:
            return None
        if node.input[i] not in inits:
            raise ValueError(f"onnx_cnn_torch: Clip bound {node.input[i]} "
                             "is not an initializer")
        return float(inits[node.input[i]].reshape(()))

    clip_bounds = {node.output[0]: (bound(node, 1), bound(node, 2))
                   for node in nodes if node.op_type == "Clip"}

    def make_torch(torch, device):
        import torch.nn.functional as F
        w = {k: torch.from_numpy(np.ascontiguousarray(v)).to(device)
             for k, v in inits.items()}

        def pads2(a):  # ONNX [t, l, b, r] -> symmetric (h, w); ResNet's are
            p = a.get("pads", [0, 0, 0, 0])
            if p[0] != p[2] or p[1] != p[3]:
                raise ValueError(f"asymmetric pads {p}")
            return (p[0], p[1])

        def run(x):
            env = {in_name: x}
            get = lambda n: env[n] if n in env else w[n]  # noqa: E731
            for node in nodes:
                a, ins, op = attrs(node), node.input, node.op_type
                if op == "Conv":
                    y = F.conv2d(get(ins[0]), get(ins[1]),
                                 get(ins[2]) if len(ins) > 2 and ins[2] else None,
                                 stride=tuple(a.get("strides", [1, 1])),
                                 padding=pads2(a),
                                 dilation=tuple(a.get("dilations", [1, 1])),
                                 groups=a.get("group", 1))
                elif op == "BatchNormalization":
                    y = F.batch_norm(get(ins[0]), get(ins[3]), get(ins[4]),
                                     get(ins[1]), get(ins[2]), False, 0.0,
                                     a.get("epsilon", 1e-5))
                elif op == "Relu":
                    y = F.relu(get(ins[0]))
                elif op == "MaxPool":
                    y = F.max_pool2d(get(ins[0]), tuple(a["kernel_shape"]),
                                     tuple(a.get("strides", [1, 1])), pads2(a))
                elif op == "Clip":  # ReLU6 in MobileNetV2
                    lo, hi = clip_bounds[node.output[0]]
                    y = torch.clamp(get(ins[0]), lo, hi)
                elif op == "AveragePool":  # DenseNet's transitions
                    y = F.avg_pool2d(
                        get(ins[0]), tuple(a["kernel_shape"]),
                        tuple(a.get("strides", [1, 1])), pads2(a),
                        ceil_mode=bool(a.get("ceil_mode", 0)),
                        count_include_pad=bool(a.get("count_include_pad", 0)))
                elif op == "Concat":  # DenseNet's dense connections
                    y = torch.cat([get(i) for i in ins], a["axis"])
                elif op == "Add":
                    y = get(ins[0]) + get(ins[1])
                elif op == "GlobalAveragePool":
                    y = F.adaptive_avg_pool2d(get(ins[0]), 1)
                elif op == "Flatten":
                    y = torch.flatten(get(ins[0]), a.get("axis", 1))
                elif op == "Gemm":
                    b = get(ins[1])
                    y = F.linear(get(ins[0]), b if a.get("transB", 0) else b.t(),
                                 get(ins[2]) if len(ins) > 2 else None)
                else:
                    raise ValueError(f"onnx_cnn_torch: no {op}")
                env[node.output[0]] = y
            return env[out_name]
        return run
    return make_torch


# The CNNs of bench/models (random weights, BatchNorm unfolded in the file),
# 224x224, float32: name -> (module with write(work, batch), title).
CNNS = {
    "resnet50": (resnet50, "ResNet-50 v1.5"),
    "mobilenet_v2": (mobilenet_v2, "MobileNetV2 (depthwise, Clip)"),
    "densenet121": (densenet121, "DenseNet-121 (Concat)"),
}


def cnn_workload(work, model, batch, quick):
    """One of CNNS at `batch`, run in PyTorch by onnx_cnn_torch."""
    module, title = CNNS[model]
    paths = module.write(work, batch)
    return {"name": f"{model}_b{batch}",
            "title": f"{title}, {batch}x3x224x224",
            "onnx": paths["onnx"], "feeds": {"x": np.load(paths["x"])},
            "torch": onnx_cnn_torch(paths["onnx"]),
            "runs_gpu": 30 if quick else 100,
            "runs_cpu": (1 if quick else 3) if batch > 1 else (3 if quick else 10),
            "warmup_cpu": 1, "files": [paths["onnx"], paths["x"]]}


def zoo_runs(batch, quick):
    """Steps for a zoo model (torchvision's or the transformer zoo's)."""
    big = batch > 1
    return {"runs_gpu": (20 if big else 30) if quick else (50 if big else 100),
            "runs_cpu": 1 if big else (3 if quick else 10), "warmup_cpu": 1}


def zoo_workload(work, model, quick, batch=1):
    """torchvision's `model` at `batch` as bench/models/torchvision_zoo.py
    exports it for cpu_zoo.py (random weights and BatchNormalization
    statistics from its seed), PyTorch running torchvision's own module."""
    paths = torchvision_zoo.write(os.path.join(work, f"zoo_b{batch}"), model, batch)

    def make_torch(torch, device):
        module = torchvision_zoo._module(model).to(device)
        return lambda x: module(x)

    return {"name": f"zoo_{model}_b{batch}",
            "title": f"{model} (torchvision), {batch}x3x224x224",
            "onnx": paths["onnx"], "feeds": {"x": np.load(paths["x"])},
            "torch": make_torch, **zoo_runs(batch, quick),
            "files": [paths["onnx"], paths["x"]]}


# The transformer zoo's large batch (sequences of 128 tokens; Whisper:
# spectrograms of 500 frames).
TZOO_BIG_BATCH = 16


def tzoo_workload(work, model, quick, batch=1):
    """bench/models/transformer_zoo.py's `model` at `batch`, exported here
    with TorchScript (random weights from its seed), PyTorch running the
    same transformers module."""
    paths = transformer_zoo.write(os.path.join(work, "tzoo"), model,
                                  "torchscript", batch=batch)

    def make_torch(torch, device):
        module = transformer_zoo._module(model, batch)[0].to(device)
        return lambda x: module(x)

    feeds = dict(np.load(paths["inputs"]))
    shapes = ", ".join(f"{k} {list(v.shape)}" for k, v in feeds.items())
    return {"name": f"tzoo_{model}_b{batch}",
            "title": f"{model} (transformers; {shapes})",
            "onnx": paths["onnx"], "feeds": feeds,
            "torch": make_torch, **zoo_runs(batch, quick),
            "files": [paths["onnx"], paths["inputs"], paths["torch_y"]]}


def resnet50_workload(work, batch, quick):
    """ResNet-50 v1.5 (bench/models/resnet50.py) at `batch`."""
    return cnn_workload(work, "resnet50", batch, quick)


def save_model(onnx, helper, graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="sluice bench/peers.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def real_model_workloads(work, quick, base=False, names=None):
    """scripts/real_onnx_models.py's models (with `base`, its BERT-base and
    GPT-2 sizes instead), exported there; yields workloads (or a dict with
    "error" for one that failed to build or export). `names`: only these."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
    import real_onnx_models as rom
    models = rom.build_base_models() if base else rom.build_models()
    for name, model, inputs in models:
        if names and name not in names:
            continue
        try:
            path, how, wrapped = rom.export(name, model, inputs, work)
        except Exception as e:  # the exporter raises many kinds
            yield {"name": name, "error": f"export failed: {e}"[:500]}
            continue

        def make_torch(torch, device, wrapped=wrapped):
            module = wrapped.to(device)
            return lambda *args: module(*args)

        shapes = ", ".join(f"{k} {list(v.shape)}" for k, v in inputs.items())
        yield {"name": name, "title": f"{name} ({shapes}; export {how})",
               "onnx": path, "feeds": {k: v.numpy() for k, v in inputs.items()},
               "torch": make_torch, "runs_gpu": 20 if quick else 50,
               "runs_cpu": 5 if quick else 20, "warmup_cpu": 2, "files": [path]}


# -------------------------------------------------------------------- sluice

def run_sluice(sluice, wl, feed_files, device, runs, warmup, out_dir, timeout,
               precision=None, tf32=False, conv_layout=None):
    """`sluice run` for the output, then `sluice bench` for the time."""
    inputs = []
    for k, f in feed_files.items():
        inputs += ["--input", f"{k}={f}"]
    env = tool_env(sluice)
    res = {"device": device}
    dev_args = ["--device", device]
    if device.startswith("cpu"):
        # `use_gpu: false` hides every GPU, so that nothing runs there even
        # where --device alone would not keep it off (seen on the H200 build
        # of 2026-11-29: --device cpu:0 still ran on /gpu:0).
        config = os.path.join(os.path.dirname(out_dir), "cpu_only.pbtxt")
        with open(config, "w") as f:
            f.write("use_gpu: false\n")
        dev_args += ["--config", config]
    else:
        if precision:
            dev_args += ["--precision", precision]
        if conv_layout:
            dev_args += ["--conv-layout", conv_layout]
        if tf32:
            config = os.path.join(os.path.dirname(out_dir), "tf32.pbtxt")
            with open(config, "w") as f:
                f.write("allow_tf32: true\n")
            dev_args += ["--config", config]
    run_cmd = [sluice, "run", wl["onnx"], *inputs, "--output-dir", out_dir,
               *dev_args]
    r = subprocess.run(run_cmd, capture_output=True, text=True, env=env,
                       timeout=timeout)
    if r.returncode != 0:
        res["error"] = "sluice run: " + one_line(r.stderr or r.stdout)
        return res, None
    y = np.load(output_file(out_dir))
    bench_cmd = [sluice, "bench", wl["onnx"], *inputs, *dev_args, "--json", "--runs", str(runs), "--warmup", str(warmup),
                 "--top", "5"]
    b = subprocess.run(bench_cmd, capture_output=True, text=True, env=env,
                       timeout=timeout)
    try:
        data = json.loads(b.stdout)
    except ValueError:
        data = {"ok": False, "error": one_line(b.stderr or b.stdout)}
    if b.returncode != 0 or not data.get("ok"):
        res["error"] = "sluice bench: " + one_line(str(data.get("error", data)))
        return res, y
    lat = data["latency_s"]
    # Top nodes read "NAME (OP) on /DEVICE"; feeds and copies aside, they
    # should be on the device asked for.
    nodes = data.get("profile", {}).get("top_nodes", [])
    ran_on = sorted({n["node"].rsplit(" on ", 1)[-1] for n in nodes
                     if " on " in n.get("node", "") and
                     not any(f"({op})" in n["node"] for op in ("Input", "copy"))})
    if ran_on and not all(d.lstrip("/").startswith(device.split(":")[0])
                          for d in ran_on):
        res["warning"] = f"asked for {device}, top nodes ran on {', '.join(ran_on)}"
    res["ran_on"] = ran_on
    res.update({"ms": lat["p50"] * 1e3, "min_ms": lat["min"] * 1e3,
                "p90_ms": lat["p90"] * 1e3, "runs": data["runs"],
                "warmup": warmup,
                "session_create_s": data.get("session_create_s"),
                "first_run_s": data.get("first_run_s"),
                "peak_memory": data.get("peak_memory"),
                "gpu_graph_steps": data.get("gpu_graph_steps"),
                "gpu_graph_bytes": data.get("gpu_graph_bytes"),
                "gpu_graph_why_not": data.get("gpu_graph_why_not"),
                "first_step_peak_bytes": data.get("first_step_peak_bytes"),
                "cublas_workspace_bytes": data.get("cublas_workspace_bytes"),
                "top_ops": data.get("profile", {}).get("top_ops"),
                "top_nodes": nodes,
                "notes": data.get("notes")})
    if device.startswith("gpu"):
        # Again with the feeds and results kept on the GPU (--io-device):
        # what PyTorch's compute-only figures are compared with. And from and
        # to page-locked host memory (--pinned): the copies PyTorch's step
        # makes (inputs from pinned tensors; its pinned-output variant),
        # which ordinary memory's staged copies cannot match on a large
        # input or output.
        for key, flags in (("io_device", ["--io-device", device]),
                           ("pinned", ["--pinned"])):
            run = subprocess.run(bench_cmd + flags, capture_output=True,
                                 text=True, env=env, timeout=timeout)
            try:
                run_data = json.loads(run.stdout)
            except ValueError:
                run_data = {}
            if run.returncode == 0 and run_data.get("ok"):
                res[f"{key}_ms"] = run_data["latency_s"]["p50"] * 1e3
            else:
                res[f"{key}_error"] = one_line(run.stderr or run.stdout)
    return res, y


def output_file(out_dir):
    path = os.path.join(out_dir, "y.npy")
    if os.path.exists(path):
        return path
    files = sorted(f for f in os.listdir(out_dir) if f.endswith(".npy"))
    return os.path.join(out_dir, files[0])


def one_line(text, limit=600):
    return " | ".join(str(text).strip().splitlines())[:limit]


# ------------------------------------------------------------ PyTorch, ORT

def median_ms(step, runs, warmup, sync=lambda: None):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(runs):
        sync()
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3, float(min(times)) * 1e3


def torch_gpu(torch, wl, runs, precision=None, compiled=False):
    """Eager and CUDA-graph peers on cuda:0; returns {peer: (result, y)}.

    Each peer is timed three ways: "ms" (the table's figure) copies the
    inputs in from pinned host tensors, runs, and takes the output with
    .cpu(), a new pageable host tensor as sluice's Session::Run returns;
    "pinned_out_ms" copies the output into a pinned host tensor instead;
    "compute_ms" runs on device-resident inputs and copies nothing.
    """
    dev = torch.device("cuda:0")
    sync = torch.cuda.synchronize
    out = {}
    with torch.no_grad():
        model_fn = wl["torch"](torch, dev)
        if precision:
            dtype = {"float16": torch.float16, "bfloat16": torch.bfloat16}[precision]

            def fn(*a):
                with torch.autocast("cuda", dtype=dtype):
                    return model_fn(*a).float()
        else:
            fn = model_fn
        host = [torch.from_numpy(np.ascontiguousarray(a)).pin_memory()
                for a in wl["feeds"].values()]
        dev_in = [h.to(dev) for h in host]
        y0 = fn(*dev_in)
        out_pinned = torch.empty(y0.shape, dtype=y0.dtype, pin_memory=True)
        del y0

        def feed():
            for d, h in zip(dev_in, host):
                d.copy_(h, non_blocking=True)

        def timings(run):
            """run() launches one step on device-resident inputs and
            returns its output tensor on the GPU."""
            got = {}

            def step():
                feed()
                got["y"] = run().cpu()

            def pinned_step():
                feed()
                out_pinned.copy_(run(), non_blocking=True)

            ms, min_ms = median_ms(step, runs, 3, sync)
            pinned_ms, _ = median_ms(pinned_step, runs, 1, sync)
            compute_ms, _ = median_ms(run, runs, 1, sync)
            return ({"ms": ms, "min_ms": min_ms, "runs": runs,
                     "pinned_out_ms": pinned_ms, "compute_ms": compute_ms},
                    got["y"].numpy().copy())

        try:
            out["torch_eager"] = timings(lambda: fn(*dev_in))
        except Exception as e:
            out["torch_eager"] = ({"error": one_line(f"{type(e).__name__}: {e}")}, None)

        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    fn(*dev_in)
            torch.cuda.current_stream().wait_stream(side)
            sync()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_out = fn(*dev_in)

            def replay():
                graph.replay()
                return static_out

            out["torch_graph"] = timings(replay)
        except Exception as e:
            out["torch_graph"] = ({"error": one_line(f"{type(e).__name__}: {e}")}, None)

        # torch.compile with mode="reduce-overhead" (fused kernels replayed as
        # CUDA graphs): the faster PyTorch on transformers (--compile).
        if compiled:
            try:
                t0 = time.perf_counter()
                cfn = torch.compile(fn, mode="reduce-overhead")
                for _ in range(3):
                    cfn(*dev_in)
                sync()
                res, y = timings(lambda: cfn(*dev_in))
                res["compile_s"] = round(time.perf_counter() - t0, 1)
                out["torch_compiled"] = (res, y)
            except Exception as e:
                out["torch_compiled"] = (
                    {"error": one_line(f"{type(e).__name__}: {e}")}, None)
    torch.cuda.synchronize()
    return out  # the caller empties the cache once these locals are gone


def torch_cpu_check(torch, wl):
    """One untimed PyTorch step on the CPU: an output check without a GPU."""
    with torch.no_grad():
        fn = wl["torch"](torch, torch.device("cpu"))
        args = [torch.from_numpy(np.ascontiguousarray(a)) for a in wl["feeds"].values()]
        t0 = time.perf_counter()
        y = fn(*args).numpy().copy()
    return {"ms_one_step": (time.perf_counter() - t0) * 1e3}, y


def onnxruntime_cpu(ort, wl, runs, warmup):
    so = ort.SessionOptions()
    so.intra_op_num_threads = os.cpu_count() or 1
    sess = ort.InferenceSession(wl["onnx"], so, providers=["CPUExecutionProvider"])
    feeds = wl["feeds"]
    y = sess.run(None, feeds)[0]
    ms, min_ms = median_ms(lambda: sess.run(None, feeds), runs, warmup)
    return {"ms": ms, "min_ms": min_ms, "runs": runs, "warmup": warmup,
            "threads": so.intra_op_num_threads}, y


# ---------------------------------------------------------------- comparing

def compare(got, want):
    if got is None or want is None:
        return {}
    if got.shape != want.shape:
        return {"shape_mismatch": [list(got.shape), list(want.shape)]}
    g, w = got.astype(np.float64), want.astype(np.float64)
    return {"max_abs_diff": float(np.abs(g - w).max()) if g.size else 0.0,
            "rel_l2": float(np.linalg.norm((g - w).ravel()) /
                            max(np.linalg.norm(w.ravel()), 1e-30))}


def run_workload(wl, ctx):
    """Every peer on one workload; returns its JSON record."""
    rec = {"name": wl["name"], "title": wl["title"],
           "inputs": {k: [list(v.shape), str(v.dtype)] for k, v in wl["feeds"].items()},
           "peers": {}}
    work = os.path.dirname(wl["onnx"])
    feed_files = {}
    for k, v in wl["feeds"].items():
        feed_files[k] = os.path.join(work, f"{wl['name']}_{k}.npy")
        np.save(feed_files[k], v)
    wl["files"] += list(feed_files.values())
    outputs = {}
    peers = rec["peers"]

    def attempt(peer, fn):
        t0 = time.perf_counter()
        try:
            res, y = fn()
        except Exception as e:
            res, y = {"error": one_line(f"{type(e).__name__}: {e}")}, None
        res["wall_s"] = round(time.perf_counter() - t0, 2)
        peers[peer], outputs[peer] = res, y
        status = f"{res['ms']:.3f} ms" if "ms" in res else res.get("error", "done")
        log(f"  {wl['name']}: {PEER_TITLES[peer]}: {status}")

    for peer, device, runs, warmup in (
            ("sluice_gpu", "gpu:0", wl["runs_gpu"], 3),
            ("sluice_cpu", "cpu:0", wl["runs_cpu"], wl["warmup_cpu"])):
        if peer == "sluice_gpu" and not ctx["sluice_gpu"]:
            continue
        if peer == "sluice_cpu" and ctx.get("no_cpu"):
            continue
        out_dir = os.path.join(work, f"{wl['name']}_{peer}")
        wl["files"].append(out_dir)
        attempt(peer, lambda: run_sluice(ctx["sluice"], wl, feed_files, device,
                                         runs, warmup, out_dir, ctx["timeout"],
                                         ctx.get("precision"),
                                         ctx.get("tf32", False) and device.startswith("gpu"),
                                         ctx.get("conv_layout")))
    if ctx["ort"] is not None and not ctx.get("no_cpu"):
        attempt("onnxruntime_cpu", lambda: onnxruntime_cpu(
            ctx["ort"], wl, wl["runs_cpu"], wl["warmup_cpu"]))
    torch = ctx["torch"]
    if torch is not None and wl.get("torch"):
        if ctx["torch_gpu"]:
            t0 = time.perf_counter()
            try:
                for peer, (res, y) in torch_gpu(torch, wl, wl["runs_gpu"],
                                                ctx.get("precision"),
                                                ctx.get("compile")).items():
                    peers[peer], outputs[peer] = res, y
                torch.cuda.empty_cache()
            except Exception as e:
                for peer in GPU_PEERS:
                    peers.setdefault(peer, {"error": one_line(f"{type(e).__name__}: {e}")})
            for peer in GPU_PEERS:
                if peer not in peers:
                    continue  # torch_compiled without --compile
                peers[peer]["wall_s"] = round(time.perf_counter() - t0, 2)
                res = peers[peer]
                log(f"  {wl['name']}: {PEER_TITLES[peer]}: "
                    + (f"{res['ms']:.3f} ms" if "ms" in res else res.get("error", "")))
        else:
            attempt("torch_cpu", lambda: torch_cpu_check(torch, wl))

    # Comparisons: each peer against sluice on the same kind of device.
    gpu_ref = "sluice_gpu" if outputs.get("sluice_gpu") is not None else "sluice_cpu"
    for peer, res in peers.items():
        ref = {"sluice_gpu": None, "sluice_cpu": "sluice_gpu",
               "onnxruntime_cpu": "sluice_cpu"}.get(peer, gpu_ref)
        if ref is None or outputs.get(ref) is None or outputs.get(peer) is None:
            continue
        res["vs"] = ref
        res.update(compare(outputs[peer], outputs[ref]))
        if ref in peers and "ms" in res and "ms" in peers[ref] and peer != "sluice_cpu":
            res["ratio"] = res["ms"] / peers[ref]["ms"]
    return rec


# ------------------------------------------------------------------ reports

def fmt_ms(res):
    if res is None:
        return "—"
    if "ms" not in res:
        return "failed" if "error" in res else "—"
    return f"{res['ms']:.3f}"


def fmt_peer(res):
    s = fmt_ms(res)
    if res and "ratio" in res:
        s += f" ({res['ratio']:.2f}x)"
    return s


def fmt_diff(res):
    if not res or "max_abs_diff" not in res:
        return "shape!" if res and "shape_mismatch" in res else "—"
    return f"{res['max_abs_diff']:.1e}"


def sluice_against_torch(report, sluice_key, torch_key, intro, sluice_head,
                         torch_head):
    """peers.md lines: a table of sluice GPU's `sluice_key` time beside each
    PyTorch GPU peer's `torch_key` time, (ratio) = PyTorch ms / sluice ms."""
    lines = ["", intro + "; (ratio) = PyTorch ms / sluice ms:", "",
             f"| workload | {sluice_head} | torch eager {torch_head} ms (ratio) | "
             f"torch CUDA graph {torch_head} ms (ratio) | "
             f"torch.compile {torch_head} ms (ratio) |",
             "|---|---|---|---|---|"]
    for w in report["workloads"]:
        peers = w.get("peers") or {}
        ms = (peers.get("sluice_gpu") or {}).get(sluice_key)
        if ms is None:
            continue
        cells = []
        for k in ("torch_eager", "torch_graph", "torch_compiled"):
            r = peers.get(k) or {}
            cells.append(f"{r[torch_key]:.3f} ({r[torch_key] / ms:.2f}x)"
                         if torch_key in r else "—")
        lines.append(f"| {w['name']} | {ms:.3f} | " + " | ".join(cells) + " |")
    return lines


def markdown(report):
    m = report["machine"]
    lines = [
        f"# sluice against its peers — {report['date']}", "",
        f"Machine: {m['hostname']}, {m['cpu']} ({m['cores']} cores); "
        f"GPUs: {', '.join(m['gpus']) or 'none'}.  ",
        f"Versions: {', '.join(f'{k} {v}' for k, v in report['versions'].items())}.",
        "",
        "Times in ms, median over N steps after warm-up; (ratio) = peer time / "
        "sluice time, above 1 means sluice is faster (GPU peers against sluice "
        "GPU, onnxruntime against sluice CPU). Every step starts and ends on "
        "host memory, so that both do the same work: sluice's bench step "
        "copies the feeds to the GPU and returns the outputs as new host "
        "tensors; the PyTorch step copies its inputs in from pinned host "
        "tensors and takes its output with .cpu() (torch.cuda.synchronize() "
        "before and after). PyTorch with a pinned output buffer, and with no "
        "copies at all, is in the second table. " +
        ("float32 with TF32 on (both sides). " if report["settings"].get("tf32")
         else "float32, TF32 off. ") + "max |d| "
        "is against sluice's output on the same kind of device (sluice CPU "
        "against sluice GPU).", "",
        "| workload | sluice GPU ms | torch eager ms (ratio) | torch CUDA graph "
        "ms (ratio) | torch.compile reduce-overhead ms (ratio) | sluice CPU ms | "
        "onnxruntime CPU ms (ratio) | max abs diff: "
        "eager / graph / ORT / sluice CPU |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for w in report["workloads"]:
        if "error" in w:
            lines.append(f"| {w['name']} | {w['error']} | | | | | | |")
            continue
        p = w["peers"]
        diffs = " / ".join(fmt_diff(p.get(k)) for k in
                           ("torch_eager", "torch_graph", "onnxruntime_cpu", "sluice_cpu"))
        lines.append(
            f"| {w['name']} | {fmt_ms(p.get('sluice_gpu'))} | "
            f"{fmt_peer(p.get('torch_eager'))} | {fmt_peer(p.get('torch_graph'))} | "
            f"{fmt_peer(p.get('torch_compiled'))} | {fmt_ms(p.get('sluice_cpu'))} | {fmt_peer(p.get('onnxruntime_cpu'))} | "
            f"{diffs} |")
    lines += ["", "Details: PyTorch's step with the output copied into a pinned "
              "host tensor instead of .cpu(), and with device-resident inputs and "
              "no copies (compute); relative L2 differences; sluice's one-off costs. "
              "Where the output is large (MatMul), .cpu()'s copy into pageable "
              "memory dominates PyTorch's step: compare the pinned-out ratio "
              "too.", "",
              "| workload | what | torch eager ms: pinned out / compute | torch graph "
              "ms: pinned out / compute "
              "| relL2: eager / graph / ORT / sluice CPU | torch CPU check (no GPU): "
              "max abs diff / relL2 | sluice GPU session + first step s | runs GPU / CPU |",
              "|---|---|---|---|---|---|---|---|"]
    for w in report["workloads"]:
        if "error" in w:
            continue
        p = w["peers"]

        def comp(k):
            r = p.get(k) or {}
            if "compute_ms" not in r:
                return "—"
            ratio = ""
            if "ms" in (p.get("sluice_gpu") or {}):
                ratio = f" ({r['pinned_out_ms'] / p['sluice_gpu']['ms']:.2f}x)"
            return f"{r['pinned_out_ms']:.3f}{ratio} / {r['compute_ms']:.3f}"

        rel = " / ".join(f"{p[k]['rel_l2']:.1e}" if "rel_l2" in p.get(k, {}) else "—"
                         for k in ("torch_eager", "torch_graph", "onnxruntime_cpu",
                                   "sluice_cpu"))
        tc = p.get("torch_cpu") or {}
        check = (f"{tc['max_abs_diff']:.1e} / {tc['rel_l2']:.1e}"
                 if "rel_l2" in tc else "—")
        sg = p.get("sluice_gpu") or {}
        one_off = (f"{sg['session_create_s']:.2f} + {sg['first_run_s']:.3f}"
                   if sg.get("session_create_s") is not None else "—")
        runs = f"{(p.get('sluice_gpu') or {}).get('runs', '—')} / " \
               f"{(p.get('sluice_cpu') or {}).get('runs', '—')}"
        lines.append(f"| {w['name']} | {w['title']} | {comp('torch_eager')} | "
                     f"{comp('torch_graph')} | {rel} | {check} | {one_off} | {runs} |")
    lines += ["", "sluice GPU's steps replayed as a CUDA graph, and the GPU memory "
              "the replayed graph holds (its cuBLAS workspace included) beside "
              "what the first (kernel-by-kernel) step uses: its peak above the "
              "weights plus the device's cuBLAS workspace (issue 14: at most 1.2x), "
              "and why a plan is not replayed where it is not:", "",
              "| workload | replayed steps / timed+warm-up+first | graph MiB | "
              "first step peak MiB + cuBLAS workspace MiB | ratio | not replayed because |",
              "|---|---|---|---|---|---|"]
    for w in report["workloads"]:
        sg = (w.get("peers") or {}).get("sluice_gpu") or {}
        if "ms" not in sg:
            continue
        gb, fp = sg.get("gpu_graph_bytes") or 0, sg.get("first_step_peak_bytes") or 0
        ws = sg.get("cublas_workspace_bytes") or 0
        ratio = f"{gb / (fp + ws):.2f}x" if gb and fp else "—"
        total = sg.get("runs", 0) + sg.get("warmup", 0) + 1
        lines.append(f"| {w['name']} | {sg.get('gpu_graph_steps', '—')} / {total} | "
                     f"{gb / 2**20:.1f} | {fp / 2**20:.1f} + {ws / 2**20:.1f} | {ratio} | "
                     f"{(sg.get('gpu_graph_why_not') or '—').replace('|', '/')} |")
    lines += sluice_against_torch(
        report, "io_device_ms", "compute_ms",
        "Data already on the GPU: sluice with `--io-device gpu:0` (feeds "
        "copied there once, results left there) beside PyTorch's compute-only "
        "steps (inputs on the GPU, no copies)",
        "sluice GPU, io on GPU ms", "compute")
    lines += sluice_against_torch(
        report, "pinned_ms", "pinned_out_ms",
        "Both sides from and to page-locked host memory: sluice with "
        "`--pinned` (feeds in pinned buffers, results fetched into pinned "
        "memory) beside PyTorch's step with pinned inputs and its output "
        "copied into a pinned tensor",
        "sluice GPU --pinned ms", "pinned")
    errors = [(w["name"], k, r[kind]) for w in report["workloads"]
              for k, r in w.get("peers", {}).items()
              for kind in ("error", "warning") if kind in r]
    if errors or report["notes"]:
        lines += ["", "Notes:", ""]
        lines += [f"- {n}" for n in report["notes"]]
        lines += [f"- {n} / {PEER_TITLES[k]}: {e}" for n, k, e in errors]
    return "\n".join(lines) + "\n"


def machine_info(gpus):
    return {"hostname": platform.node(), "cpu": cpu_model(), "cores": os.cpu_count(),
            "gpus": gpus, "python": platform.python_version()}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sluice", required=True, help="the sluice binary")
    ap.add_argument("--out", required=True, help="folder for peers.json / peers.md")
    ap.add_argument("--quick", action="store_true",
                    help="fewer steps, and no real models")
    ap.add_argument("--only", nargs="+", metavar="NAME",
                    help="workloads to run (encoder_b1 encoder_b32 matmul_4096 "
                         "matmul_8192 neg_chain resnet50_b1 resnet50_b32 "
                         "mobilenet_v2_b1 mobilenet_v2_b32 densenet121_b1 "
                         "densenet121_b32 zoo (torchvision's CNNs of cpu_zoo.py, "
                         "or one: zoo_mobilenet_v3_large_b1 ...; zoo_b32 or zoo_NAME_b32 at batch 32) "
                         "tzoo (bench/models/transformer_zoo.py's models at batch 1, or one: tzoo_llama_gqa_b1 ...; "
                         "tzoo_b16 or tzoo_NAME_b16 at batch 16) real_models real_models_base: "
                         "BERT-base b1/b8, GPT-2 124M and T5-small's encoder at sequence 128, or one of them: bert_base_b1 bert_base_b8 gpt2_b1 t5_encoder_b1)")
    ap.add_argument("--budget-s", type=float, default=200,
                    help="start no real model, and none of the CNNs and zoo models that run after them, after this many seconds (default 200)")
    ap.add_argument("--timeout", type=float, default=300,
                    help="limit for each sluice command in seconds")
    ap.add_argument("--precision", choices=("float16", "bfloat16"),
                    help="GPU peers in this precision: sluice --precision, "
                         "PyTorch under torch.autocast (CPU peers stay float32)")
    ap.add_argument("--conv-layout", choices=("auto", "nchw", "nhwc"),
                    help="sluice's GPU peer with this --conv-layout (default: "
                         "the config's, auto)")
    ap.add_argument("--compile", action="store_true",
                    help="also time torch.compile(mode='reduce-overhead')")
    ap.add_argument("--tf32", action="store_true",
                    help="let float32 GPU products use TF32 on both sides "
                         "(issue 13's second GPU row)")
    ap.add_argument("--no-cpu", action="store_true",
                    help="skip the CPU peers (sluice CPU, onnxruntime)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the generated models, inputs and outputs in OUT/work")
    args = ap.parse_args()
    start = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)
    work = os.path.join(args.out, "work")
    os.makedirs(work, exist_ok=True)
    sluice = os.path.abspath(args.sluice)
    notes = []
    versions = {"numpy": np.__version__}

    gpus, no_gpu = sluice_gpus(sluice)
    sluice_gpu_ok = bool(gpus)
    if not gpus:
        notes.append(f"sluice GPU skipped: {no_gpu or 'no GPU'}")
    try:
        import onnxruntime as ort
        versions["onnxruntime"] = ort.__version__
    except ImportError as e:
        ort = None
        notes.append(f"onnxruntime skipped: {e}")
    torch, torch_gpu_ok = None, False
    try:
        import torch
        versions["torch"] = torch.__version__
        torch.backends.cuda.matmul.allow_tf32 = args.tf32
        torch.backends.cudnn.allow_tf32 = args.tf32
        torch_gpu_ok = torch.cuda.is_available()
        if torch_gpu_ok:
            gpus = gpus or [torch.cuda.get_device_name(0)]
        else:
            notes.append("torch GPU columns skipped: torch.cuda.is_available() "
                         "is False (torch CPU output checked instead)")
    except ImportError as e:
        notes.append(f"torch columns skipped: {e}")
    ctx = {"sluice": sluice, "sluice_gpu": sluice_gpu_ok,
           "torch": torch, "torch_gpu": torch_gpu_ok, "ort": ort,
           "timeout": args.timeout, "precision": args.precision,
           "no_cpu": args.no_cpu, "compile": args.compile, "tf32": args.tf32,
           "conv_layout": args.conv_layout}

    only = set(args.only or [])
    want = (lambda n: n in only) if only else (lambda n: True)
    builders = []
    for b in (1, 32):
        if want(f"encoder_b{b}"):
            builders.append((f"encoder_b{b}", lambda b=b: encoder_workload(work, b, args.quick)))
    for n in (4096, 8192):
        if want(f"matmul_{n}"):
            builders.append((f"matmul_{n}", lambda n=n: matmul_workload(work, n, args.quick)))
    if want("neg_chain"):
        builders.append(("neg_chain", lambda: neg_chain_workload(work, args.quick)))
    # ResNet-50 where it always was; the other CNNs after the real models,
    # so that they do not eat into --budget-s, which the real models count
    # from the start (none of these starts after it either).
    late = []
    for model in CNNS:
        for b in (1, 32):
            if want(f"{model}_b{b}"):
                (builders if model == "resnet50" else late).append(
                    (f"{model}_b{b}",
                     lambda m=model, b=b: cnn_workload(work, m, b, args.quick)))

    # torchvision's zoo (cpu_zoo.py's models, issue 32), only when named:
    # "zoo" for all of them or zoo_NAME_b1 for one; after the real models.
    # "zoo_b32" for all of them at batch 32, or zoo_NAME_b32 for one.
    for batch, every in ((1, "zoo"), (32, "zoo_b32")):
        for model in torchvision_zoo.MODELS:
            if every in only or f"zoo_{model}_b{batch}" in only:
                late.append((f"zoo_{model}_b{batch}",
                             lambda m=model, b=batch: zoo_workload(work, m, args.quick, b)))
    # The transformer zoo (issue 31), only when named: "tzoo" (batch 1),
    # "tzoo_b16" (TZOO_BIG_BATCH), or tzoo_NAME_b1 / tzoo_NAME_b16.
    for batch, every in ((1, "tzoo"), (TZOO_BIG_BATCH, f"tzoo_b{TZOO_BIG_BATCH}")):
        for model in transformer_zoo.MODELS:
            if every in only or f"tzoo_{model}_b{batch}" in only:
                late.append((f"tzoo_{model}_b{batch}",
                             lambda m=model, b=batch: tzoo_workload(work, m, args.quick, b)))

    workloads = []

    def run_builders(todo, budgeted=False):
        for name, build in todo:
            elapsed = time.perf_counter() - start
            if budgeted and elapsed > args.budget_s:
                notes.append(f"{name} skipped: {elapsed:.0f} s spent, "
                             f"budget {args.budget_s:.0f} s")
                continue
            log(f"{name} ({elapsed:.0f} s)")
            try:
                wl = build()
            except Exception as e:
                workloads.append({"name": name, "error": one_line(f"build failed: {e}")})
                continue
            workloads.append(run_workload(wl, ctx))
            cleanup(wl, args.keep)
            # What is done so far, for a run cut off by a time limit.
            with open(os.path.join(args.out, "peers.partial.json"), "w") as f:
                json.dump(workloads, f, indent=1)

    run_builders(builders)

    # One real model by name ("t5_encoder_b1") runs only that one.
    base_names = {"bert_base_b1", "bert_base_b8", "gpt2_b1", "t5_encoder_b1"}
    picked = only & base_names
    real = ("real_models" in only) if only else not args.quick
    base = "real_models_base" in (only or []) or bool(picked)
    if "real_models_base" in only:
        picked = set()
    if (real or base) and torch is None:
        notes.append("real models skipped: no torch")
    for size in ([False] if real else []) + ([True] if base else []):
        if torch is None:
            break
        try:
            for wl in real_model_workloads(work, args.quick, base=size,
                                           names=picked if size else None):
                elapsed = time.perf_counter() - start
                if elapsed > args.budget_s:
                    notes.append(f"{wl['name']} skipped: {elapsed:.0f} s spent, "
                                 f"budget {args.budget_s:.0f} s")
                    continue
                log(f"{wl['name']} ({elapsed:.0f} s)")
                if "error" in wl:
                    workloads.append(wl)
                    continue
                workloads.append(run_workload(wl, ctx))
                cleanup(wl, args.keep)
        except Exception as e:  # torchvision / transformers missing, ...
            notes.append(one_line(f"real models skipped: {type(e).__name__}: {e}"))
    run_builders(late, budgeted=True)

    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    report = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "machine": machine_info(gpus), "sluice": sluice,
              "versions": versions, "quick": args.quick,
              "settings": {"tf32": args.tf32, "sluice_gpu_device": "gpu:0",
                           "gpu_precision": args.precision or "float32",
                           "sluice_conv_layout": args.conv_layout or "auto",
                           "timing": "median of N steps; PyTorch step = inputs from pinned host tensors, run, .cpu() of the output (see peers.md)"},
              "notes": notes, "workloads": workloads,
              "wall_s": round(time.perf_counter() - start, 1)}
    with open(os.path.join(args.out, "peers.json"), "w") as f:
        json.dump(report, f, indent=2)
    md = markdown(report)
    with open(os.path.join(args.out, "peers.md"), "w") as f:
        f.write(md)
    print(md)
    log(f"wrote {args.out}/peers.json and peers.md in {report['wall_s']} s")
    return 0


def cleanup(wl, keep):
    if keep:
        return
    for p in wl.get("files", []):
        if os.path.isdir(p):
            shutil.rmtree(p, ignore_errors=True)
        elif os.path.exists(p):
            os.remove(p)


if __name__ == "__main__":
    sys.exit(main())
