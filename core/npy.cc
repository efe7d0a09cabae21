// NumPy .npy reading and writing (see npy.h). The header is a Python dict
// literal such as {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// parsed here by a small recursive-descent reader that accepts only what
// NumPy writes.
#include "core/npy.h"

#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/dtype.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// NumPy itself refuses headers above 10,000 bytes by default; allow more,
// but never a header length taken blindly from the file.
constexpr uint64_t kMaxHeaderBytes = 1 << 20;

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Where the header and the data start, from the first bytes of a file.
struct Preamble {
  int major = 0;
  size_t header_offset = 0;
  size_t header_length = 0;
};

absl::Status Bad(absl::string_view name, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("bad .npy file '", name, "': ", why));
}

uint32_t ReadLittleEndian(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// `bytes` holds at least the first min(12, file_size) bytes of the file.
absl::StatusOr<Preamble> ParsePreamble(absl::string_view bytes,
                                       uint64_t file_size,
                                       absl::string_view name) {
  if (bytes.size() < kMagicSize + 2 ||
      std::memcmp(bytes.data(), kMagic, kMagicSize) != 0) {
    return Bad(name, "no \\x93NUMPY magic string (not a .npy file)");
  }
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  Preamble p;
  p.major = u[6];
  int length_bytes = 0;
  if (p.major == 1) {
    length_bytes = 2;
  } else if (p.major == 2 || p.major == 3) {
    length_bytes = 4;
  } else {
    return Bad(name, absl::StrCat("format version ", p.major, ".", int{u[7]},
                                  " is not supported (1.0, 2.0, 3.0 are)"));
  }
  p.header_offset = kMagicSize + 2 + length_bytes;
  if (bytes.size() < p.header_offset) {
    return Bad(name, "truncated before the header length");
  }
  p.header_length = ReadLittleEndian(u + kMagicSize + 2, length_bytes);
  if (p.header_length > kMaxHeaderBytes) {
    return Bad(name, absl::StrCat("header length ", p.header_length,
                                  " is implausibly large"));
  }
  if (p.header_offset + p.header_length > file_size) {
    return Bad(name, absl::StrCat("truncated: the header claims ",
                                  p.header_length, " bytes, the file has ",
                                  file_size - p.header_offset, " after ",
                                  "the preamble"));
  }
  return p;
}

// Reads the header dict. Accepts exactly the three keys NumPy writes.
class HeaderParser {
 public:
  HeaderParser(absl::string_view text, absl::string_view name)
      : text_(text), name_(name) {}

  absl::StatusOr<NpyHeader> Parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    RETURN_IF_ERROR(Expect('{'));
    while (true) {
      SkipSpace();
      if (Consume('}')) break;
      ASSIGN_OR_RETURN(std::string key, String());
      RETURN_IF_ERROR(Expect(':'));
      SkipSpace();
      if (key == "descr") {
        if (Peek() == '[') {
          return Error("structured (record) dtypes are not supported");
        }
        ASSIGN_OR_RETURN(h.descr, String());
        have_descr = true;
      } else if (key == "fortran_order") {
        ASSIGN_OR_RETURN(h.fortran_order, Bool());
        have_order = true;
      } else if (key == "shape") {
        ASSIGN_OR_RETURN(h.shape, Tuple());
        have_shape = true;
      } else {
        return Error(absl::StrCat("unexpected header key '", key, "'"));
      }
      SkipSpace();
      if (Consume('}')) break;
      RETURN_IF_ERROR(Expect(','));
    }
    SkipSpace();
    if (pos_ != text_.size()) return Error("text after the header dict");
    if (!have_descr || !have_order || !have_shape) {
      return Error("the header needs 'descr', 'fortran_order' and 'shape'");
    }
    return h;
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void SkipSpace() {
    while (pos_ < text_.size() &&
           absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
  }
  bool Consume(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  absl::Status Error(absl::string_view why) const {
    return Bad(name_, absl::StrCat("header: ", why));
  }
  absl::Status Expect(char c) {
    SkipSpace();
    if (!Consume(c)) {
      return Error(absl::StrCat("expected '", std::string(1, c),
                                "' at offset ", pos_));
    }
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> String() {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') {
      return Error(absl::StrCat("expected a string at offset ", pos_));
    }
    ++pos_;
    const size_t end = text_.find(quote, pos_);
    if (end == absl::string_view::npos) return Error("unterminated string");
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  absl::StatusOr<bool> Bool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    return Error("'fortran_order' must be True or False");
  }
  absl::StatusOr<int64_t> Dim() {
    SkipSpace();
    if (!absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
      return Error(absl::StrCat("expected a non-negative dimension at offset ",
                                pos_));
    }
    int64_t v = 0;
    while (absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
      v = v * 10 + (text_[pos_++] - '0');
      if (v > kMaxElements) {
        return Error("a dimension is larger than 2^48");
      }
    }
    Consume('L');  // Python 2 longs
    return v;
  }
  absl::StatusOr<std::vector<int64_t>> Tuple() {
    RETURN_IF_ERROR(Expect('('));
    std::vector<int64_t> dims;
    SkipSpace();
    if (Consume(')')) return dims;
    while (true) {
      if (dims.size() >= static_cast<size_t>(kMaxRank)) {
        return Error(absl::StrCat("more than ", kMaxRank, " dimensions"));
      }
      ASSIGN_OR_RETURN(int64_t d, Dim());
      dims.push_back(d);
      SkipSpace();
      if (Consume(')')) return dims;
      RETURN_IF_ERROR(Expect(','));
      SkipSpace();
      if (Consume(')')) return dims;
    }
  }

  absl::string_view text_;
  absl::string_view name_;
  size_t pos_ = 0;
};

absl::StatusOr<DataType> DtypeFromDescr(absl::string_view descr,
                                        absl::string_view name) {
  auto unsupported = [&](absl::string_view why) {
    return Bad(name,
               absl::StrCat("dtype '", descr, "': ", why,
                            " (supported: <f4 <f2 <f8 |i1 <i2 <i4 <i8 |u1 "
                            "<u2 <u4 <u8 |b1)"));
  };
  if (descr.size() < 2) return unsupported("not understood");
  const char order = descr[0];
  const absl::string_view code = descr.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    return unsupported("not understood");
  }
  struct Entry {
    const char* code;
    DataType dtype;
  };
  static constexpr Entry kTypes[] = {
      {"f4", DT_FLOAT}, {"f2", DT_FLOAT16}, {"f8", DT_DOUBLE},
      {"i1", DT_INT8},  {"i2", DT_INT16},   {"i4", DT_INT32},
      {"i8", DT_INT64}, {"u1", DT_UINT8},   {"u2", DT_UINT16},
      {"u4", DT_UINT32}, {"u8", DT_UINT64}, {"b1", DT_BOOL}};
  for (const Entry& e : kTypes) {
    if (code != e.code) continue;
    const bool single_byte = DataTypeSize(e.dtype) == 1;
    if (!single_byte && order == '>') {
      return unsupported("big-endian data is not supported; save it "
                         "little-endian (arr.astype(arr.dtype.newbyteorder("
                         "'<')))");
    }
    if (!single_byte && order == '|') return unsupported("not understood");
    return e.dtype;
  }
  switch (code[0]) {
    case 'O':
      return unsupported("object arrays are not supported");
    case 'V':
      return unsupported("raw void data is not supported (for ml_dtypes "
                         "bfloat16, save as float32)");
    case 'U':
    case 'S':
    case 'a':
      return unsupported("string arrays are not supported");
    case 'c':
      return unsupported("complex numbers are not supported");
    default:
      return unsupported("unsupported dtype");
  }
}

// Everything a read needs, checked against the file size.
struct NpyLayout {
  DataType dtype = DT_INVALID;
  Shape shape;
  size_t data_offset = 0;
  size_t data_bytes = 0;
};

absl::StatusOr<NpyLayout> CheckLayout(const Preamble& p,
                                      absl::string_view header_text,
                                      uint64_t file_size,
                                      absl::string_view name) {
  ASSIGN_OR_RETURN(NpyHeader h, HeaderParser(header_text, name).Parse());
  NpyLayout layout;
  ASSIGN_OR_RETURN(layout.dtype, DtypeFromDescr(h.descr, name));
  layout.shape = Shape(absl::MakeConstSpan(h.shape));
  int64_t elements = 0;
  {
    absl::StatusOr<int64_t> n = layout.shape.NumElements();
    if (!n.ok()) return Bad(name, n.status().message());
    elements = *n;
  }
  if (h.fortran_order) {
    // With at most one dimension above 1, Fortran and C order are the same
    // bytes.
    int non_unit = 0;
    for (int64_t d : h.shape) non_unit += d != 1 ? 1 : 0;
    if (non_unit > 1) {
      return Bad(name,
                 "Fortran-order arrays are not supported; save with "
                 "np.ascontiguousarray(arr)");
    }
  }
  layout.data_offset = p.header_offset + p.header_length;
  layout.data_bytes =
      static_cast<size_t>(elements) * DataTypeSize(layout.dtype);
  const uint64_t available = file_size - layout.data_offset;
  if (available != layout.data_bytes) {
    return Bad(name,
               absl::StrCat(available < layout.data_bytes ? "truncated: " : "",
                            "shape ", layout.shape.DebugString(), " of ",
                            h.descr, " needs ", layout.data_bytes,
                            " data bytes, the file has ", available));
  }
  return layout;
}

// Allocates the tensor (sizes already checked) and copies the data in.
absl::StatusOr<Tensor> MakeTensor(const NpyLayout& layout,
                                  const char* data) {
  ASSIGN_OR_RETURN(Tensor t, Tensor::Create(layout.dtype, layout.shape));
  if (layout.data_bytes == 0) return t;
  if (layout.dtype == DT_BOOL) {
    // Any nonzero byte is true; keep the buffer to valid bools.
    auto* out = static_cast<unsigned char*>(t.raw_data());
    for (size_t i = 0; i < layout.data_bytes; ++i) {
      out[i] = data[i] != 0 ? 1 : 0;
    }
  } else {
    std::memcpy(t.raw_data(), data, layout.data_bytes);
  }
  return t;
}

std::string ShapeTuple(const Shape& shape) {
  if (shape.rank() == 1) return absl::StrCat("(", shape.dim(0), ",)");
  return absl::StrCat("(", absl::StrJoin(shape.dims(), ", "), ")");
}

const char* DescrFor(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT: return "<f4";
    case DT_BFLOAT16: return "<f4";  // written as float32
    case DT_FLOAT16: return "<f2";
    case DT_DOUBLE: return "<f8";
    case DT_INT8: return "|i1";
    case DT_INT16: return "<i2";
    case DT_INT32: return "<i4";
    case DT_INT64: return "<i8";
    case DT_UINT8: return "|u1";
    case DT_UINT16: return "<u2";
    case DT_UINT32: return "<u4";
    case DT_UINT64: return "<u8";
    case DT_BOOL: return "|b1";
    default:
      // float8 / float4 as float32, int4 / int2 as int8, uint4 / uint2 as
      // uint8 (NpyWrittenType).
      if (NpyWrittenType(dtype) != dtype) {
        return DescrFor(NpyWrittenType(dtype));
      }
      return nullptr;
  }
}

}  // namespace

