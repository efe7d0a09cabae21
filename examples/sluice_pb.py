"""Python bindings for sluice's proto/*.proto, generated with protoc at run time.

    from sluice_pb import graph_pb2, types_pb2
    g = graph_pb2.GraphDef()

The modules are generated into a temporary folder that is removed when the
process exits, so no generated code is ever committed. Needs `protoc` on PATH
and a Python protobuf runtime that matches it (protoc 3.21.x: protobuf 4.21.x).
"""

import atexit
import importlib
import os
import shutil
import subprocess
import sys
import tempfile

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _generate():
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        sys.exit("examples: the Python protobuf runtime is missing; install the "
                 "version matching protoc 3.21 with: pip install protobuf==4.21.12")
    if shutil.which("protoc") is None:
        sys.exit("examples: protoc is not on PATH (Debian: protobuf-compiler)")
    out_dir = tempfile.mkdtemp(prefix="sluice_pb_")
    atexit.register(shutil.rmtree, out_dir, ignore_errors=True)
    protos = ["proto/types.proto", "proto/graph.proto", "proto/config.proto"]
    subprocess.run(["protoc", "-I", REPO_ROOT, "--python_out", out_dir] + protos,
                   check=True)
    # graph_pb2 imports `proto.types_pb2`; make `proto` a regular package so
    # that an unrelated installed package of that name cannot shadow it.
    open(os.path.join(out_dir, "proto", "__init__.py"), "w").close()
    sys.path.insert(0, out_dir)
    for name in [m for m in sys.modules if m == "proto" or m.startswith("proto.")]:
        del sys.modules[name]
    return (importlib.import_module("proto.types_pb2"),
            importlib.import_module("proto.graph_pb2"),
            importlib.import_module("proto.config_pb2"))


types_pb2, graph_pb2, config_pb2 = _generate()
