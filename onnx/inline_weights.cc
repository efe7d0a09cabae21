// ReadModelLeavingWeightsInFile: a protobuf wire-format walk of the file
// that copies everything but the large initializer raw_data into a buffer,
// which protobuf then parses (onnx/inline_weights.h).
#include "onnx/inline_weights.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <utility>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice {

WeightsInFile::~WeightsInFile() {
  if (fd_ >= 0) close(fd_);
}

WeightsInFile::WeightsInFile(WeightsInFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), ranges_(std::move(other.ranges_)) {}

WeightsInFile& WeightsInFile::operator=(WeightsInFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    ranges_ = std::move(other.ranges_);
  }
  return *this;
}

const RawDataInFile* WeightsInFile::Find(int index) const {
  auto it = ranges_.find(index);
  return it == ranges_.end() ? nullptr : &it->second;
}

void WeightsInFile::Set(int index, int64_t offset, int64_t length) {
  ranges_[index] = RawDataInFile{fd_, offset, length};
}

namespace {

// Field numbers of onnx.proto that the walk follows.
constexpr uint32_t kModelGraph = 7;         // ModelProto.graph
constexpr uint32_t kGraphInitializer = 5;   // GraphProto.initializer
constexpr uint32_t kTensorRawData = 9;      // TensorProto.raw_data

constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

absl::Status Malformed(int64_t at, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("not a protobuf message this reader follows: ", what,
                   " at byte ", at));
}

// Buffered reads of `fd` from a position, with skips that read nothing.
class FileReader {
 public:
  FileReader(int fd, int64_t size) : fd_(fd), size_(size) {}

  int64_t position() const { return pos_; }

  absl::Status Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t byte = 0;
      if (!Byte(&byte)) return Malformed(pos_, "a varint past the end");
      *v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return absl::OkStatus();
    }
    return Malformed(pos_, "a varint of more than ten bytes");
  }

  // Appends the next n bytes to *out.
  absl::Status Append(int64_t n, std::string* out) {
    if (n < 0 || n > size_ - pos_) return Malformed(pos_, "a field past the end");
    while (n > 0) {
      if (begin_ == end_) RETURN_IF_ERROR(Fill());
      const int64_t take = std::min<int64_t>(n, end_ - begin_);
      out->append(buf_.data() + begin_, static_cast<size_t>(take));
      begin_ += take;
      pos_ += take;
      n -= take;
    }
    return absl::OkStatus();
  }

  absl::Status Skip(int64_t n) {
    if (n < 0 || n > size_ - pos_) return Malformed(pos_, "a field past the end");
    const int64_t buffered = std::min<int64_t>(n, end_ - begin_);
    begin_ += buffered;
    pos_ += n;
    if (n > buffered) begin_ = end_ = 0;  // the rest is not buffered
    return absl::OkStatus();
  }

 private:
  static constexpr int64_t kBufferBytes = int64_t{256} << 10;

  bool Byte(uint8_t* b) {
    if (begin_ == end_ && (pos_ >= size_ || !Fill().ok())) return false;
    *b = static_cast<uint8_t>(buf_[static_cast<size_t>(begin_++)]);
    ++pos_;
    return true;
  }

  absl::Status Fill() {
    buf_.resize(static_cast<size_t>(kBufferBytes));
    const int64_t want = std::min<int64_t>(kBufferBytes, size_ - pos_);
    ssize_t got;
    do {
      got = pread(fd_, buf_.data(), static_cast<size_t>(want),
                  static_cast<off_t>(pos_));
    } while (got < 0 && errno == EINTR);
    if (got <= 0) return Malformed(pos_, "a read that failed");
    begin_ = 0;
    end_ = got;
    return absl::OkStatus();
  }

  const int fd_;
  const int64_t size_;
  int64_t pos_ = 0;  // file offset of buf_[begin_]
  std::string buf_;
  int64_t begin_ = 0, end_ = 0;
};

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// What the walk is inside of.
enum class Level { kModel, kGraph, kTensor };

class Walk {
 public:
  Walk(FileReader* in, WeightsInFile* weights) : in_(in), weights_(weights) {}

  // Copies the message of `length` bytes at the reader's position into
  // *out, descending into the main graph's initializers.
  absl::Status Message(Level level, int64_t length, std::string* out) {
    const int64_t end = in_->position() + length;
    const int tensor = level == Level::kTensor ? tensor_++ : -1;
    while (in_->position() < end) {
      uint64_t tag = 0;
      RETURN_IF_ERROR(in_->Varint(&tag));
      const uint32_t field = static_cast<uint32_t>(tag >> 3);
      const int type = static_cast<int>(tag & 7);
      if (type != kLengthDelimited) {
        PutVarint(tag, out);
        RETURN_IF_ERROR(Scalar(type, out));
        continue;
      }
      uint64_t n = 0;
      RETURN_IF_ERROR(in_->Varint(&n));
      const int64_t len = static_cast<int64_t>(n);
      if (n > static_cast<uint64_t>(end - in_->position())) {
        return Malformed(in_->position(), "a field past its message's end");
      }
      const Level inner = level == Level::kModel && field == kModelGraph
                              ? Level::kGraph
                          : level == Level::kGraph && field == kGraphInitializer
                              ? Level::kTensor
                              : level;
      if (inner != level) {
        std::string body;
        RETURN_IF_ERROR(Message(inner, len, &body));
        PutVarint(tag, out);
        PutVarint(body.size(), out);
        out->append(body);
      } else if (level == Level::kTensor && field == kTensorRawData &&
                 len >= kMinLeftInFileBytes) {
        // The last raw_data of a message is the one protobuf keeps.
        weights_->Set(tensor, in_->position(), len);
        RETURN_IF_ERROR(in_->Skip(len));
      } else {
        if (level == Level::kTensor && field == kTensorRawData) {
          weights_->Erase(tensor);
        }
        PutVarint(tag, out);
        PutVarint(n, out);
        RETURN_IF_ERROR(in_->Append(len, out));
      }
    }
    if (in_->position() != end) {
      return Malformed(in_->position(), "a field across its message's end");
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Scalar(int type, std::string* out) {
    switch (type) {
      case kVarint: {
        uint64_t v = 0;
        RETURN_IF_ERROR(in_->Varint(&v));
        PutVarint(v, out);
        return absl::OkStatus();
      }
      case kFixed64:
        return in_->Append(8, out);
      case kFixed32:
        return in_->Append(4, out);
      default:  // groups (3, 4) and the invalid 6 and 7
        return Malformed(in_->position(),
                         absl::StrCat("wire type ", type));
    }
  }

  FileReader* in_;
  WeightsInFile* weights_;
  int tensor_ = 0;  // index of the next initializer of the main graph
};

}  // namespace

absl::StatusOr<ModelLeavingWeightsInFile> ReadModelLeavingWeightsInFile(
    int fd, int64_t size) {
  ModelLeavingWeightsInFile out;
  out.weights = WeightsInFile(fd);
  FileReader in(fd, size);
  std::string bytes;
  RETURN_IF_ERROR(Walk(&in, &out.weights).Message(Level::kModel, size, &bytes));
  out.model = std::make_unique<onnx::ModelProto>();
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !out.model->ParseFromString(bytes)) {
    return Malformed(0, "a message protobuf does not parse");
  }
  return out;
}

}  // namespace sluice
