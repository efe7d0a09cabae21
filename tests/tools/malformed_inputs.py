#!/usr/bin/env python3
"""Table-driven malformed-input test of the `sluice` command line.

Generates malformed and borderline inputs (bad flags and values, paths that
are directories, FIFOs or devices, truncated or garbage .pb / .pbtxt / .npy /
config files, hostile names), runs each case against the built `sluice` with
a per-case timeout, and checks the exit code and a fragment of the message
(stdout and stderr together). A case fails on a hang (timeout), a crash (a
signal), a wrong exit code, a missing fragment, or a peak memory more than
200 MiB above what `sluice --help` takes (which must itself stay under
50 MiB).

  tests/tools/malformed_inputs.py build/tools/sluice        # run the table
  tests/tools/malformed_inputs.py build/tools/sluice --list # print the cases
  tests/tools/malformed_inputs.py build/tools/sluice --show ID  # one case's output
  tests/tools/malformed_inputs.py build-asan/tools/sluice --timeout 10 --no-memory-check

The sanitizer build (scripts/sanitize.sh) runs it alone (CTest RUN_SERIAL)
with --timeout 10: ASan and UBSan make sluice about 2.5 times slower, and
the largest cases (a cycle through 100,000 nodes) take about 1 s of CPU
there, which missed 2 s, and once 6 s with other tests and fuzzers on the
same 2 cores. A hang is still a hang at 10 s. It skips the memory checks
there (--no-memory-check): ASan's shadow memory alone puts `sluice --help`
near 50 MiB; the normal build checks memory.

Needs only the Python 3 standard library. CTest `cli_malformed_inputs`
runs it (tests/CMakeLists.txt).
"""
import argparse
import concurrent.futures
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
MLP = os.path.join(EXAMPLES, "mlp.pbtxt")
CNN = os.path.join(EXAMPLES, "cnn.pb")
MLP_INPUT = os.path.join(EXAMPLES, "mlp_input.npy")

OK, FAIL, USAGE = 0, 1, 2
# A hang, not a slow case: the slowest case (cycle_100k, about 0.9 s alone
# on a 2-core VM) took over 2 s with this script's two cases and CTest's
# other test sharing the cores beside a build (2026-12-07).
TIMEOUT_S = 5.0
HELP_RSS_LIMIT_MIB = 50
CASE_RSS_ABOVE_HELP_MIB = 200


# ---------------------------------------------------------------- .npy files
def npy(descr="<f4", shape=(1, 16), data=None, magic=b"\x93NUMPY",
        version=b"\x01\x00", header=None, fortran="False", pad=True):
    """An .npy file; every piece can be overridden to make it malformed."""
    if header is None:
        header = "{'descr': '%s', 'fortran_order': %s, 'shape': %r, }" % (
            descr, fortran, tuple(shape))
    h = header.encode("latin-1")
    len_bytes = 4 if version[0] >= 2 else 2
    if pad:
        total = len(magic) + 2 + len_bytes + len(h) + 1
        h += b" " * ((64 - total % 64) % 64) + b"\n"
    if data is None:
        n = 1
        for d in shape:
            n *= max(d, 0) if isinstance(d, int) else 1
        data = b"\0" * (4 * n)
    return magic + version + len(h).to_bytes(len_bytes, "little") + h + data


def mlp_variant(replacements):
    with open(MLP, encoding="utf-8") as f:
        text = f.read()
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text.encode("utf-8")


# ------------------------------------------------------- tiny ONNX, no onnx pkg
def _varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _field(num, value):
    """A protobuf field: int -> varint, bytes/str -> length-delimited."""
    if isinstance(value, int):
        return _varint(num << 3) + _varint(value)
    if isinstance(value, str):
        value = value.encode("utf-8")
    return _varint(num << 3 | 2) + _varint(len(value)) + value


def onnx_model(nodes, outputs, opset=17):
    """An ONNX ModelProto: nodes are (op_type, inputs, outputs, name, ints)
    where ints maps an INTS attribute name to its values."""
    graph = b""
    for op, ins, outs, name, ints in nodes:
        node = b"".join(_field(1, i) for i in ins) + b"".join(_field(2, o) for o in outs)
        node += _field(3, name) + _field(4, op)
        for attr, values in ints.items():
            a = _field(1, attr) + _field(20, 7) + b"".join(_field(8, v) for v in values)
            node += _field(5, a)
        graph += _field(1, node)
    graph += _field(2, "g") + b"".join(_field(12, _field(1, o)) for o in outputs)
    return _field(1, 8) + _field(8, _field(1, "") + _field(2, opset)) + _field(7, graph)


