#include "distributed/tcp_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

std::string Errno(int err) { return std::strerror(err); }

absl::Status SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return absl::InternalError(
        absl::StrCat("fcntl(O_NONBLOCK): ", Errno(errno)));
  }
  return absl::OkStatus();
}

// Milliseconds until `deadline` for poll (0 when past; at most a minute at
// a time so that a far deadline cannot overflow).
int PollMillis(absl::Time deadline) {
  absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  int64_t ms = absl::ToInt64Milliseconds(left) + 1;
  return static_cast<int>(ms > 60000 ? 60000 : ms);
}

// Waits for `events` on `fd`; false at the deadline.
absl::StatusOr<bool> WaitFor(int fd, short events, absl::Time deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    int n = poll(&p, 1, PollMillis(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(absl::StrCat("poll: ", Errno(errno)));
    if (n > 0) return true;
    if (absl::Now() >= deadline) return false;
  }
}

struct AddrInfoDeleter {
  void operator()(addrinfo* a) const { freeaddrinfo(a); }
};

absl::StatusOr<std::unique_ptr<addrinfo, AddrInfoDeleter>> Resolve(
    const HostPort& address, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* result = nullptr;
  std::string port = std::to_string(address.port);
  int rc = getaddrinfo(address.host.c_str(), port.c_str(), &hints, &result);
  if (rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot resolve '", address.host, "': ", gai_strerror(rc)));
  }
  return std::unique_ptr<addrinfo, AddrInfoDeleter>(result);
}

std::string FormatAddress(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    port = ntohs(a->sin_port);
    return absl::StrCat(host, ":", port);
  }
  if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    port = ntohs(a->sin6_port);
    return absl::StrCat("[", host, "]:", port);
  }
  return "?";
}

std::string SecondsText(absl::Duration d) {
  return absl::StrFormat("%.1f s", absl::ToDoubleSeconds(d));
}

// Reads exactly `n` bytes into `out`. `what` says which part of a message
// for errors.
absl::Status ReadExact(const TcpSocket& socket, char* out, size_t n,
                       absl::Time deadline, absl::string_view peer,
                       absl::string_view what) {
  size_t got = 0;
  absl::Time start = absl::Now();
  while (got < n) {
    ssize_t r = recv(socket.fd(), out + got, n - got, 0);
    if (r > 0) {
      got += static_cast<size_t>(r);
      continue;
    }
    if (r == 0) {
      return absl::UnavailableError(
          absl::StrCat(peer, " closed the connection ",
                       got == 0 ? absl::StrCat("before ", what)
                                : absl::StrCat("after ", got, " of the ", n,
                                               " bytes of ", what)));
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return absl::UnavailableError(
          absl::StrCat("reading from ", peer, ": ", Errno(errno)));
    }
    ASSIGN_OR_RETURN(bool ready, WaitFor(socket.fd(), POLLIN, deadline));
    if (!ready) {
      return absl::DeadlineExceededError(absl::StrCat(
          peer, " sent ", got, " of the ", n, " bytes of ", what,
          " and then nothing for ", SecondsText(absl::Now() - start)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

TcpSocket& TcpSocket::operator=(TcpSocket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void TcpSocket::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

int TcpSocket::LocalPort() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET)
    return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

std::string TcpSocket::PeerAddress() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  return FormatAddress(ss);
}

absl::StatusOr<TcpSocket> ListenTcp(const HostPort& address) {
  ASSIGN_OR_RETURN(auto addrs, Resolve(address, /*passive=*/false));
  std::string last_error = "no address";
  for (addrinfo* a = addrs.get(); a != nullptr; a = a->ai_next) {
    TcpSocket s(
        socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.valid()) {
      last_error = Errno(errno);
      continue;
    }
    int one = 1;
    setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(s.fd(), a->ai_addr, a->ai_addrlen) != 0 ||
        listen(s.fd(), 128) != 0) {
      last_error = Errno(errno);
      continue;
    }
    RETURN_IF_ERROR(SetNonBlocking(s.fd()));
    return s;
  }
  return absl::UnavailableError(absl::StrCat(
      "cannot listen on ", address.ToString(), ": ", last_error,
      " (is another job using the port, or is the address not this host's?)"));
}

absl::StatusOr<TcpSocket> AcceptTcp(const TcpSocket& listener,
                                    absl::Time deadline) {
  while (true) {
    int fd =
        accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return TcpSocket(fd);
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return absl::UnavailableError(absl::StrCat("accept: ", Errno(errno)));
    }
    ASSIGN_OR_RETURN(bool ready, WaitFor(listener.fd(), POLLIN, deadline));
    if (!ready)
      return absl::DeadlineExceededError("no connection before the deadline");
  }
}

absl::StatusOr<TcpSocket> ConnectTcp(const HostPort& address,
                                     absl::Time deadline) {
  ASSIGN_OR_RETURN(auto addrs, Resolve(address, /*passive=*/false));
  std::string last_error = "no address";
  absl::Duration backoff = absl::Milliseconds(20);
  while (true) {
    for (addrinfo* a = addrs.get(); a != nullptr; a = a->ai_next) {
      TcpSocket s(socket(a->ai_family,
                         a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                         a->ai_protocol));
      if (!s.valid()) {
        last_error = Errno(errno);
        continue;
      }
      int rc = connect(s.fd(), a->ai_addr, a->ai_addrlen);
      if (rc != 0 && errno == EINPROGRESS) {
        ASSIGN_OR_RETURN(bool ready, WaitFor(s.fd(), POLLOUT, deadline));
        if (!ready) {
          last_error = "the connection was not accepted in time";
          continue;
        }
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      }
      if (rc == 0) {
        int one = 1;
        setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return s;
      }
      last_error = Errno(errno);
    }
    if (absl::Now() + backoff >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "cannot connect to the coordinator at ", address.ToString(), ": ",
          last_error, " (is rank 0 running, and listening on that address?)"));
    }
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Milliseconds(500));
  }
}

