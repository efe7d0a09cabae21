"""``python -m sluice ARGS`` (and the ``sluice`` script pip installs): the
same command line as the C++ ``sluice`` binary, run from the extension."""

from __future__ import annotations

import sys
from typing import Optional, Sequence

from sluice import _sluice


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the ``sluice`` command line; returns its exit code (0 success,
    1 failure, 2 usage error)."""
    args = list(sys.argv[1:] if argv is None else argv)
    sys.stdout.flush()
    sys.stderr.flush()
    return _sluice.cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