# ------------------------------------------------------------- the scratch dir
def make_files(d):
    """Writes every input file the cases use into `d`; returns name -> path."""
    files = {}

    def put(name, data):
        path = os.path.join(d, name)
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode("utf-8"))
        files[name] = path

    os.mkdir(os.path.join(d, "adir"))
    os.mkdir(os.path.join(d, "adir.pb"))
    os.mkdir(os.path.join(d, "adir.npy"))
    files["dir"] = os.path.join(d, "adir")
    files["dir.pb"] = os.path.join(d, "adir.pb")
    files["dir.npy"] = os.path.join(d, "adir.npy")
    for name in ("fifo", "fifo.pb", "fifo.pbtxt", "fifo.onnx", "fifo.npy",
                 "fifo.cfg", "fifo.json", "fifo.dot"):
        path = os.path.join(d, name)
        os.mkfifo(path)
        files[name] = path
    for name, target in (("dangling", "nowhere"), ("link_to_dir", files["dir"]),
                         ("link_to_fifo", files["fifo.npy"])):
        os.symlink(target, os.path.join(d, name))
        files[name] = os.path.join(d, name)
    files["missing"] = os.path.join(d, "missing.pb")
    files["missing.npy"] = os.path.join(d, "missing.npy")

    # Models.
    with open(CNN, "rb") as f:
        cnn = f.read()
    put("empty.pb", b"")
    put("empty.pbtxt", b"")
    put("garbage.pb", bytes(range(256)) * 4)
    put("truncated.pb", cnn[: len(cnn) // 2])
    put("truncated1.pb", cnn[:1])
    put("ff.pb", b"\xff" * 64)
    put("text_as.pb", open(MLP, "rb").read())
    put("binary_as.pbtxt", cnn[:512])
    put("syntax.pbtxt", "node { name: \"a\" op: \"Input\" \n")
    put("unknown_field.pbtxt", "node { name: \"a\" frobnicate: 3 }\n")
    put("unknown_op.pbtxt", "node { name: \"a\" op: \"NoSuchOp\" }\n")
    put("no_op.pbtxt", "node { name: \"a\" }\n")
    put("dup.pbtxt", "node { name: \"a\" op: \"NoOp\" }\nnode { name: \"a\" op: \"NoOp\" }\n")
    put("cycle.pbtxt",
        "node { name: \"a\" op: \"Identity\" input: \"b\" }\n"
        "node { name: \"b\" op: \"Identity\" input: \"a\" }\n")
    put("self_loop.pbtxt", "node { name: \"a\" op: \"Identity\" input: \"a\" }\n")
    put("missing_input.pbtxt", "node { name: \"a\" op: \"Identity\" input: \"nowhere\" }\n")
    put("bad_port.pbtxt",
        "node { name: \"x\" op: \"Input\" attr { key: \"dtype\" value { type: DT_FLOAT } } "
        "attr { key: \"shape\" value { shape { dim: [1] } } } }\n"
        "node { name: \"a\" op: \"Identity\" input: \"x:7\" }\n")
    put("esc_name.pbtxt", "node { name: \"a\\nb\\033[31mred\" op: \"NoSuchOp\" }\n")
    put("bell_name.pbtxt", "node { name: \"\\007\\010\\177\" op: \"NoSuchOp\" }\n")
    put("non_utf8.pbtxt", b"node { name: \"\\377\\376\" op: \"NoSuchOp\" }\n")
    # A valid graph but for a weight's name that is not UTF-8.
    put("non_utf8_valid.pbtxt", mlp_variant([]).replace(
        b'"fc1/w"', b'"fc1/w\\377"'))
    put("version99.pbtxt", "format_version: 99\n")
    put("neg_dim.pbtxt", mlp_variant([("dim: [-1, 16]", "dim: [-7, 16]")]))
    put("const_short.pbtxt",
        "node { name: \"c\" op: \"Const\" attr { key: \"value\" value { tensor { "
        "dtype: DT_FLOAT shape { dim: [1000] } float_val: [1, 2, 3] } } } }\n")
    put("const_huge.pbtxt",
        "node { name: \"c\" op: \"Const\" attr { key: \"value\" value { tensor { "
        "dtype: DT_FLOAT shape { dim: [4611686018427387904, 4] } } } } }\n")
    put("sig_bad_tensor.pbtxt", mlp_variant([('tensor: "logits"', 'tensor: "nosuch:0"')]))
    put("sig_dup_output.pbtxt", mlp_variant([('name: "probs"', 'name: "logits"')]))
    put("clash.pbtxt", mlp_variant([('name: "logits"\n    dtype', 'name: "a/b"\n    dtype'),
                                    ('name: "probs"\n    dtype', 'name: "a_b"\n    dtype')]))
    put("esc_output.pbtxt", mlp_variant([('name: "logits"\n    dtype',
                                          'name: "lo\\033]0;pwned\\007gits\\n"\n    dtype')]))
    put("dotdot_output.pbtxt", mlp_variant([('name: "logits"\n    dtype', 'name: ".."\n    dtype')]))
    put("dotdot_clash.pbtxt", mlp_variant([('name: "logits"\n    dtype', 'name: ".."\n    dtype'),
                                           ('name: "probs"\n    dtype', 'name: "output"\n    dtype')]))
    put("unknown_ext.bin", cnn)
    put("noext", cnn)
    put("garbage.onnx", b"\x08\x07garbage" * 10)
    put("empty.onnx", b"")
    # Many errors: 300 nodes of an unknown op.
    put("many_errors.pbtxt", "".join(
        "node { name: \"n%d\" op: \"NoSuchOp\" }\n" % i for i in range(300)))
    # A cycle through 100,000 nodes: one error, its names cut with a count.
    n = 100000
    put("cycle_100k.pbtxt", "".join(
        "node { name: \"c%d\" op: \"Identity\" input: \"c%d\" }\n" % (i, (i + 1) % n)
        for i in range(n)))
    # One long name (100 KB).
    put("long_name.pbtxt", "node { name: \"%s\" op: \"NoSuchOp\" }\n" % ("x" * 100000))

    # .npy inputs for mlp's input x: float32 [-1, 16].
    put("good.npy", npy())
    put("empty.npy", b"")
    put("magic_only.npy", b"\x93NUMPY")
    put("bad_magic.npy", npy(magic=b"\x93NUMPX"))
    put("version9.npy", npy(version=b"\x09\x00"))
    put("version2.npy", npy(version=b"\x02\x00"))
    put("version3.npy", npy(version=b"\x03\x00"))
    put("hlen_past_end.npy", b"\x93NUMPY\x01\x00\xff\xff{'descr'")
    put("header_not_dict.npy", npy(header="[1, 2, 3]"))
    put("header_garbage.npy", npy(header="\x00\x01\x02garbage"))
    put("no_descr.npy", npy(header="{'fortran_order': False, 'shape': (1, 16), }"))
    put("no_shape.npy", npy(header="{'descr': '<f4', 'fortran_order': False, }"))
    put("complex.npy", npy(descr="<c8"))
    put("object.npy", npy(descr="|O"))
    put("string_dtype.npy", npy(descr="<U4"))
    put("fortran.npy", npy(fortran="True", shape=(2, 16)))
    put("neg_shape.npy", npy(header="{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 16), }", data=b""))
    put("short_data.npy", npy(data=b"\0" * 10))
    put("long_data.npy", npy(data=b"\0" * 1000))
    put("huge_shape.npy", npy(header="{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904), }", data=b""))
    put("big_shape.npy", npy(header="{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000,), }", data=b""))
    put("shape_str.npy", npy(header="{'descr': '<f4', 'fortran_order': False, 'shape': ('a', 16), }", data=b""))
    put("int32.npy", npy(descr="<i4"))
    put("float64.npy", npy(descr="<f8", data=b"\0" * 128))
    put("wrong_cols.npy", npy(shape=(1, 15)))
    put("rank3.npy", npy(shape=(1, 1, 16)))
    put("scalar.npy", npy(shape=(), data=b"\0" * 4))
    put("truncated_header.npy", npy()[:20])
    put("nan.npy", npy(data=b"\x00\x00\xc0\x7f" * 16))

    # Runtime configs.
    put("cfg_garbage.cfg", b"\xff\xfe\x00 not a proto {{{")
    put("cfg_unknown.cfg", "no_such_field: 3\n")
    put("cfg_syntax.cfg", "gpu_memory_limit { \n")
    put("cfg_bad_enum.cfg", "placement_strategy: NOT_A_STRATEGY\n")
    put("cfg_neg_threads.cfg", "intra_op_threads: -4\n")
    put("cfg_neg_inter.cfg", "inter_op_threads: -1\n")
    put("cfg_bad_device.cfg", "default_device: \"tpu:9\"\n")
    put("cfg_neg_gpu.cfg", "visible_gpus: -3\n")
    put("cfg_huge_int.cfg", "intra_op_threads: 99999999999999999999\n")
    put("cfg_neg_plans.cfg", "plan_cache_max_plans: -5\n")
    put("cfg_neg_limit.cfg", "resource_limits { max_created_tensor_bytes: -1 }\n")
    put("cfg_small_created.cfg", "resource_limits { max_created_tensor_bytes: 10 }\n")
    # A deprecated field beside the one that replaced it; alone, it is read.
    put("cfg_both_fold_caps.cfg", "max_folded_constant_bytes: 1024\n"
        "resource_limits { max_folded_constant_bytes: 2048 }\n")
    put("cfg_old_fold_cap.cfg", "max_folded_constant_bytes: 1024\n")
    # A 40 KB-less ONNX file asking for a 100,000 x 100,000 constant (37 GiB).
    put("huge_constant.onnx", onnx_model(
        [("Constant", [], ["shape"], "shape", {"value_ints": [100000, 100000]}),
         ("ConstantOfShape", ["shape"], ["y"], "huge_fill", {})], ["y"]))
    # A graph input of 10^9 floats: --random-inputs would make 4 GB.
    put("huge_input.pbtxt", mlp_variant([("dim: [-1, 16]", "dim: [1000000000, 16]")]))
    put("cfg_empty.cfg", "")
    # 1 GiB of 0.5 from one value (a splat), read by an Add: inspect and
    # convert check it without making it.
    put("splat_1g.pbtxt",
        "node { name: \"c\" op: \"Const\" attr { key: \"value\" value { tensor { "
        "dtype: DT_FLOAT shape { dim: [16384, 16384] } float_val: 0.5 } } } }\n"
        "node { name: \"y\" op: \"Add\" input: \"c\" input: \"c\" }\n")
    # 256 Mi int8 elements from a value int8 cannot hold.
    put("splat_bad_value.pbtxt",
        "node { name: \"c\" op: \"Const\" attr { key: \"value\" value { tensor { "
        "dtype: DT_INT8 shape { dim: [268435456] } int_val: 300 } } } }\n")
    return files


# ------------------------------------------------------------------ the table
def cases(f, d):
    """(id, args, expected exit code, fragment of stdout+stderr)."""
    out = os.path.join(d, "out")
    run = ["run", MLP, "--random-inputs", "--output-dir", out]
    bench = ["bench", MLP, "--random-inputs", "--runs", "1", "--warmup", "0"]
    t = []

    def add(id_, args, code, fragment):
        t.append((id_, args, code, fragment))

    # Top level.
    add("no_args", [], USAGE, "Usage")
    add("unknown_command", ["frobnicate"], USAGE, "unknown command 'frobnicate'; the commands are: devices, inspect")
    add("empty_command", [""], USAGE, "unknown command ''")
    add("escape_command", ["\x1b[31m"], USAGE, "unknown command '\\x1b[31m'")
    add("unknown_top_flag", ["--frob"], USAGE, "unknown flag '--frob'")
    add("unknown_top_flag_value", ["--frob=3", "inspect"], USAGE, "unknown flag '--frob'")
    add("help", ["--help"], OK, "Usage")
    add("version", ["--version"], OK, "sluice")
    add("command_case", ["RUN"], USAGE, "unknown command 'RUN'")

    # Model arguments that are not regular files, for every command that takes one.
    for cmd in ("inspect", "run", "place", "bench", "convert"):
        extra = [os.path.join(d, "o.pbtxt")] if cmd == "convert" else []
        add(cmd + "_dir", [cmd, f["dir"]] + extra, USAGE, "exists but is not a regular file (a directory)")
        add(cmd + "_fifo", [cmd, f["fifo.pb"]] + extra, USAGE, "exists but is not a regular file (a FIFO)")
        add(cmd + "_devnull", [cmd, "/dev/null"] + extra, USAGE, "exists but is not a regular file (a character device)")
        add(cmd + "_missing", [cmd, f["missing"]] + extra, USAGE, "does not exist")
        add(cmd + "_no_model", [cmd], USAGE, "MODEL is required")
    add("inspect_fifo_onnx", ["inspect", f["fifo.onnx"]], USAGE, "(a FIFO)")
    add("inspect_fifo_pbtxt", ["inspect", f["fifo.pbtxt"]], USAGE, "(a FIFO)")
    add("inspect_dir_pb", ["inspect", f["dir.pb"]], USAGE, "(a directory)")
    add("inspect_empty_path", ["inspect", ""], USAGE, "does not exist")
    add("inspect_nul_dir_in_path", ["inspect", os.path.join(f["garbage.pb"], "x")], USAGE, "does not exist")

    # Malformed models.
    add("empty_pb", ["inspect", f["empty.pb"]], FAIL, "has no nodes")
    add("empty_pbtxt", ["inspect", f["empty.pbtxt"]], FAIL, "has no nodes")
    add("garbage_pb", ["inspect", f["garbage.pb"]], FAIL, "garbage.pb")
    add("truncated_pb", ["inspect", f["truncated.pb"]], FAIL, "truncated.pb")
    add("truncated1_pb", ["inspect", f["truncated1.pb"]], FAIL, "truncated1.pb")
    add("ff_pb", ["inspect", f["ff.pb"]], FAIL, "ff.pb")
    add("text_as_pb", ["inspect", f["text_as.pb"]], FAIL, "text_as.pb")
    add("binary_as_pbtxt", ["inspect", f["binary_as.pbtxt"]], FAIL, "binary_as.pbtxt")
    add("syntax_pbtxt", ["inspect", f["syntax.pbtxt"]], FAIL, "syntax.pbtxt")
    add("unknown_field_pbtxt", ["inspect", f["unknown_field.pbtxt"]], FAIL, "frobnicate")
    add("unknown_op", ["inspect", f["unknown_op.pbtxt"]], FAIL, "unknown op 'NoSuchOp'")
    add("no_op", ["inspect", f["no_op.pbtxt"]], FAIL, "node 'a'")
    add("duplicate_node", ["inspect", f["dup.pbtxt"]], FAIL, "'a'")
    add("cycle", ["inspect", f["cycle.pbtxt"]], FAIL, "cycle")
    add("self_loop", ["inspect", f["self_loop.pbtxt"]], FAIL, "'a'")
    add("missing_input", ["inspect", f["missing_input.pbtxt"]], FAIL, "nowhere")
    add("bad_port", ["inspect", f["bad_port.pbtxt"]], FAIL, "x:7")
    add("escaped_name", ["inspect", f["esc_name.pbtxt"]], FAIL, "node 'a\\nb\\x1b[31mred'")
    add("escaped_controls", ["inspect", f["bell_name.pbtxt"]], FAIL, "\\x07\\x08\\x7f")
    add("non_utf8_name", ["inspect", f["non_utf8.pbtxt"]], FAIL, "non_utf8.pbtxt")
    add("non_utf8_name_json", ["inspect", f["non_utf8.pbtxt"], "--json"], FAIL, "\"valid\": false")
    add("non_utf8_valid_inspect", ["inspect", f["non_utf8_valid.pbtxt"]], FAIL,
        "NodeDef.name 'fc1/w\\xff' is not valid UTF-8")
    add("non_utf8_valid_convert", ["convert", f["non_utf8_valid.pbtxt"], os.path.join(d, "nu.pb")], FAIL,
        "is not valid UTF-8")
    add("version99", ["inspect", f["version99.pbtxt"]], FAIL, "99")
    add("neg_dim", ["inspect", f["neg_dim.pbtxt"]], FAIL, "-7")
    add("const_short", ["inspect", f["const_short.pbtxt"]], FAIL, "'c'")
    add("const_huge", ["inspect", f["const_huge.pbtxt"]], FAIL, "'c'")
    add("sig_bad_tensor", ["inspect", f["sig_bad_tensor.pbtxt"]], FAIL, "nosuch")
    add("sig_dup_output", ["inspect", f["sig_dup_output.pbtxt"]], FAIL, "logits")
    # Unknown extensions are read as binary GraphDefs.
    add("unknown_ext", ["inspect", f["unknown_ext.bin"]], OK, "valid")
    add("no_ext", ["inspect", f["noext"]], OK, "valid")
    add("garbage_onnx", ["inspect", f["garbage.onnx"]], FAIL, "garbage.onnx")
    add("empty_onnx", ["inspect", f["empty.onnx"]], FAIL, "empty.onnx")
    add("many_errors_truncated", ["inspect", f["many_errors.pbtxt"]], FAIL, "... and 200 more")
    add("many_errors_run", ["run", f["many_errors.pbtxt"]], FAIL, "more lines")
    add("cycle_100k", ["inspect", f["cycle_100k.pbtxt"]], FAIL, "-> ... and 99,990 more -> c0")
    add("cycle_100k_run", ["run", f["cycle_100k.pbtxt"]], FAIL, "and 99,990 more")
    add("json_run_garbage", ["run", f["garbage.pb"], "--json"], FAIL, '"ok": false')
    add("json_inspect_cycle", ["inspect", f["cycle.pbtxt"], "--json"], FAIL, '"valid": false')
    add("json_inspect_esc", ["inspect", f["esc_name.pbtxt"], "--json"], FAIL, "a\\\\nb\\\\x1b[31mred")
    add("json_bench_nan", ["bench", MLP, "--json", "--seconds", "nan"], USAGE, "--seconds: 'nan'")
    add("json_run_clash", ["run", f["clash.pbtxt"], "--random-inputs", "--json", "--output-dir", out], FAIL, '"ok": false')
    add("long_name_truncated", ["inspect", f["long_name.pbtxt"]], FAIL, "more bytes)")
    add("place_cycle", ["place", f["cycle.pbtxt"]], FAIL, "cycle")
    add("run_unknown_op", ["run", f["unknown_op.pbtxt"]], FAIL, "NoSuchOp")

    # The same malformed models through every command that loads a model.
    for model, fragment in (("garbage.pb", "not a valid binary GraphDef"),
                            ("truncated.pb", "truncated.pb"),
                            ("empty.pb", "has no nodes"),
                            ("syntax.pbtxt", "syntax.pbtxt"),
                            ("unknown_op.pbtxt", "unknown op 'NoSuchOp'"),
                            ("cycle.pbtxt", "cycle: a -> b -> a"),
                            ("missing_input.pbtxt", "nowhere"),
                            ("esc_name.pbtxt", "a\\nb\\x1b[31mred"),
                            ("const_huge.pbtxt", "'c'"),
                            ("garbage.onnx", "garbage.onnx")):
        for cmd in ("run", "place", "bench", "convert"):
            extra = ([os.path.join(d, "conv_%s.pbtxt" % model.replace(".", "_"))]
                     if cmd == "convert" else ["--random-inputs"] if cmd != "place" else [])
            add("%s_%s" % (cmd, model.replace(".", "_")), [cmd, f[model]] + extra, FAIL, fragment)

    # run / bench flags.
    add("seed_negative", run + ["--seed", "-1"], USAGE, "--seed: '-1' is not an integer from 0")
    add("seed_too_long", run + ["--seed", "18446744073709551616"], USAGE, "--seed: '18446744073709551616'")
    add("seed_huge", run + ["--seed", "9" * 400], USAGE, "more bytes)")
    add("seed_float", run + ["--seed", "1.5"], USAGE, "--seed: '1.5'")
    add("seed_hex", run + ["--seed", "0x10"], USAGE, "--seed: '0x10'")
    add("seed_empty", run + ["--seed", ""], USAGE, "--seed")
    add("seed_plus", run + ["--seed", "+5"], USAGE, "--seed: '+5'")
    add("seed_space", run + ["--seed", " 5"], USAGE, "--seed")
    add("seed_max_ok", run + ["--seed", "18446744073709551615"], OK, "logits")
    add("seed_without_random", ["run", MLP, "--seed", "3"], USAGE, "--seed requires --random-inputs")
    add("bench_seed_negative", bench + ["--seed", "-1"], USAGE, "--seed: '-1'")
    add("seconds_nan", ["bench", MLP, "--random-inputs", "--seconds", "nan"], USAGE, "--seconds: 'nan'")
    add("seconds_inf", ["bench", MLP, "--random-inputs", "--seconds", "inf"], USAGE, "--seconds: 'inf'")
    add("seconds_neg_inf", ["bench", MLP, "--random-inputs", "--seconds", "-inf"], USAGE, "--seconds: '-inf'")
    add("seconds_negative", ["bench", MLP, "--random-inputs", "--seconds", "-1"], USAGE, "--seconds: '-1'")
    add("seconds_zero", ["bench", MLP, "--random-inputs", "--seconds", "0"], USAGE, "--seconds: '0'")
    add("seconds_huge", ["bench", MLP, "--random-inputs", "--seconds", "1e300"], USAGE, "--seconds: '1e300'")
    add("seconds_text", ["bench", MLP, "--random-inputs", "--seconds", "abc"], USAGE, "--seconds: 'abc'")
    add("seconds_and_runs", ["bench", MLP, "--random-inputs", "--seconds", "1", "--runs", "2"], USAGE, "excludes")
    add("seconds_tiny_ok", ["bench", MLP, "--random-inputs", "--seconds", "1e-9", "--warmup", "0"], OK, "timed runs: 1")
    add("runs_zero", ["bench", MLP, "--random-inputs", "--runs", "0"], USAGE, "--runs: '0' is not an integer from 1 to 1,000,000")
    add("runs_negative", ["bench", MLP, "--random-inputs", "--runs", "-3"], USAGE, "--runs: '-3'")
    add("runs_huge", ["bench", MLP, "--random-inputs", "--runs", "99999999999"], USAGE, "--runs: '99999999999'")
    add("runs_float", ["bench", MLP, "--random-inputs", "--runs", "2.5"], USAGE, "--runs: '2.5'")
    add("warmup_negative", bench[:-2] + ["--warmup", "-1"], USAGE, "--warmup: '-1'")
    add("warmup_huge", bench[:-2] + ["--warmup", "4294967297"], USAGE, "--warmup: '4294967297'")
    add("top_zero", bench + ["--top", "0"], USAGE, "--top: '0'")
    add("top_text", bench + ["--top", "ten"], USAGE, "--top: 'ten'")
    add("bench_ok", bench, OK, "timed runs: 1")
    add("bench_trace_dir", bench + ["--trace", f["dir"]], FAIL, "--trace: '%s' exists but is not a regular file (a directory)" % f["dir"])
    add("bench_trace_fifo", bench + ["--trace", f["fifo.json"]], FAIL, "(a FIFO)")
    add("run_trace_fifo", run + ["--trace", f["fifo.json"]], FAIL, "--trace: '%s' exists but is not a regular file (a FIFO)" % f["fifo.json"])
    add("run_trace_devnull_ok", run + ["--trace", "/dev/null"], FAIL, "(a character device)")

    # --dim.
    for cmd_args in (run, bench):
        name = cmd_args[0]
        add(name + "_dim_negative", cmd_args + ["--dim", "batch=-5"], FAIL, "--dim 'batch=-5': the value '-5' is not an integer from 0")
        add(name + "_dim_text", cmd_args + ["--dim", "batch=x"], FAIL, "the value 'x'")
        add(name + "_dim_no_eq", cmd_args + ["--dim", "batch"], FAIL, "expected NAME=N")
        add(name + "_dim_no_name", cmd_args + ["--dim", "=5"], FAIL, "expected NAME=N")
        add(name + "_dim_huge", cmd_args + ["--dim", "batch=99999999999999"], FAIL, "the value '99999999999999'")
        add(name + "_dim_empty_value", cmd_args + ["--dim", "batch="], FAIL, "the value ''")
    add("run_dim_not_onnx", run + ["--dim", "batch=2"], FAIL, "--dim names symbolic dimensions of an ONNX model")
    add("convert_dim_negative", ["convert", MLP, os.path.join(d, "o.pbtxt"), "--dim", "batch=-5"], USAGE, "the value '-5'")
    add("convert_out_ext", ["convert", MLP, os.path.join(d, "o.txt")], USAGE, "OUT must end in .pb or .pbtxt")
    add("convert_out_dir", ["convert", MLP, f["dir.pb"]], USAGE, "OUT: '%s' exists but is not a regular file (a directory)" % f["dir.pb"])
    add("convert_out_fifo", ["convert", MLP, f["fifo.pb"]], USAGE, "(a FIFO)")
    add("convert_no_out", ["convert", MLP], USAGE, "OUT is required")

    # --input.
    add("input_no_eq", run + ["--input", "x"], FAIL, "--input 'x': expected NAME=FILE.npy")
    add("input_no_name", run + ["--input", "=" + f["good.npy"]], FAIL, "expected NAME=FILE.npy")
    add("input_no_file", run + ["--input", "x="], FAIL, "expected NAME=FILE.npy")
    add("input_twice", run + ["--input", "x=" + f["good.npy"], "--input", "x=" + f["good.npy"]], FAIL, "more than once")
    add("input_missing", run + ["--input", "x=" + f["missing.npy"]], FAIL, "--input x: '%s' does not exist" % f["missing.npy"])
    add("input_dir", run + ["--input", "x=" + f["dir.npy"]], FAIL, "exists but is not a regular file (a directory)")
    add("input_fifo", run + ["--input", "x=" + f["fifo.npy"]], FAIL, "exists but is not a regular file (a FIFO)")
    add("input_devnull", run + ["--input", "x=/dev/null"], FAIL, "(a character device)")
    add("input_devzero", run + ["--input", "x=/dev/zero"], FAIL, "(a character device)")
    add("input_unknown_name", ["run", MLP, "--input", "nosuch=" + f["good.npy"]], FAIL, "nosuch")
    add("input_good", ["run", MLP, "--input", "x=" + f["good.npy"], "--output-dir", out], OK, "logits")
    add("input_missing_no_random", ["run", MLP, "--output-dir", out], FAIL, "--random-inputs")
    npy_cases = [
        ("empty.npy", "empty.npy"), ("magic_only.npy", "magic_only.npy"),
        ("bad_magic.npy", "bad_magic.npy"), ("version9.npy", "version9.npy"),
                ("hlen_past_end.npy", "hlen_past_end.npy"),
        ("header_not_dict.npy", "header_not_dict.npy"),
        ("header_garbage.npy", "header_garbage.npy"),
        ("no_descr.npy", "no_descr.npy"), ("no_shape.npy", "no_shape.npy"),
        ("complex.npy", "complex.npy"), ("object.npy", "object.npy"),
        ("string_dtype.npy", "string_dtype.npy"), ("fortran.npy", "fortran.npy"),
        ("neg_shape.npy", "neg_shape.npy"), ("short_data.npy", "short_data.npy"),
        ("long_data.npy", "long_data.npy"), ("huge_shape.npy", "huge_shape.npy"),
        ("big_shape.npy", "big_shape.npy"), ("shape_str.npy", "shape_str.npy"),
        ("truncated_header.npy", "truncated_header.npy"),
        ("int32.npy", "x"), ("float64.npy", "x"), ("wrong_cols.npy", "x"),
        ("rank3.npy", "x"), ("scalar.npy", "x"),
    ]
    for name, fragment in npy_cases:
        add("npy_" + name[:-4], ["run", MLP, "--input", "x=" + f[name], "--output-dir", out], FAIL, fragment)
    add("npy_version2_ok", ["run", MLP, "--input", "x=" + f["version2.npy"], "--output-dir", out], OK, "logits")
    add("npy_version3_ok", ["run", MLP, "--input", "x=" + f["version3.npy"], "--output-dir", out], OK, "logits")
    add("npy_nan_ok", ["run", MLP, "--input", "x=" + f["nan.npy"], "--output-dir", out], OK, "nan")
    add("bench_npy_truncated", ["bench", MLP, "--input", "x=" + f["truncated_header.npy"]], FAIL, "truncated_header.npy")

    # --config for every command that takes one.
    for name, args in (("run", run), ("bench", bench), ("place", ["place", MLP]),
                       ("devices", ["devices"])):
        add(name + "_config_dir", args + ["--config", f["dir"]], USAGE, "--config: '%s' exists but is not a regular file (a directory)" % f["dir"])
        add(name + "_config_fifo", args + ["--config", f["fifo.cfg"]], USAGE, "(a FIFO)")
        add(name + "_config_missing", args + ["--config", f["missing"]], USAGE, "does not exist")
        add(name + "_config_garbage", args + ["--config", f["cfg_garbage.cfg"]], FAIL, "cfg_garbage.cfg")
    for cfg, fragment in (("cfg_unknown.cfg", "no_such_field"), ("cfg_syntax.cfg", "cfg_syntax.cfg"),
                          ("cfg_bad_enum.cfg", "NOT_A_STRATEGY"), ("cfg_neg_threads.cfg", "intra_op_threads"),
                          ("cfg_neg_inter.cfg", "inter_op_threads"), ("cfg_bad_device.cfg", "tpu:9"),
                          ("cfg_neg_gpu.cfg", "-3"), ("cfg_huge_int.cfg", "cfg_huge_int.cfg"),
                          ("cfg_neg_plans.cfg", "plan_cache_max_plans"),
                          ("cfg_neg_limit.cfg", "resource_limits.max_created_tensor_bytes"),
                          ("cfg_both_fold_caps.cfg", "replaced by resource_limits.max_folded_constant_bytes")):
        add("config_" + cfg[4:-4], run + ["--config", f[cfg]], FAIL, fragment)
        add("devices_config_" + cfg[4:-4], ["devices", "--config", f[cfg]], FAIL, fragment)
    add("config_empty_ok", run + ["--config", f["cfg_empty.cfg"]], OK, "logits")
    add("config_deprecated_noted", run + ["--config", f["cfg_old_fold_cap.cfg"]], OK,
        "max_folded_constant_bytes is deprecated")

    # Resource limits: a tiny file or flag asking for gigabytes is refused
    # (or deferred to run time) before anything is allocated.
    huge_onnx = f["huge_constant.onnx"]
    add("huge_constant_inspect", ["inspect", huge_onnx], OK, "Fill")
    add("huge_constant_place", ["place", huge_onnx], OK, "huge_fill")
    add("huge_constant_convert", ["convert", huge_onnx, os.path.join(d, "huge_constant.pb")], OK, "")
    add("splat_inspect", ["inspect", f["splat_1g.pbtxt"]], OK,
        "parameters: 268435456 in 1 Const tensors, 1.0 GiB")
    add("splat_inspect_json", ["inspect", f["splat_1g.pbtxt"], "--json"], OK, "1073741824")
    add("splat_convert", ["convert", f["splat_1g.pbtxt"], os.path.join(d, "splat.pb")], OK,
        "y: float32[16384,16384]")
    add("splat_bad_value_inspect", ["inspect", f["splat_bad_value.pbtxt"]], FAIL,
        "value 300 is out of range for int8")
    add("huge_random_input", ["run", f["huge_input.pbtxt"], "--random-inputs", "--output-dir", out],
        FAIL, "random input 'x': float32[1000000000,16] is 59.6 GiB, over the limit of 1.0 GiB")
    add("huge_random_input_bench", ["bench", f["huge_input.pbtxt"], "--random-inputs", "--runs", "1"],
        FAIL, "resource_limits.max_created_tensor_bytes")
    add("small_created_limit", run + ["--config", f["cfg_small_created.cfg"]], FAIL,
        "random input 'x': float32[1,16] is 64 B, over the limit of 10 B")

    # place flags.
    place = ["place", MLP]
    add("place_devices_empty", place + ["--devices", ""], USAGE, "--devices: empty")
    add("place_devices_blank", place + ["--devices", "  "], USAGE, "--devices: empty")
    add("place_devices_garbage", place + ["--devices", "banana"], FAIL, "banana")
    add("place_devices_zero", place + ["--devices", "0xgpu:1GiB"], FAIL, "0xgpu")
    add("place_devices_negative_mem", place + ["--devices", "gpu:-1GiB"], FAIL, "-1GiB")
    add("place_devices_huge_count", place + ["--devices", "99999999999xgpu:1GiB"], FAIL, "99999999999")
    add("place_devices_bad_unit", place + ["--devices", "gpu:1QiB"], FAIL, "1QiB")
    add("place_devices_trailing_comma", place + ["--devices", "gpu:1GiB,"], FAIL, "empty item")
    add("place_devices_ok", place + ["--devices", "2xgpu:1GiB,cpu"], OK, "strategy:")
    add("place_batch_zero", place + ["--batch", "0"], USAGE, "--batch: '0' is not an integer from 1")
    add("place_batch_negative", place + ["--batch", "-2"], USAGE, "--batch: '-2'")
    add("place_batch_huge", place + ["--batch", "9223372036854775808"], USAGE, "--batch: '9223372036854775808'")
    add("place_strategy_bad", place + ["--strategy", "greedy"], USAGE, "greedy")
    add("place_dot_dir", place + ["--devices", "cpu", "--dot", f["dir"]], FAIL, "--dot: '%s' exists but is not a regular file (a directory)" % f["dir"])
    add("place_dot_fifo", place + ["--devices", "cpu", "--dot", f["fifo.dot"]], FAIL, "(a FIFO)")

    # run outputs.
    add("output_clash", ["run", f["clash.pbtxt"], "--random-inputs", "--output-dir", out], FAIL,
        "outputs 'a/b' and 'a_b' would both be written to")
    add("output_escaped", ["run", f["esc_output.pbtxt"], "--random-inputs", "--output-dir", out], OK,
        "lo\\x1b]0;pwned\\x07gits\\n:")
    add("output_dotdot", ["run", f["dotdot_output.pbtxt"], "--random-inputs", "--output-dir", out], OK, "out/output.npy")
    add("output_clash_dotdot", ["run", f["dotdot_clash.pbtxt"], "--random-inputs", "--output-dir", out], FAIL,
        "outputs '..' and 'output' would both be written to")
    add("output_dir_is_file", run[:-1] + [f["good.npy"]], FAIL, "cannot create output directory")
    add("output_file_is_dir", ["run", MLP, "--random-inputs", "--output-dir", os.path.join(d, "outdir_collide")],
        FAIL, "exists but is not a regular file (a directory)")
    add("output_file_is_fifo", ["run", MLP, "--random-inputs", "--output-dir", os.path.join(d, "outfifo")],
        FAIL, "exists but is not a regular file (a FIFO)")

    # Empty values that would silently mean the default, and odd paths.
    add("run_device_empty", run + ["--device", ""], USAGE, "--device: empty")
    add("bench_device_empty", bench + ["--device", " "], USAGE, "--device: empty")
    add("run_output_dir_empty", ["run", MLP, "--random-inputs", "--output-dir", ""], USAGE, "--output-dir: empty")
    add("run_trace_empty", run + ["--trace", ""], USAGE, "--trace: empty")
    add("bench_trace_empty", bench + ["--trace", ""], USAGE, "--trace: empty")
    add("place_dot_empty", place + ["--dot", ""], USAGE, "--dot: empty")
    add("config_empty_path", run + ["--config", ""], USAGE, "--config: '' does not exist")
    add("run_device_negative", run + ["--device", "gpu:-1"], FAIL, "gpu:-1")
    add("run_device_no_cpu1", run + ["--device", "cpu:1"], FAIL, "cpu:1")
    add("run_device_escape", run + ["--device", "\x1b[2J"], FAIL, "\\x1b[2J")
    add("place_strategy_empty", place + ["--strategy", ""], USAGE, "--strategy")
    add("place_devices_zero_mem", place + ["--devices", "4xgpu:0GiB"], FAIL, "must be positive")
    add("place_devices_overflow_mem", place + ["--devices", "gpu:1e999GiB"], FAIL, "1e999GiB")
    add("place_devices_negative_count", place + ["--devices", "-1xgpu:1GiB"], FAIL, "-1xgpu:1GiB")
    add("place_devices_long", place + ["--devices", ",".join(["gpu:1GiB"] * 5000) + ",banana"], FAIL, "banana")
    add("devices_extra_arg", ["devices", "extra"], USAGE, "not expected: extra")
    add("inspect_two_models", ["inspect", MLP, MLP], USAGE, "not expected")
    add("convert_input_shape_text", ["convert", MLP, os.path.join(d, "o2.pbtxt"), "--input-shape", "x=1,a"], USAGE, "--input-shape: 'x=1,a'")
    add("convert_input_shape_no_eq", ["convert", MLP, os.path.join(d, "o2.pbtxt"), "--input-shape", "x"], USAGE, "--input-shape: 'x'")
    add("path_with_newline", ["inspect", os.path.join(d, "a\nb.pb")], USAGE, "a\\nb.pb' does not exist")
    add("path_trailing_slash", ["inspect", MLP + "/"], USAGE, "does not exist")
    add("path_too_long", ["inspect", os.path.join(d, "x" * 5000)], USAGE, "File name too long")
    add("path_dangling_link", ["inspect", f["dangling"]], USAGE, "does not exist")
    add("path_link_to_dir", ["inspect", f["link_to_dir"]], USAGE, "(a directory)")
    add("path_link_to_fifo", ["run", MLP, "--input", "x=" + f["link_to_fifo"]], FAIL, "(a FIFO)")
    add("input_name_escaped", ["run", MLP, "--input", "\x1b=" + f["missing.npy"]], FAIL, "--input \\x1b: ")
    add("seed_unicode_digits", run + ["--seed", "\u0661\u0662"], USAGE, "--seed: '\u0661\u0662'")
    add("seed_escape", run + ["--seed", "\x1b[31m"], USAGE, "--seed: '\\x1b[31m'")

    # Unknown flags and missing values per command.
    for cmd in ("inspect", "run", "place", "bench", "devices", "convert"):
        add(cmd + "_unknown_flag", [cmd, "--no-such-flag"], USAGE, "--no-such-flag")
    add("run_device_bad", run + ["--device", "tpu:0"], FAIL, "tpu:0")
    add("run_device_missing_gpu", run + ["--device", "gpu:99"], FAIL, "gpu:99")
    add("run_seed_missing_value", run + ["--seed"], USAGE, "--seed")
    add("bench_runs_missing_value", ["bench", MLP, "--runs"], USAGE, "--runs")
    return t


def prepare_output_collisions(d):
    os.makedirs(os.path.join(d, "outdir_collide", "logits.npy"))
    os.makedirs(os.path.join(d, "outfifo"))
    os.mkfifo(os.path.join(d, "outfifo", "logits.npy"))


def run_child(argv, cwd, timeout):
    """Runs argv in cwd; returns (exit code or -signal, output, peak RSS in
    MiB), or None on a timeout (the child is killed). The peak RSS comes
    from wait4 and includes the memory of this Python process at the spawn
    (Linux counts the address space replaced by exec), some 20 to 30 MiB:
    an overestimate by about the same amount for every case and for
    `--help`, so the checks err on the strict side."""
    with tempfile.TemporaryFile() as out:
        pid = os.posix_spawn(
            "/usr/bin/env", ["env", "-C", cwd] + argv, dict(os.environ),
            file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                          (os.POSIX_SPAWN_DUP2, out.fileno(), 1),
                          (os.POSIX_SPAWN_DUP2, out.fileno(), 2)])
        deadline = time.monotonic() + timeout
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done == pid:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.wait4(pid, 0)
                return None
            time.sleep(0.002)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return os.waitstatus_to_exitcode(status), text, usage.ru_maxrss / 1024.0


def run_case(sluice, d, case, rss_limit_mib):
    id_, args, code, fragment = case
    result = run_child([sluice] + args, d, TIMEOUT_S)
    if result is None:
        return id_, "HANG (over %.0f s)" % TIMEOUT_S, ""
    returncode, text, rss = result
    if returncode < 0:
        return id_, "CRASH (signal %d)" % -returncode, text
    problems = []
    if returncode != code:
        problems.append("exit %d, expected %d" % (returncode, code))
    if fragment not in text:
        problems.append("no %r in the output" % fragment)
    if rss > rss_limit_mib:
        problems.append("peak memory %.0f MiB, over %.0f MiB" % (rss, rss_limit_mib))
    return id_, "; ".join(problems), text


def main():
    global TIMEOUT_S
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sluice")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--show", help="print one case's output")
    parser.add_argument("-j", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S,
                        help="seconds per case (default %(default)s)")
    parser.add_argument("--no-memory-check", action="store_true",
                        help="skip the peak-memory checks (a sanitizer "
                        "build's shadow memory and quarantine inflate them)")
    a = parser.parse_args()
    TIMEOUT_S = a.timeout
    sluice = os.path.abspath(a.sluice)
    d = tempfile.mkdtemp(prefix="sluice_malformed_")
    try:
        files = make_files(d)
        prepare_output_collisions(d)
        table = cases(files, d)
        ids = [c[0] for c in table]
        dupes = {i for i in ids if ids.count(i) > 1}
        assert not dupes, dupes
        if a.list:
            for c in table:
                print(c[0], c[2], repr(c[3]))
            print(len(table), "cases")
            return 0
        # Every case stays within 200 MiB of what `sluice --help` takes
        # (which itself must stay under 50 MiB: CUDA libraries load late).
        help_result = run_child([sluice, "--help"], d, TIMEOUT_S)
        assert help_result is not None and help_result[0] == 0, help_result
        help_rss = help_result[2]
        if a.no_memory_check:
            help_rss = float("inf")
        if help_rss > HELP_RSS_LIMIT_MIB and not a.no_memory_check:
            print("FAIL sluice --help: peak memory %.0f MiB, over %d MiB" %
                  (help_rss, HELP_RSS_LIMIT_MIB))
            return 1
        rss_limit = (float("inf") if a.no_memory_check
                     else help_rss + CASE_RSS_ABOVE_HELP_MIB)
        if a.show:
            case = next(c for c in table if c[0] == a.show)
            id_, problem, text = run_case(sluice, d, case, rss_limit)
            print("args:", case[1])
            print(text)
            print("problem:", problem or "none")
            return 0
        failures = []
        with concurrent.futures.ThreadPoolExecutor(a.j) as pool:
            for id_, problem, text in pool.map(lambda c: run_case(sluice, d, c, rss_limit), table):
                if problem:
                    failures.append(id_)
                    print("FAIL %s: %s\n  output: %s" % (id_, problem, text[:600].replace("\n", "\n          ")))
        print("%d cases, %d failed (sluice --help: %.0f MiB; limit per case %.0f MiB)" %
              (len(table), len(failures), help_rss, rss_limit))
        return 1 if failures else 0
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
