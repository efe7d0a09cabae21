#!/usr/bin/env python3
"""References for tests/onnx/dynamic_shapes_test.cc: testdata/transformer.onnx
(symbolic dims batch and seq) run by onnxruntime (CPU) at two shapes other
than the one make_models.py uses, with fixed seeds. Writes
testdata/transformer.dyn{1,2}.in.ids.npy and .out.logits.npy.

Run from the repository root, in .venv-onnx (scripts/setup.sh --onnx):
    .venv-onnx/bin/python tests/onnx/make_dynamic_refs.py
"""
import os

import numpy as np
import onnxruntime as ort

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")


def main():
    sess = ort.InferenceSession(os.path.join(OUT, "transformer.onnx"),
                                providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(20261201)
    for i, (batch, seq) in enumerate([(1, 5), (3, 11)], start=1):
        ids = rng.integers(0, 50, size=(batch, seq), dtype=np.int64)
        logits = sess.run(["logits"], {"ids": ids})[0]
        np.save(os.path.join(OUT, f"transformer.dyn{i}.in.ids.npy"), ids)
        np.save(os.path.join(OUT, f"transformer.dyn{i}.out.logits.npy"),
                logits)
        print(f"dyn{i}: ids {ids.shape} -> logits {logits.shape}")


if __name__ == "__main__":
    main()
