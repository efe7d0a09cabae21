// SluiceBuildId: the GNU build ID of the binary or shared library this code
// was linked into (libsluice.so, or the program that links libsluice.a), as
// hex: a different build of sluice has a different ID, so a file keyed by
// it (a prepared model, model/prepared_model.h) is never read by code that
// did not write it.
//
//   std::string id = SluiceBuildId();  // "5c1e...": 40 hex digits, or ""
//
// The ID is read once, from the loaded object's program headers (no file
// is opened). Thread-safe.
#ifndef SLUICE_CORE_BUILD_ID_H_
#define SLUICE_CORE_BUILD_ID_H_

#include <string>

namespace sluice {

// "" when the object has no build ID (linked with --build-id=none).
const std::string& SluiceBuildId();

}  // namespace sluice

#endif  // SLUICE_CORE_BUILD_ID_H_
