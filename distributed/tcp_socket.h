// TcpSocket: a connected or listening TCP socket (plain POSIX, non-blocking,
// every wait bounded by a deadline), and the framed send and receive of
// bootstrap messages over it (bootstrap_message.h). Used by the bootstrap
// only; tensors never travel here (issue 30: NCCL and MPI carry them).
//
//   absl::Time deadline = absl::Now() + absl::Seconds(5);
//   ASSIGN_OR_RETURN(TcpSocket s, ConnectTcp(addr, deadline));
//   RETURN_IF_ERROR(SendMessage(s, msg, deadline, "rank 0"));
//   ASSIGN_OR_RETURN(BootstrapMessage m,
//                    ReceiveMessage(s, cap, deadline, "rank 0"));
//
// A TcpSocket is movable, not copyable, and closes its descriptor when
// destroyed. One thread uses a socket at a time.
#ifndef SLUICE_DISTRIBUTED_TCP_SOCKET_H_
#define SLUICE_DISTRIBUTED_TCP_SOCKET_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "distributed/bootstrap_message.h"
#include "distributed/process_group_info.h"

namespace sluice {

class TcpSocket {
 public:
  TcpSocket() = default;
  explicit TcpSocket(int fd) : fd_(fd) {}
  TcpSocket(TcpSocket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  TcpSocket& operator=(TcpSocket&& other) noexcept;
  TcpSocket(const TcpSocket&) = delete;
  TcpSocket& operator=(const TcpSocket&) = delete;
  ~TcpSocket() { Close(); }

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Close();
  // The port a listening socket is bound to (useful after asking for 0).
  int LocalPort() const;
  // "host:port" of the other end, or "?" when unknown.
  std::string PeerAddress() const;

 private:
  int fd_ = -1;
};

// Binds to `address` (port 0: any free port) and listens. Only the address
// named is bound. UNAVAILABLE naming the address when it cannot be.
absl::StatusOr<TcpSocket> ListenTcp(const HostPort& address);
// The next connection on `listener`; DEADLINE_EXCEEDED at `deadline`.
absl::StatusOr<TcpSocket> AcceptTcp(const TcpSocket& listener,
                                    absl::Time deadline);
// Connects to `address`, retrying while nothing listens there yet (the
// coordinator may start after this rank) until `deadline`: then
// DEADLINE_EXCEEDED with the last error.
absl::StatusOr<TcpSocket> ConnectTcp(const HostPort& address,
                                     absl::Time deadline);

// Sends `message` as one frame. UNAVAILABLE when the peer is gone,
// DEADLINE_EXCEEDED when it does not read by `deadline`. `peer` names the
// other end in errors ("rank 2", "the coordinator at 10.0.0.1:29500").
absl::Status SendMessage(const TcpSocket& socket,
                         const BootstrapMessage& message, absl::Time deadline,
                         absl::string_view peer);
// Receives one frame and decodes it. UNAVAILABLE when the peer closes the
// connection (saying after how many bytes of a message), DEADLINE_EXCEEDED
// when it sends nothing more by `deadline`, RESOURCE_EXHAUSTED for a frame
// above `max_bytes`, INVALID_ARGUMENT for a malformed one.
absl::StatusOr<BootstrapMessage> ReceiveMessage(const TcpSocket& socket,
                                                size_t max_bytes,
                                                absl::Time deadline,
                                                absl::string_view peer);

}  // namespace sluice

#endif  // SLUICE_DISTRIBUTED_TCP_SOCKET_H_
