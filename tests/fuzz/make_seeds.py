#!/usr/bin/env python3
"""Writes the hand-made seeds of tests/fuzz/corpus/ (standard library only).

The other seeds are copies of the repository's test data (README.md here
says which). These cover what that data lacks: .npy files of every dtype
and header version sluice reads, and the device specs and runtime configs of
the docs and tests. Seeds only steer the fuzzer; nothing checks them.

  tests/fuzz/make_seeds.py    # rewrites the files it owns, idempotent
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(os.path.join(folder, name), mode) as f:
        f.write(data)


def npy(descr, shape, payload, version=1, fortran=False):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = (f"{{'descr': '{descr}', 'fortran_order': "
              f"{'True' if fortran else 'False'}, 'shape': ({dims}), }}")
    size_bytes = 2 if version == 1 else 4
    total = 6 + 2 + size_bytes + len(header) + 1
    header += " " * ((64 - total % 64) % 64) + "\n"
    length = struct.pack("<H" if version == 1 else "<I", len(header))
    return (b"\x93NUMPY" + bytes([version, 0]) + length +
            header.encode("latin1") + payload)


def main():
    items = [
        ("f4", "<f4", (2, 3), struct.pack("<6f", 1, 2, 3, 4, 5, 6)),
        ("f2", "<f2", (3,), struct.pack("<3e", 1.0, -2.0, 0.5)),
        ("f8", "<f8", (2,), struct.pack("<2d", 1.5, -1e300)),
        ("i1", "|i1", (4,), struct.pack("<4b", -128, -1, 0, 127)),
        ("i2", "<i2", (2,), struct.pack("<2h", -32768, 7)),
        ("i4", "<i4", (1, 2), struct.pack("<2i", -1, 2**31 - 1)),
        ("i8", "<i8", (2,), struct.pack("<2q", -(2**63), 5)),
        ("u1", "|u1", (3,), bytes([0, 1, 255])),
        ("u2", "<u2", (2,), struct.pack("<2H", 0, 65535)),
        ("u4", "<u4", (2,), struct.pack("<2I", 0, 2**32 - 1)),
        ("u8", "<u8", (1,), struct.pack("<Q", 2**64 - 1)),
        ("b1", "|b1", (2, 2), bytes([1, 0, 0, 1])),
        ("scalar", "<f4", (), struct.pack("<f", 3.5)),
        ("empty", "<f4", (0, 3), b""),
    ]
    for name, descr, shape, payload in items:
        write("npy_fuzz", f"{name}.npy", npy(descr, shape, payload))
    write("npy_fuzz", "v2.npy", npy("<f4", (2,), struct.pack("<2f", 1, 2), 2))
    write("npy_fuzz", "v3.npy", npy("<i4", (1,), struct.pack("<i", 9), 3))
    write("npy_fuzz", "fortran.npy",
          npy("<f4", (2, 2), struct.pack("<4f", 1, 2, 3, 4), fortran=True))
    write("npy_fuzz", "big_endian.npy", npy(">f4", (1,), b"\x3f\x80\0\0"))

    specs = ["4xgpu:80GiB", "2xgpu:16GiB,cpu", "cpu", "cpu:1.5TB",
             "2xcpu:512MiB", "gpu:16G,gpu:1MiB,cpu:64KiB", "64xcpu",
             "gpu:0", "/gpu:1", "/device:GPU:1", "/gpu:*", "0.5", "4GiB",
             "2x(4xgpu:80GiB)", "(2xgpu:16GiB,cpu),(gpu:40GiB)",
             "2x(gpu:1GiB"]
    for i, spec in enumerate(specs):
        write("device_spec_fuzz", f"spec{i:02d}", spec)

    configs = {
        "full.pbtxt": (
            "# a comment\n"
            "visible_gpus: [0, 1]\n"
            "gpu_memory_limit { fraction: 0.5 }\n"
            "allow_growth: true\n"
            "gpu { index: 1 memory_limit { bytes: 1073741824 }\n"
            "      logical_devices { memory_limit { bytes: 536870912 } }\n"
            "      logical_devices { memory_limit { bytes: 536870912 } } }\n"
            "logical_cpus {}\n"
            "logical_cpus { memory_limit { bytes: 0 } }\n"
            "placement_strategy: PLACEMENT_SINGLE\n"
            "default_device: \"/gpu:1\"\n"
            "inter_op_threads: 4\n"),
        "cpus.pbtxt": (
            "use_gpu: false\n"
            "logical_cpus { memory_limit { bytes: 1048576 } }\n"
            "logical_cpus { memory_limit { bytes: 2097152 } }\n"
            "placement_strategy: PLACEMENT_MANUAL\n"
            "default_device: \"cpu:1\"\nsoft_placement: false\n"),
        "cache.pbtxt": (
            "plan_cache_max_plans: 8\nplan_cache_max_bytes: 1000000\n"
            "gpu_graphs: false\nallow_tf32: true\nlog_placement: true\n"
            "intra_op_threads: 2\n"),
        "gpu_fraction.pbtxt": (
            "gpu { index: 0 memory_limit { fraction: 0.25 }\n"
            "      logical_devices { memory_limit { fraction: 0.5 } } }\n"),
    }
    for name, text in configs.items():
        write("runtime_config_fuzz", name, text)

    # Bootstrap frames (distributed/bootstrap_message.h): a u32 length, then
    # a type byte and the fields (u32, or u32 length + bytes), little-endian.
    def u32(v):
        return struct.pack("<I", v)

    def blob(b):
        return u32(len(b)) + b

    def frame(body):
        return u32(len(body)) + body

    hello = (b"\x01" + u32(1) + u32(4) + u32(2) + blob(b"test-token-0123456789") +
             u32(2) + blob(b"model") + blob(bytes(range(16))) +
             blob(b"config") + blob(b"cfg"))
    frames = {
        "hello": frame(hello),
        "welcome": frame(b"\x02" + u32(4)),
        "refusal": frame(b"\x03" + u32(7) + blob(b"wrong job token")),
        "gather": frame(b"\x04" + u32(1) + u32(2) + blob(b"gpu:0 80GiB")),
        "gather_result": frame(b"\x05" + u32(1) + u32(3) + blob(b"a") +
                               blob(b"") + blob(b"ccc")),
        "broadcast": frame(b"\x06" + u32(2) + blob(bytes(128))),
        "session": frame(hello) + frame(b"\x04" + u32(1) + u32(2) + blob(b"x")),
        "http": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        "truncated": frame(hello)[:20],
        "address": b"[::1]:29500",
    }
    for name, data in frames.items():
        write("bootstrap_message_fuzz", name, data)


if __name__ == "__main__":
    main()