DataType NpyWrittenType(DataType dtype) {
  if (dtype == DT_BFLOAT16 || IsSmallFloat(dtype)) return DT_FLOAT;
  if (dtype == DT_INT4 || dtype == DT_INT2) return DT_INT8;
  if (dtype == DT_UINT4 || dtype == DT_UINT2) return DT_UINT8;
  return dtype;
}

absl::StatusOr<Tensor> ParseNpy(absl::string_view bytes,
                                absl::string_view name) {
  ASSIGN_OR_RETURN(Preamble p, ParsePreamble(bytes, bytes.size(), name));
  ASSIGN_OR_RETURN(
      NpyLayout layout,
      CheckLayout(p, bytes.substr(p.header_offset, p.header_length),
                  bytes.size(), name));
  return MakeTensor(layout, bytes.data() + layout.data_offset);
}

absl::StatusOr<Tensor> ReadNpy(const std::string& path) {
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) {
    return absl::NotFoundError(absl::StrCat("cannot open .npy file '", path,
                                            "'",
                                            ec ? ": " + ec.message() : ""));
  }
  // The preamble, then the header it announces, then (sizes checked) data.
  std::string head(std::min<uint64_t>(file_size, 12), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  ASSIGN_OR_RETURN(Preamble p, ParsePreamble(head, file_size, path));
  std::string header(p.header_length, '\0');
  in.seekg(static_cast<std::streamoff>(p.header_offset));
  in.read(header.data(), static_cast<std::streamsize>(header.size()));
  if (!in) return Bad(path, "error reading the header");
  ASSIGN_OR_RETURN(NpyLayout layout, CheckLayout(p, header, file_size, path));
  ASSIGN_OR_RETURN(Tensor t, Tensor::Create(layout.dtype, layout.shape));
  if (layout.data_bytes > 0) {
    in.seekg(static_cast<std::streamoff>(layout.data_offset));
    in.read(static_cast<char*>(t.raw_data()),
            static_cast<std::streamsize>(layout.data_bytes));
    if (!in) return Bad(path, "error reading the data");
    if (layout.dtype == DT_BOOL) {
      auto* b = static_cast<unsigned char*>(t.raw_data());
      for (size_t i = 0; i < layout.data_bytes; ++i) b[i] = b[i] != 0;
    }
  }
  return t;
}

