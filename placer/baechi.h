// Baechi's memory-constrained placements (Jeon et al., "Baechi: Fast Device
// Placement of Machine Learning Graphs", SoCC 2020), as baselines that
// PlaceGraph's own are compared against (bench/placement_compare.cc; issue
// 30). Not used by sessions.
//
//   ASSIGN_OR_RETURN(Placement p,
//                    PlaceBaechi(graph, topo, options, BaechiAlgorithm::kEtf));
//
// Both place every node that runs on a device rules 1-4 allow it
// (PlacementConstraints: kernels, requests, soft placement; colocation
// groups are not kept together, Baechi has none for inference graphs),
// with Baechi's memory model: a device holds the weights of the nodes on it,
// every output computed there and every value copied to it, for the whole
// step (Baechi keeps forward outputs for the backward pass), within its
// budget. Const and Input nodes go with their first consumer, as Baechi
// colocates a variable with the op that reads it.
//   kTopo (m-TOPO): the nodes in topological order, each on the current
//     device (fastest first, PlaceGraph's stage order) until it has no room,
//     then on the next.
//   kEtf (m-ETF): list scheduling by earliest start: of the nodes whose
//     inputs are all placed, the (node, device) pair that can start first
//     (the device free, the inputs arrived over the links) among the
//     devices with room.
// Baechi's third algorithm, m-SCT, needs a linear program's favourite
// children; it is not here.
//
// The result is then scheduled as PlaceGraph's are (placer/schedule.h, the
// assignment as fixed stages): its estimated step, its devices' peak memory
// in sluice's model (activations live from producer to last consumer) and
// its reasons come from the same code, so the placements compare on the
// same terms. RESOURCE_EXHAUSTED when a node fits on no device in Baechi's
// model.
#ifndef SLUICE_PLACER_BAECHI_H_
#define SLUICE_PLACER_BAECHI_H_

#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "placer/device_spec.h"
#include "placer/placer.h"

namespace sluice {

enum class BaechiAlgorithm { kTopo, kEtf };

// "m-TOPO", "m-ETF".
const char* BaechiAlgorithmName(BaechiAlgorithm algorithm);
// The algorithm BaechiAlgorithmName names, in any case ("m-etf"); nullopt
// for another name.
std::optional<BaechiAlgorithm> ParseBaechiAlgorithm(std::string_view name);

absl::StatusOr<Placement> PlaceBaechi(const Graph& graph,
                                      const DeviceTopology& topo,
                                      const PlacerOptions& options,
                                      BaechiAlgorithm algorithm);

}  // namespace sluice

#endif  // SLUICE_PLACER_BAECHI_H_
