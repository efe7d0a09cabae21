#include "placer/cluster_topology.h"

#include "absl/strings/str_cat.h"

namespace sluice {

ClusterTopology JoinRankTopologies(const std::vector<DeviceTopology>& ranks) {
  ClusterTopology out;
  int gpus = 0, cpus = 0;
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    out.first_device.push_back(out.topology.num_devices());
    int host_gpu = 0, host_cpu = 0;
    for (const DeviceSpec& local : ranks[r].devices) {
      DeviceSpec d = local;
      const bool gpu = d.type == DeviceType::kGpu;
      const int on_host = gpu ? host_gpu++ : host_cpu++;
      d.index = gpu ? gpus++ : cpus++;
      d.host = r;
      d.name = absl::StrCat("/job:worker/task:", r,
                            DeviceName{d.type, on_host}.ToString());
      // Physical ids are a rank's own: keep two ranks' apart.
      if (d.physical_id >= 0) d.physical_id += 1000 * r;
      out.topology.devices.push_back(std::move(d));
      out.rank_of_device.push_back(r);
    }
  }
  out.topology.num_hosts = static_cast<int>(ranks.size());
  const int n = out.topology.num_devices();
  out.topology.links.assign(static_cast<size_t>(n) * n, Link{});
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      Link& link = out.topology.links[static_cast<size_t>(a) * n + b];
      const int ra = out.rank_of_device[a], rb = out.rank_of_device[b];
      if (ra != rb) {
        link = {LinkKind::kNetwork, kNetworkLatencySeconds,
                kNetworkBytesPerSecond};
        continue;
      }
      const DeviceTopology& local = ranks[ra];
      const int la = a - out.first_device[ra], lb = b - out.first_device[ra];
      if (local.links.size() ==
          static_cast<size_t>(local.num_devices()) * local.num_devices()) {
        link = local.link(la, lb);
      } else if (a != b) {
        link = {LinkKind::kPcie, kPcieLatencySeconds, kPcieBytesPerSecond};
      }
    }
  }
  return out;
}

}  // namespace sluice
