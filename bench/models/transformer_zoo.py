#!/usr/bin/env python3
"""Two transformers from Hugging Face transformers as ONNX, exported by
PyTorch the way users do, for issue 29's load-cost table
(bench/prepared_load.py --zoo).

Random weights from a fixed seed (no download), eval mode, token ids
[1, 128] as the only input, torch.onnx.export on the TorchScript path
(dynamo=False) at opset 17:

  gpt2_6l     GPT-2 (d 768, 12 heads, vocabulary 50257) cut to 6 layers,
              no key/value cache: the embedding table is most of it
  distilbert  DistilBERT-base (6 layers, d 768)

    /work/venv-zoo/bin/python bench/models/transformer_zoo.py --out DIR \\
        [--models gpt2_6l distilbert]

writes DIR/<model>.onnx (input "input_ids", output "y") and
DIR/<model>_inputs.npz (the token ids, keyed by input name). Needs torch,
transformers and onnx. The .onnx files (170-270 MB) stay out of git.
"""
import argparse
import os
import sys

import numpy as np

MODELS = ["gpt2_6l", "distilbert"]
SEED = 20261205
SEQUENCE = 128


def _module(name):
    import torch
    import transformers

    torch.manual_seed(SEED)
    if name == "gpt2_6l":
        m = transformers.GPT2Model(transformers.GPT2Config(n_layer=6,
                                                           use_cache=False))
        vocab = m.config.vocab_size
    elif name == "distilbert":
        m = transformers.DistilBertModel(transformers.DistilBertConfig())
        vocab = m.config.vocab_size
    else:
        raise ValueError(name)
    m.eval()

    class Out(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids):
            # An all-ones mask, so that transformers skips its packed-
            # sequence check (aten::diff, which has no ONNX export).
            mask = torch.ones_like(input_ids)
            return self.inner(input_ids=input_ids,
                              attention_mask=mask).last_hidden_state

    return Out(m), vocab


def paths(out_dir, name):
    return {"onnx": os.path.join(out_dir, f"{name}.onnx"),
            "inputs": os.path.join(out_dir, f"{name}_inputs.npz")}


def write(out_dir, name, force=False):
    """Exports `name` to out_dir once (kept if there); returns its paths."""
    import torch

    p = paths(out_dir, name)
    if os.path.exists(p["onnx"]) and os.path.exists(p["inputs"]) and not force:
        return p
    os.makedirs(out_dir, exist_ok=True)
    m, vocab = _module(name)
    ids = np.random.default_rng(SEED).integers(
        0, vocab, (1, SEQUENCE)).astype(np.int64)
    with torch.no_grad():
        torch.onnx.export(m, (torch.from_numpy(ids),), p["onnx"],
                          opset_version=17, input_names=["input_ids"],
                          output_names=["y"], do_constant_folding=True,
                          dynamo=False)
    np.savez(p["inputs"], input_ids=ids)
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    ap.add_argument("--force", action="store_true",
                    help="export again even where the file exists")
    args = ap.parse_args()
    for name in args.models:
        print(f"wrote {write(args.out, name, force=args.force)['onnx']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
