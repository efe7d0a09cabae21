#!/bin/sh
# Compiler launcher for GCC builds with precompiled headers: runs the compile
# command it is given and, when the compiler crashed (GCC exits 4 on an
# internal compiler error, a segfault of cc1plus included), runs it once
# more. GCC 12's precompiled headers are memory images mapped back into each
# compile; one compile in a few thousand has crashed loading one and passed
# when run again (cmake/precompiled_headers.cmake). Any other failure, and a
# second crash, fail the build as usual.
"$@"
rc=$?
if [ "$rc" -eq 4 ]; then
  echo "retry_after_ice: the compiler crashed (exit 4); compiling once more" >&2
  "$@"
  rc=$?
fi
exit "$rc"
