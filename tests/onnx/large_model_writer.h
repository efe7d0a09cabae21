// A generated ONNX model for the load-memory tests (issue 29): a chain of
// kLayers MatMul [kDim, kDim] + Relu on x [1, kDim], 256 MiB of float32
// weights in all, as external data (w.bin, 4 KiB-aligned ranges) or inline
// raw_data, written piece by piece so that the test never holds all the
// weights itself. For x of ones, y is 24 everywhere.
//
//   const std::string path = LargeModelWriter(dir).Write(/*external=*/true);
//
// Stateless apart from the folder; thread-compatible.
#ifndef SLUICE_TESTS_ONNX_LARGE_MODEL_WRITER_H_
#define SLUICE_TESTS_ONNX_LARGE_MODEL_WRITER_H_

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "testing/sanitizers.h"

namespace sluice::onnx_test {

inline constexpr int64_t kDim = 4096;  // each weight [kDim, kDim]
inline constexpr int kLayers = 4;      // 4 x 64 MiB
inline constexpr int64_t kWeightBytes = kDim * kDim * 4;
inline constexpr int64_t kTotalWeightBytes = kWeightBytes * kLayers;
inline constexpr int64_t kWeightAlign = 4096;

// Layer l's weight: every element (l + 1) / kDim, so that y = x * 1 * 2 * 3
// * 4 exactly for x of ones (sums of powers of two), and no two layers are
// equal (common_subexpressions would merge them).
inline std::vector<float> LayerWeight(int layer) {
  return std::vector<float>(kDim * kDim,
                            static_cast<float>(layer + 1) / kDim);
}

inline void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Writes `model` followed by the initializers' raw_data, one layer at a
// time, so that the test itself never holds all the weights: the graph is
// ModelProto field 7, its initializers GraphProto field 5, raw_data
// TensorProto field 9, each length-delimited (protobuf's wire format lets
// fields come in any order).
class LargeModelWriter {
 public:
  explicit LargeModelWriter(std::string dir) : dir_(std::move(dir)) {}

  // MatMul chain x[1,kDim] -> Relu(MatMul) ... -> y; weights external (in
  // w.bin, aligned) or inline. Returns the .onnx path.
  std::string Write(bool external) {
    onnx::ModelProto model;
    model.set_ir_version(8);
    onnx::OperatorSetIdProto* id = model.add_opset_import();
    id->set_domain("");
    id->set_version(17);
    onnx::GraphProto* g = model.mutable_graph();
    g->set_name("load_memory");
    onnx::ValueInfoProto* in = g->add_input();
    in->set_name("x");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(1);
    tt->mutable_shape()->add_dim()->set_dim_value(kDim);
    std::string x = "x";
    for (int l = 0; l < kLayers; ++l) {
      onnx::NodeProto* mm = g->add_node();
      mm->set_op_type("MatMul");
      mm->set_name(absl::StrCat("mm", l));
      mm->add_input(x);
      mm->add_input(absl::StrCat("w", l));
      mm->add_output(absl::StrCat("h", l));
      onnx::NodeProto* relu = g->add_node();
      relu->set_op_type("Relu");
      relu->set_name(absl::StrCat("relu", l));
      relu->add_input(absl::StrCat("h", l));
      x = l + 1 == kLayers ? "y" : absl::StrCat("r", l);
      relu->add_output(x);
    }
    g->add_output()->set_name("y");

    std::FILE* weights = nullptr;
    if (external) {
      weights = std::fopen((dir_ + "/w.bin").c_str(), "wb");
      EXPECT_NE(weights, nullptr);
    }
    // Each initializer: its header (name, dims, type, external entries)
    // and, inline, the raw_data field written after it.
    std::vector<std::string> headers;
    int64_t offset = 0;
    for (int l = 0; l < kLayers; ++l) {
      onnx::TensorProto t;
      t.set_name(absl::StrCat("w", l));
      t.set_data_type(onnx::TensorProto::FLOAT);
      t.add_dims(kDim);
      t.add_dims(kDim);
      if (external) {
        const std::vector<float> w = LayerWeight(l);
        offset = (offset + kWeightAlign - 1) / kWeightAlign * kWeightAlign;
        std::fseek(weights, offset, SEEK_SET);
        std::fwrite(w.data(), 1, kWeightBytes, weights);
        t.set_data_location(onnx::TensorProto::EXTERNAL);
        for (auto [key, value] :
             {std::pair<std::string, std::string>{"location", "w.bin"},
              {"offset", absl::StrCat(offset)},
              {"length", absl::StrCat(kWeightBytes)}}) {
          onnx::StringStringEntryProto* e = t.add_external_data();
          e->set_key(key);
          e->set_value(value);
        }
        offset += kWeightBytes;
      }
      headers.push_back(t.SerializeAsString());
    }
    if (weights != nullptr) std::fclose(weights);

    std::string raw_tag;  // raw_data: field 9, length-delimited
    raw_tag.push_back(static_cast<char>((9 << 3) | 2));
    std::string raw_len;
    AppendVarint(kWeightBytes, &raw_len);
    const int64_t raw_field =
        external ? 0
                 : static_cast<int64_t>(raw_tag.size() + raw_len.size()) +
                       kWeightBytes;
    std::string graph_tail;  // the initializer fields, without raw_data
    std::vector<std::string> prefixes;
    int64_t graph_bytes = static_cast<int64_t>(g->SerializeAsString().size());
    for (const std::string& h : headers) {
      std::string p;
      p.push_back(static_cast<char>((5 << 3) | 2));
      AppendVarint(h.size() + raw_field, &p);
      p += h;
      graph_bytes += static_cast<int64_t>(p.size()) + raw_field;
      prefixes.push_back(std::move(p));
    }
    onnx::ModelProto shell = model;
    shell.clear_graph();
    std::string out = shell.SerializeAsString();
    out.push_back(static_cast<char>((7 << 3) | 2));
    AppendVarint(graph_bytes, &out);
    out += g->SerializeAsString();

    const std::string path =
        dir_ + (external ? "/external.onnx" : "/inline.onnx");
    std::FILE* f = std::fopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    std::fwrite(out.data(), 1, out.size(), f);
    for (int l = 0; l < kLayers; ++l) {
      std::fwrite(prefixes[l].data(), 1, prefixes[l].size(), f);
      if (external) continue;
      std::fwrite(raw_tag.data(), 1, raw_tag.size(), f);
      std::fwrite(raw_len.data(), 1, raw_len.size(), f);
      const std::vector<float> w = LayerWeight(l);
      std::fwrite(w.data(), 1, kWeightBytes, f);
    }
    std::fclose(f);
    return path;
  }

 private:
  std::string dir_;
};

// A test of the peak RSS over the generated model, inline (false) or with
// external data (true), in a scratch folder of its own; skipped under
// ThreadSanitizer, whose shadow memory is most of the RSS.
class LargeModelTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/sluice_large_model_",
                        getpid());
    std::filesystem::create_directories(dir_);
    if (testing::kThreadSanitizer) GTEST_SKIP() << testing::kTsanRssReason;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
};

}  // namespace sluice::onnx_test

#endif  // SLUICE_TESTS_ONNX_LARGE_MODEL_WRITER_H_
