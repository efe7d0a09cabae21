#!/usr/bin/env python3
"""torchvision's detection models on sluice's CPU against onnxruntime.

    python3 bench/detection_check.py --sluice build/tools/sluice --dir DIR
        [--models NAME ...] [--sizes 256x320 320x256] [--device cpu:0]

DIR holds what bench/models/detection.py wrote (NAME.onnx with symbolic
height and width, and a seeded image per size). For each model and size
this runs `sluice run` (one step, --device cpu:0 by default) and
onnxruntime's CPU provider on the same file and image, then compares the
detections: the counts, and detection by detection in the order both
return them (descending score, as torchvision's postprocessing sorts),
boxes, scores and labels (and Mask R-CNN's masks). Where the orders
differ, each sluice detection is matched to onnxruntime's of the same
label and the nearest box, and the report says how many matched and what
the unmatched ones score: with random weights many boxes score alike, and
a difference in the last bits of a score can reorder near-equal scores or
move a box across the top-k or NMS boundary (sluice's TopK and NMS order
equal scores by index, as onnxruntime's do; a tie that only exists in one
of the two runs cannot be ordered alike).

Masks are compared pixel by pixel, except those of boxes whose corners lie
on either side of a pixel edge in the two runs (torchvision pastes a mask
at whole pixels; the report counts them). Prints one Markdown row per
model and size for bench/RESULTS.md, and exits 1 when a count differs or
a matched value is off by more than the tolerance (boxes 1e-3 relative to
the image size, scores 1e-4, masks 1e-3).
Needs numpy and onnxruntime (/work/venv-zoo or .venv-onnx).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "models"))
import detection  # noqa: E402  (bench/models/detection.py)

BOX_TOL = 1e-3    # relative to the image's larger side
SCORE_TOL = 1e-4
MASK_TOL = 1e-3


def run_sluice(sluice, model, image, device):
    with tempfile.TemporaryDirectory() as out:
        cmd = [sluice, "run", model, "--input", f"image={image}",
               "--output-dir", out, "--device", device]
        t0 = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True)
        seconds = time.time() - t0
        if r.returncode != 0:
            return None, (r.stdout + r.stderr).strip()[-2000:], seconds
        outs = {}
        for f in os.listdir(out):
            if f.endswith(".npy"):
                outs[f[:-4]] = np.load(os.path.join(out, f))
        return outs, "", seconds


def run_ort(model, image):
    import onnxruntime as ort
    s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    t0 = time.time()
    values = s.run(None, {"image": np.load(image)})
    return dict(zip(names, values)), time.time() - t0


def iou(a, b):
    """IoU of box a [4] with each of boxes b [K, 4] (x1, y1, x2, y2)."""
    lt = np.maximum(a[:2], b[:, :2])
    rb = np.minimum(a[2:], b[:, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), axis=1)
    area = lambda x: np.prod(np.clip(x[..., 2:] - x[..., :2], 0, None), -1)
    return inter / np.maximum(area(a) + area(b) - inter, 1e-12)


def expanded(box, scale=30 / 28):
    """The box torchvision pastes a 28 x 28 mask into: its paste pads the
    mask by one pixel each side and widens the box by (28 + 2) / 28 about
    its centre (roi_heads.expand_boxes) before rounding to whole pixels."""
    half = (box[2:] - box[:2]) * 0.5 * scale
    centre = (box[2:] + box[:2]) * 0.5
    return np.concatenate([centre - half, centre + half])


def straddles(a, b):
    """Whether boxes a and b (nearly equal) paste at different whole pixels:
    a corner of the widened box on either side of a pixel edge, or a size
    rounded up differently (torchvision's _onnx_paste_mask_in_image)."""
    size = lambda x: np.ceil(x[2:] - x[:2] + 1)
    a, b = expanded(a), expanded(b)
    return bool(np.any(np.floor(a) != np.floor(b)) or
                np.any(size(a) != size(b)))


def compare(got, want, size):
    """A dict of the comparison's figures; 'ok' says whether it passed."""
    box_tol = BOX_TOL * max(size)
    k_got, k_want = len(got["scores"]), len(want["scores"])
    r = {"k_sluice": k_got, "k_ort": k_want, "ok": k_got == k_want}
    if not r["ok"]:
        return r
    in_order = (np.array_equal(got["labels"], want["labels"]) and
                np.allclose(got["boxes"], want["boxes"], rtol=0,
                            atol=box_tol) and
                np.allclose(got["scores"], want["scores"], rtol=0,
                            atol=SCORE_TOL))
    pairs = []
    if in_order:
        pairs = [(i, i) for i in range(k_got)]
    else:
        # Match each sluice detection to an unused onnxruntime one of the
        # same label with the nearest box.
        used = np.zeros(k_want, bool)
        for i in range(k_got):
            cand = np.where((want["labels"] == got["labels"][i]) & ~used)[0]
            if len(cand) == 0:
                continue
            d = np.abs(want["boxes"][cand] - got["boxes"][i]).max(axis=1)
            j = cand[np.argmin(d)]
            if d.min() <= box_tol and \
                    abs(want["scores"][j] - got["scores"][i]) <= SCORE_TOL:
                used[j] = True
                pairs.append((i, j))
    r["in_order"] = in_order
    r["matched"] = len(pairs)
    # Where the orders differ: how many positions, and how far apart the
    # two runs' scores at those positions are (near-equal scores swapped).
    moved = [i for i, j in pairs if i != j]
    r["moved"] = len(moved)
    if moved:
        r["moved_gap"] = float(np.abs(got["scores"][moved] -
                                      want["scores"][moved]).max())
    gi = np.array([p[0] for p in pairs], int)
    wi = np.array([p[1] for p in pairs], int)
    if pairs:
        r["box_err"] = float(np.abs(got["boxes"][gi] -
                                    want["boxes"][wi]).max())
        r["score_err"] = float(np.abs(got["scores"][gi] -
                                      want["scores"][wi]).max())
        if "masks" in got:
            d = np.abs(got["masks"][gi] - want["masks"][wi])
            bad = np.unique(np.where(d > MASK_TOL)[0])
            # torchvision pastes each mask at whole pixels (the box's
            # corners truncated, its size rounded up): where a box corner
            # lies within rounding of a pixel edge, the two runs paste at
            # different pixels, and the masks differ there by whole values.
            edge = [k for k in bad
                    if straddles(got["boxes"][gi[k]], want["boxes"][wi[k]])]
            r["mask_pixels_off"] = int((d > MASK_TOL).sum())
            r["mask_dets_off"] = len(bad)
            r["mask_dets_at_edge"] = len(edge)
            keep = np.setdiff1d(np.arange(len(gi)), edge)
            r["mask_err"] = float(d[keep].max()) if len(keep) else 0.0
    unmatched = np.setdiff1d(np.arange(k_got), gi)
    if len(unmatched):
        s = got["scores"][unmatched]
        r["unmatched_scores"] = (float(s.min()), float(s.max()))
        r["lowest_score"] = float(got["scores"].min())
    r["ok"] = (len(pairs) == k_got and
               r.get("mask_err", 0.0) <= MASK_TOL and
               r.get("mask_dets_off", 0) == r.get("mask_dets_at_edge", 0))
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sluice", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--models", nargs="*", default=list(detection.MODELS))
    ap.add_argument("--sizes", nargs="*", default=["256x320", "320x256"])
    ap.add_argument("--device", default="cpu:0")
    args = ap.parse_args()
    failed = False
    print("| model | input | detections (sluice / ort) | order | "
          "max box diff | max score diff | max mask diff | sluice load + step s"
          " | ort step s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.models:
        model = os.path.join(args.dir, name + ".onnx")
        for size in args.sizes:
            h, w = detection.parse_size(size)
            image = os.path.join(args.dir, f"{name}_{h}x{w}_image.npy")
            got, err, s_sec = run_sluice(args.sluice, model, image,
                                         args.device)
            if got is None:
                failed = True
                print(f"| {name} | {size} | sluice failed: "
                      f"{err.splitlines()[-1] if err else '?'} |")
                print(err, file=sys.stderr)
                continue
            want, o_sec = run_ort(model, image)
            r = compare(got, want, (h, w))
            failed |= not r["ok"]
            fmt = lambda k: f"{r[k]:.2e}" if k in r else "-"
            order = ("same" if r.get("in_order") else
                     f"{r.get('matched', 0)}/{r['k_sluice']} matched")
            if r.get("moved"):
                order += (f", {r['moved']} at other positions (scores there "
                          f"within {r['moved_gap']:.1e})")
            if "unmatched_scores" in r:
                order += (" (unmatched scores {:.4g}..{:.4g})"
                          .format(*r["unmatched_scores"]))
            mask = fmt("mask_err")
            if r.get("mask_dets_off"):
                mask += (f" ({r['mask_pixels_off']} px of "
                         f"{r['mask_dets_off']} masks off, "
                         f"{r['mask_dets_at_edge']} at a pixel edge)")
            print(f"| {name} | {size} | {r['k_sluice']} / {r['k_ort']} | "
                  f"{order} | {fmt('box_err')} | {fmt('score_err')} | "
                  f"{mask} | {s_sec:.2f} | {o_sec:.2f} |")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
