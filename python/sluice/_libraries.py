"""Where the extension finds NVIDIA's CUDA libraries: first in the ``nvidia-*``
pip packages of this Python environment (``pip install sluice[cuda]``:
nvidia-cublas, nvidia-cudnn-cu13, nvidia-cuda-nvrtc, ...), as PyTorch does,
then where the system's dynamic loader looks (LD_LIBRARY_PATH, the ld.so
cache). The packages put their libraries in ``<site-packages>/nvidia/<name>/lib``;
every ``sys.path`` entry holding an ``nvidia`` folder is handed to the
extension (device/dynamic_library.h), which looks there when a CUDA library
is first needed, not at import.

    sluice._libraries.package_roots()   # ['/venv/lib/python3.12/site-packages']
"""

from __future__ import annotations

import os
import sys
from typing import List

from sluice import _sluice


def package_roots() -> List[str]:
    """The ``sys.path`` folders that hold NVIDIA's pip packages, in
    ``sys.path`` order, each once. An empty entry (the current folder) is
    never one: libraries are not loaded from wherever the program runs."""
    roots: List[str] = []
    for entry in sys.path:
        if not entry:
            continue
        path = os.path.abspath(entry)
        if path not in roots and os.path.isdir(os.path.join(path, "nvidia")):
            roots.append(path)
    return roots


def register() -> None:
    """Hands package_roots() to the extension (at import, from __init__)."""
    _sluice.set_package_roots(package_roots())
