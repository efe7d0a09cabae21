// Session: public, in sluice/session.h. Inside sluice this header also brings
// the private types the session's accessors return (Graph, Placement).
#ifndef SLUICE_EXECUTOR_SESSION_H_
#define SLUICE_EXECUTOR_SESSION_H_

#include "core/tensor.h"
#include "graph/graph.h"
#include "placer/placer.h"
#include "proto/config.pb.h"
#include "sluice/session.h"  // IWYU pragma: export

#endif  // SLUICE_EXECUTOR_SESSION_H_
