#!/usr/bin/env python3
"""Exports small scikit-learn models with skl2onnx (as users do, ZipMap left
out) and checks that `sluice run` gives onnxruntime's outputs on them: the
ai.onnx.ml ops of docs/onnx.md on real exports. Not part of CI (it needs
scikit-learn and skl2onnx, which the project's environments do not carry);
run it in an environment of your own:

    python3 -m venv --system-site-packages /tmp/skl
    /tmp/skl/bin/pip install scikit-learn skl2onnx onnxruntime onnx
    /tmp/skl/bin/python tests/onnx/sklearn_models_check.py \\
        --sluice build/tools/sluice

Prints one line per model and output (the largest difference) and exits 1
when any output differs beyond rtol 1e-4 / atol 1e-5 or a label differs.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort
from skl2onnx import to_onnx
from sklearn.base import is_classifier
from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble import (GradientBoostingClassifier,
                              GradientBoostingRegressor,
                              RandomForestClassifier, RandomForestRegressor)
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Binarizer, MaxAbsScaler, Normalizer
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor


def models():
    xc, yc = make_classification(200, 6, n_informative=4, random_state=0)
    xm, ym = make_classification(200, 6, n_informative=4, n_classes=3,
                                 random_state=1)
    xr, yr = make_regression(200, 6, n_targets=2, random_state=2)
    xc, xm, xr = (a.astype(np.float32) for a in (xc, xm, xr))
    yield "logreg_binary", LogisticRegression().fit(xc, yc), xc
    yield "logreg_multi", LogisticRegression().fit(xm, ym), xm
    yield "tree_binary", DecisionTreeClassifier(max_depth=4,
                                                random_state=0).fit(xc, yc), xc
    yield "forest_multi", RandomForestClassifier(
        10, max_depth=5, random_state=0).fit(xm, ym), xm
    yield "forest_binary", RandomForestClassifier(
        10, max_depth=5, random_state=0).fit(xc, yc), xc
    yield "gbt_binary", GradientBoostingClassifier(
        n_estimators=20, max_depth=3, random_state=0).fit(xc, yc), xc
    yield "gbt_multi", GradientBoostingClassifier(
        n_estimators=10, max_depth=3, random_state=0).fit(xm, ym), xm
    # One target: skl2onnx 1.20 declares a tree regressor's output [N, 1]
    # whatever the targets, which sluice refuses as a wrong declared shape
    # (onnxruntime warns and goes on).
    yield "tree_regressor", DecisionTreeRegressor(
        max_depth=5, random_state=0).fit(xr, yr[:, 0]), xr
    yield "forest_regressor", RandomForestRegressor(
        10, max_depth=5, random_state=0).fit(xr, yr[:, 1]), xr
    yield "gbt_regressor", GradientBoostingRegressor(
        n_estimators=20, random_state=0).fit(xr, yr[:, 0]), xr
    yield "scaled_linear", make_pipeline(
        StandardScaler(), MaxAbsScaler(), LinearRegression()).fit(xr, yr), xr
    yield "normalizer_l2", make_pipeline(Normalizer(), Binarizer(
        threshold=0.1)).fit(xr), xr
    yield "normalizer_l1", Normalizer("l1").fit(xr), xr
    yield "normalizer_max", Normalizer("max").fit(xr), xr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sluice", default="build/tools/sluice")
    args = ap.parse_args()
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, x in models():
            x = x[:32]
            onx = to_onnx(model, x[:1],
                          options=({"zipmap": False} if is_classifier(model)
                                   else None),
                          target_opset={"": 17, "ai.onnx.ml": 3})
            path = os.path.join(tmp, name + ".onnx")
            with open(path, "wb") as f:
                f.write(onx.SerializeToString())
            sess = ort.InferenceSession(path,
                                        providers=["CPUExecutionProvider"])
            in_name = sess.get_inputs()[0].name
            want = dict(zip([o.name for o in sess.get_outputs()],
                            sess.run(None, {in_name: x})))
            np.save(os.path.join(tmp, "x.npy"), x)
            out = os.path.join(tmp, name)
            run = subprocess.run(
                [args.sluice, "run", path, "--input",
                 f"{in_name}={tmp}/x.npy", "--output-dir", out],
                capture_output=True, text=True)
            if run.returncode != 0:
                print(f"{name}: sluice failed: {run.stderr.strip()}")
                bad += 1
                continue
            for key, ref in want.items():
                got = np.load(os.path.join(out, key + ".npy"))
                ok = got.shape == ref.shape and np.allclose(
                    got, ref, rtol=1e-4, atol=1e-5)
                diff = (np.max(np.abs(got.astype(np.float64) - ref))
                        if got.shape == ref.shape and ref.size else 0)
                print(f"{name} {key} {ref.dtype}{list(ref.shape)}: "
                      f"{'ok' if ok else 'DIFFERS'} (max |diff| {diff:.3g})")
                bad += not ok
    print(f"{bad} outputs differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
