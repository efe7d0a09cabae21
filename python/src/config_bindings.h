// The RuntimeConfig message as a Python object, `sluice._sluice._Config`,
// which sluice.Config (python/sluice/config.py) wraps: every field of
// proto/config.proto by name, read and written through the proto's
// descriptors, so a field added to the proto reaches Python with no code.
//
//   c = _sluice._Config.from_text("optimization_level: NONE", "<text>")
//   c.set("resource_limits.max_folded_bytes", 1 << 20)
//   c.get("optimization_level")        # "NONE": enums by their short names
//   c.to_text()                        # ConfigText: what a config file holds
//
// Python values: bool, int, float and str for scalars (an enum by its short
// or full name, in any case, or its number); a list for a repeated field; a
// dict of field names for a message; a MemoryLimit also as bytes (int), a
// fraction (float) or text ("4GiB", "0.5"); None clears. Errors are
// sluice.InvalidArgumentError "PATH: ..." with the library's messages
// (executor/config_fields.h), and leave the message unchanged.
//
// Not thread-safe: one Python object, used under the GIL.
#ifndef SLUICE_PYTHON_SRC_CONFIG_BINDINGS_H_
#define SLUICE_PYTHON_SRC_CONFIG_BINDINGS_H_

#include "nanobind/nanobind.h"
#include "proto/config.pb.h"

namespace sluice::python {

struct PyConfig {
  RuntimeConfig message;
};

void BindConfig(nanobind::module_& m);

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_SRC_CONFIG_BINDINGS_H_