absl::Status SendMessage(const TcpSocket& socket,
                         const BootstrapMessage& message, absl::Time deadline,
                         absl::string_view peer) {
  std::string frame = EncodeFrame(message);
  size_t sent = 0;
  while (sent < frame.size()) {
    ssize_t n = send(socket.fd(), frame.data() + sent, frame.size() - sent,
                     MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      return absl::UnavailableError(
          absl::StrCat("sending a ", MessageName(message), " message to ", peer,
                       ": ", Errno(errno)));
    }
    ASSIGN_OR_RETURN(bool ready, WaitFor(socket.fd(), POLLOUT, deadline));
    if (!ready) {
      return absl::DeadlineExceededError(absl::StrCat(
          peer, " did not read a ", MessageName(message), " message (", sent,
          " of ", frame.size(), " bytes sent)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<BootstrapMessage> ReceiveMessage(const TcpSocket& socket,
                                                size_t max_bytes,
                                                absl::Time deadline,
                                                absl::string_view peer) {
  char header[kFrameHeaderBytes];
  RETURN_IF_ERROR(ReadExact(socket, header, sizeof(header), deadline, peer,
                            "a message's length"));
  absl::StatusOr<uint32_t> length =
      DecodeFrameLength(absl::string_view(header, sizeof(header)), max_bytes);
  if (!length.ok()) {
    return absl::Status(
        length.status().code(),
        absl::StrCat("from ", peer, ": ", length.status().message()));
  }
  std::string body(*length, '\0');
  RETURN_IF_ERROR(ReadExact(socket, body.data(), body.size(), deadline, peer,
                            absl::StrCat("a message of ", *length, " bytes")));
  absl::StatusOr<BootstrapMessage> message = DecodeMessage(body);
  if (!message.ok()) {
    return absl::Status(
        message.status().code(),
        absl::StrCat("from ", peer, ": ", message.status().message()));
  }
  return message;
}

}  // namespace sluice
