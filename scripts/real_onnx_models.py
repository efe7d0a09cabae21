#!/usr/bin/env python3
"""Real architectures through sluice's ONNX importer, on the H200 machine.

Builds models with random weights in PyTorch (torchvision ResNet-18, a small
GPT-2 and a small BERT from transformers), exports each to ONNX (opset 17),
runs it with `sluice run` on the GPU and on the CPU (and on the CPU with the
graph optimisation passes off, printing what the passes did), and compares
the outputs with PyTorch (float32, TF32 off) and onnxruntime (CPU provider).

    python3 scripts/real_onnx_models.py --sluice .gpu/bin/sluice --out $OUT

Prints one table row per model and device: the largest absolute difference
and the relative L2 difference against each reference, and sluice's status.
Needs torch, torchvision, transformers, onnx, onnxruntime (present on the
H200 machine; not on the development machines, so CI does not run this).
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np


def build_base_models():
    """Issue 14's transformer sizes: BERT-base (12 layers, d 768) at batch 1
    and 8, GPT-2 (124M: 12 layers, d 768) at batch 1, and the encoder of an
    encoder-decoder, T5-small's (6 layers, d 512, RMSNorm, relative position
    bias), at batch 1; sequence 128, random weights, token ids as the only
    input."""
    import torch
    import transformers

    torch.manual_seed(0)
    bert = transformers.BertModel(transformers.BertConfig()).eval()
    gpt = transformers.GPT2Model(transformers.GPT2Config()).eval()
    t5 = transformers.T5EncoderModel(transformers.T5Config()).eval()
    return [("bert_base_b1", bert, {"input_ids": torch.randint(0, 30522, (1, 128))}),
            ("bert_base_b8", bert, {"input_ids": torch.randint(0, 30522, (8, 128))}),
            ("gpt2_b1", gpt, {"input_ids": torch.randint(0, 50257, (1, 128))}),
            ("t5_encoder_b1", t5, {"input_ids": torch.randint(0, 32128, (1, 128))})]


def build_models():
    import torch
    import torchvision
    import transformers

    torch.manual_seed(0)
    models = []
    resnet = torchvision.models.resnet18(weights=None).eval()
    models.append(("resnet18", resnet,
                   {"x": torch.randn(1, 3, 224, 224)}))
    gpt_cfg = transformers.GPT2Config(n_layer=2, n_embd=256, n_head=4,
                                      vocab_size=1000, n_positions=128)
    gpt = transformers.GPT2Model(gpt_cfg).eval()
    models.append(("gpt2_small", gpt,
                   {"input_ids": torch.randint(0, 1000, (1, 32))}))
    bert_cfg = transformers.BertConfig(num_hidden_layers=2, hidden_size=256,
                                       num_attention_heads=4,
                                       intermediate_size=1024,
                                       vocab_size=1000)
    bert = transformers.BertModel(bert_cfg).eval()
    models.append(("bert_small", bert,
                   {"input_ids": torch.randint(0, 1000, (1, 32))}))
    return models


class FirstOutput:
    """Wraps a model so that its first tensor output is the graph output."""

    def __init__(self, model):
        import torch

        class Wrapper(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, *args):
                out = self.inner(*args)
                if hasattr(out, "last_hidden_state"):
                    return out.last_hidden_state
                if isinstance(out, (tuple, list)):
                    return out[0]
                return out

        self.module = Wrapper(model).eval()


def export(name, model, inputs, out_dir):
    import torch
    path = os.path.join(out_dir, f"{name}.onnx")
    # On the CPU, like the inputs: a model shared by two workloads (BERT-base
    # at batch 1 and 8) may have been moved to the GPU by the first.
    wrapped = FirstOutput(model.cpu()).module
    args = tuple(inputs.values())
    errors = []
    for kwargs in ({"dynamo": False}, {"dynamo": True}):
        try:
            torch.onnx.export(wrapped, args, path, opset_version=17,
                              input_names=list(inputs.keys()),
                              output_names=["y"], do_constant_folding=True,
                              **kwargs)
            return path, kwargs, wrapped
        except Exception as e:  # the exporter raises many kinds
            errors.append(f"{kwargs}: {type(e).__name__}: {e}"[:300])
    raise RuntimeError("; ".join(errors))


def rel_l2(a, b):
    return float(np.linalg.norm((a - b).ravel()) /
                 max(np.linalg.norm(b.ravel()), 1e-30))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sluice", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    import torch
    import onnxruntime as ort
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    rows = []
    for name, model, inputs in build_models():
        try:
            path, how, wrapped = export(name, model, inputs, args.out)
        except Exception as e:
            rows.append((name, "export", f"failed: {e}"))
            continue
        feeds = {k: v.numpy() for k, v in inputs.items()}
        input_args = []
        for k, v in feeds.items():
            f = os.path.join(args.out, f"{name}_{k}.npy")
            np.save(f, v)
            input_args += ["--input", f"{k}={f}"]
        with torch.no_grad():
            dev = wrapped.cuda()
            cuda_args = tuple(v.cuda() for v in inputs.values())
            want_torch = dev(*cuda_args).float().cpu().numpy()
            for _ in range(3):
                dev(*cuda_args)
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(20):
                dev(*cuda_args)
            torch.cuda.synchronize()
            torch_ms = (time.perf_counter() - start) / 20 * 1e3
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        want_ort = sess.run(None, feeds)[0]
        rows.append((name, "export", f"ok ({how}); torch eager on GPU "
                     f"{torch_ms:.3f} ms/step"))
        # The graph optimisation passes (on by default): what they did, and
        # a CPU run without them to compare with.
        ins = subprocess.run([args.sluice, "inspect", path, "--optimized",
                              "--json"], capture_output=True, text=True)
        if ins.returncode == 0:
            import json
            opt = json.loads(ins.stdout)["optimization"]
            rows.append((name, "optimizer",
                         f"level {opt['level']}: {opt['nodes_before']} -> "
                         f"{opt['nodes_after']} nodes"))
        for device, config in (
                ("gpu", None), ("cpu", "use_gpu: false\n"),
                ("cpu_unoptimized",
                 "use_gpu: false\noptimization_level: OPTIMIZATION_NONE\n")):
            cmd = [args.sluice, "run", path, *input_args,
                   "--output-dir", os.path.join(args.out, f"{name}_{device}")]
            if config:
                cfg = os.path.join(args.out, f"{device}.pbtxt")
                with open(cfg, "w") as f:
                    f.write(config)
                cmd += ["--config", cfg]
            start = time.perf_counter()
            r = subprocess.run(cmd, capture_output=True, text=True)
            wall = time.perf_counter() - start
            if r.returncode != 0:
                msg = (r.stderr or r.stdout).strip().replace("\n", " | ")
                rows.append((name, device, f"sluice failed: {msg[:600]}"))
                continue
            got = np.load(os.path.join(args.out, f"{name}_{device}", "y.npy"))
            bench = [args.sluice, "bench", path, *input_args, "--runs", "50",
                     "--json"] + cmd[cmd.index("--config"):] if config else \
                    [args.sluice, "bench", path, *input_args, "--runs", "50",
                     "--json"]
            b = subprocess.run(bench, capture_output=True, text=True)
            p50 = "?"
            if b.returncode == 0:
                import json
                p50 = f"{json.loads(b.stdout)['latency_s']['p50'] * 1e3:.3f} ms"
            rows.append((name, device,
                         f"max|d| vs torch {np.abs(got - want_torch).max():.2e}"
                         f", relL2 vs torch {rel_l2(got, want_torch):.2e}, "
                         f"max|d| vs ort {np.abs(got - want_ort).max():.2e}, "
                         f"relL2 vs ort {rel_l2(got, want_ort):.2e}; "
                         f"sluice bench p50 {p50}/step"))
    for row in rows:
        print(" | ".join(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
