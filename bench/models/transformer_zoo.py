#!/usr/bin/env python3
"""Transformers from Hugging Face transformers as ONNX, exported by PyTorch
the way users do, with both exporters: for issue 29's load-cost table
(bench/prepared_load.py --zoo) and issue 31's zoo (bench/transformer_check.py).

Random weights from a fixed seed (no download), eval mode:

  gpt2_6l          GPT-2 (d 768, 12 heads, vocabulary 50257) cut to 6
                   layers, no key/value cache: the embedding table is most
                   of it; token ids [1, 128]
  distilbert       DistilBERT-base (6 layers, d 768); token ids [1, 128]
  llama_gqa        a Llama decoder (d 512, 4 layers, 8 query heads sharing 2
                   key/value heads: grouped-query attention; rotary position
                   embeddings; RMSNorm; SiLU-gated MLP), vocabulary 8000,
                   no cache; token ids [1, 128]
  whisper_encoder  Whisper's encoder (two Conv1d over 80 mel bins, then 4
                   attention layers, d 384, 6 heads), 500 frames:
                   input_features [1, 80, 500]

The only input is given to the wrapper; an all-ones attention mask is made
inside it where the model takes one.

    /work/venv-zoo/bin/python bench/models/transformer_zoo.py --out DIR \\
        [--models gpt2_6l distilbert llama_gqa whisper_encoder] \\
        [--exporter torchscript dynamo] [--batch N]

torchscript: torch.onnx.export(dynamo=False) at opset 17, writes
DIR/<model>.onnx; dynamo: torch.export through torch.onnx.export(dynamo=
True) at opset 18, writes DIR/<model>_dynamo.onnx. Either way the inputs go
to DIR/<model>_inputs.npz (keyed by input name) and PyTorch's own output to
DIR/<model>_torch_y.npy; with --batch N other than 1 every name starts
<model>_bN. Needs torch, transformers and onnx (and onnxscript
for dynamo). The .onnx files (up to 270 MB) stay out of git.
"""
import argparse
import os
import sys

import numpy as np

MODELS = ["gpt2_6l", "distilbert", "llama_gqa", "whisper_encoder"]
EXPORTERS = ["torchscript", "dynamo"]
SEED = 20261205
SEQUENCE = 128


def _module(name, batch=1):
    """The wrapped model, its input's name and a function making the input
    (`batch` sequences) from a numpy Generator."""
    import torch
    import transformers

    torch.manual_seed(SEED)

    def token_ids(vocab):
        return lambda rng: rng.integers(0, vocab, (batch, SEQUENCE)).astype(
            np.int64)

    if name == "gpt2_6l":
        m = transformers.GPT2Model(transformers.GPT2Config(n_layer=6,
                                                           use_cache=False))
        make = token_ids(m.config.vocab_size)
    elif name == "distilbert":
        m = transformers.DistilBertModel(transformers.DistilBertConfig())
        make = token_ids(m.config.vocab_size)
    elif name == "llama_gqa":
        m = transformers.LlamaModel(transformers.LlamaConfig(
            vocab_size=8000, hidden_size=512, intermediate_size=1376,
            num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
            max_position_embeddings=512, use_cache=False))
        make = token_ids(m.config.vocab_size)
    elif name == "whisper_encoder":
        config = transformers.WhisperConfig(
            d_model=384, encoder_layers=4, encoder_attention_heads=6,
            encoder_ffn_dim=1536, num_mel_bins=80, max_source_positions=250)
        encoder = transformers.WhisperModel(config).get_encoder()
        encoder.eval()

        class Encoder(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, input_features):
                return self.inner(input_features).last_hidden_state

        return (Encoder(encoder), "input_features",
                lambda rng: rng.standard_normal((batch, 80, 500)).astype(
                    np.float32))
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

    return Out(m), "input_ids", make


def paths(out_dir, name, exporter="torchscript", batch=1):
    stem = os.path.join(out_dir, name + ("" if batch == 1 else f"_b{batch}"))
    return {"onnx": stem + ("_dynamo" if exporter == "dynamo" else "") +
            ".onnx",
            "inputs": stem + "_inputs.npz", "torch_y": stem + "_torch_y.npy"}


def write(out_dir, name, exporter="torchscript", force=False, batch=1):
    """Exports `name` at `batch` to out_dir once (kept if there); returns
    its paths."""
    import torch

    p = paths(out_dir, name, exporter, batch)
    if all(os.path.exists(p[k]) for k in p) and not force:
        return p
    os.makedirs(out_dir, exist_ok=True)
    m, input_name, make = _module(name, batch)
    x = make(np.random.default_rng(SEED))
    with torch.no_grad():
        y = m(torch.from_numpy(x)).numpy()
        if exporter == "dynamo":
            torch.onnx.export(m, (torch.from_numpy(x),), p["onnx"],
                              opset_version=18, input_names=[input_name],
                              output_names=["y"], dynamo=True,
                              external_data=False)
        else:
            torch.onnx.export(m, (torch.from_numpy(x),), p["onnx"],
                              opset_version=17, input_names=[input_name],
                              output_names=["y"], do_constant_folding=True,
                              dynamo=False)
    np.savez(p["inputs"], **{input_name: x})
    np.save(p["torch_y"], y)
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    ap.add_argument("--exporter", nargs="+", default=["torchscript"],
                    choices=EXPORTERS)
    ap.add_argument("--batch", type=int, default=1,
                    help="sequences (or spectrograms) in the input; files "
                         "of a batch other than 1 end in _bN")
    ap.add_argument("--force", action="store_true",
                    help="export again even where the file exists")
    args = ap.parse_args()
    failed = 0
    for name in args.models:
        for exporter in args.exporter:
            try:
                p = write(args.out, name, exporter, force=args.force,
                          batch=args.batch)
                print(f"wrote {p['onnx']}")
            except Exception as e:  # the exporter's failure, said and passed
                failed += 1
                print(f"{name} ({exporter}): export failed: "
                      f"{type(e).__name__}: {str(e).splitlines()[0][:300]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