namespace {

// Passes the .npy bytes of `t` to `sink` in pieces (the header, then the
// data in chunks of at most a few MiB), so that a file is written without a
// second copy of the tensor. `sink` returns false to stop.
absl::Status CheckWritable(const Tensor& t) {
  if (!t.valid()) return absl::InvalidArgumentError("cannot write an invalid tensor");
  if (!t.on_host()) {
    return absl::InvalidArgumentError(
        "cannot write a tensor that is not in host memory");
  }
  if (DescrFor(t.dtype()) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("no .npy dtype for ", DataTypeName(t.dtype())));
  }
  return absl::OkStatus();
}

absl::Status EmitNpy(const Tensor& t,
                     const std::function<bool(const char*, size_t)>& sink) {
  RETURN_IF_ERROR(CheckWritable(t));
  const char* descr = DescrFor(t.dtype());
  std::string dict = absl::StrCat("{'descr': '", descr,
                                  "', 'fortran_order': False, 'shape': ",
                                  ShapeTuple(t.shape()), ", }");
  // Pad with spaces so the data starts on a 64-byte boundary; end in '\n'.
  size_t prefix = kMagicSize + 2 + 2;
  int major = 1;
  if (dict.size() + 1 + 64 > 65535) {
    prefix = kMagicSize + 2 + 4;
    major = 2;
  }
  const size_t unpadded = prefix + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  const uint32_t header_length = static_cast<uint32_t>(dict.size());

  std::string header;
  header.append(kMagic, kMagicSize);
  header.push_back(static_cast<char>(major));
  header.push_back('\0');
  for (size_t i = 0; i < prefix - kMagicSize - 2; ++i) {
    header.push_back(static_cast<char>((header_length >> (8 * i)) & 0xff));
  }
  header += dict;
  const absl::Status stopped = absl::DataLossError("the .npy writer stopped");
  if (!sink(header.data(), header.size())) return stopped;

  const size_t elements = static_cast<size_t>(t.NumElements());
  if (NpyWrittenType(t.dtype()) == DT_FLOAT && t.dtype() != DT_FLOAT) {
    // bfloat16, float8, float4: widened exactly to float32, a chunk at a time.
    constexpr size_t kChunk = size_t{1} << 20;
    std::vector<float> wide(std::min(elements, kChunk));
    bool ok = true;
    SLUICE_SWITCH_DTYPE(t.dtype(), {
      const T* in = t.data<T>();
      for (size_t i = 0; ok && i < elements; i += kChunk) {
        const size_t n = std::min(kChunk, elements - i);
        for (size_t j = 0; j < n; ++j) wide[j] = static_cast<float>(in[i + j]);
        ok = sink(reinterpret_cast<const char*>(wide.data()), n * sizeof(float));
      }
    }, {});
    if (!ok) return stopped;
  } else {
    // int4 / int2 / uint4 / uint2 are already one (sign-extended) byte each.
    const size_t data_bytes = elements * DataTypeSize(NpyWrittenType(t.dtype()));
    constexpr size_t kChunkBytes = size_t{4} << 20;
    const char* data = static_cast<const char*>(t.raw_data());
    for (size_t i = 0; i < data_bytes; i += kChunkBytes) {
      if (!sink(data + i, std::min(kChunkBytes, data_bytes - i))) return stopped;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> SerializeNpy(const Tensor& t) {
  std::string out;
  RETURN_IF_ERROR(EmitNpy(t, [&out](const char* p, size_t n) {
    out.append(p, n);
    return true;
  }));
  return out;
}

absl::Status WriteNpy(const Tensor& t, const std::string& path) {
  // Checked before the file is opened, so a tensor that cannot be written
  // leaves no file behind.
  RETURN_IF_ERROR(CheckWritable(t));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot open '", path, "' for writing"));
  }
  // Streamed from the tensor's memory: no second copy of the data.
  absl::Status s = EmitNpy(t, [&out](const char* p, size_t n) {
    out.write(p, static_cast<std::streamsize>(n));
    return static_cast<bool>(out);
  });
  out.close();
  if (!s.ok() || !out) {
    std::error_code ec;  // only a file this call made: never /dev/full & co
    if (std::filesystem::is_regular_file(path, ec)) std::filesystem::remove(path, ec);
    return absl::DataLossError(absl::StrCat(
        "error writing '", path, "' (disk full?); the partial file was removed"));
  }
  return absl::OkStatus();
}

}  // namespace sluice
