// The Weft model file (.weft): layout and the parser. See docs/model_file.md.
//
//   [0, 64)            header: magic "WEFTMDL\0", format version, sizes, offsets, XXH3-64
//                      checksum of every byte after the header
//   [meta_offset, +n)  metadata (JSON): values, nodes, attributes, op/plugin identities, and
//                      (offset, size) references into the data section
//   [data_offset, +n)  data: weights, PortableOp blobs, compiled kernels, embedded plugins,
//                      each 64-byte aligned (the file is mapped, so weights are used in place)
//
// The parser trusts nothing: every offset, index, count, type and shape is checked, so a
// corrupt or truncated file yields an error. It needs no registry and no op (fuzzable alone).
#ifndef WEFT_SRC_MODEL_MODEL_FORMAT_H_
#define WEFT_SRC_MODEL_MODEL_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/engine.h"

namespace weft::internal {

constexpr char kModelMagic[8] = {'W', 'E', 'F', 'T', 'M', 'D', 'L', '\0'};
constexpr uint32_t kModelFormatVersion = 1;
constexpr size_t kModelHeaderBytes = 64;
constexpr size_t kModelAlign = 64;

struct ModelHeader {
  char magic[8];
  uint32_t format_version;
  uint32_t header_bytes;
  uint64_t file_bytes;
  uint64_t meta_offset, meta_bytes;
  uint64_t data_offset, data_bytes;
  uint64_t checksum;  // XXH3-64 of bytes [header_bytes, file_bytes)
};
static_assert(sizeof(ModelHeader) == kModelHeaderBytes, "header is 64 bytes");

struct ModelLibraryRef {
  std::string name, package, hash;
  bool pinned = false;  // loading needs exactly this build (hash), not only op type and version
  uint32_t abi = 1;     // the plugin ABI level the library was built against
  const uint8_t* data = nullptr;  // embedded .so, or null
  uint64_t size = 0;
};
struct ModelOpRef {
  std::string op_type;
  uint32_t version = 1;
  int library = -1;  // index into libraries; -1 = built-in
};

struct ParsedModel {
  uint32_t format_version = 0;
  uint64_t file_bytes = 0;
  LoadedGraph graph;
  std::vector<ModelLibraryRef> libraries;
  std::vector<ModelOpRef> ops;
  size_t num_blobs = 0, num_kernels = 0;
  uint64_t weight_bytes = 0;
};

// Parses and validates a whole file held at `data` (64-byte aligned). Pointers in the result
// point into `data`.
Expected<ParsedModel> ParseModelFile(const uint8_t* data, size_t size, bool verify_checksum);

// Append-only builder of the data section.
class DataSection {
 public:
  // Appends `n` bytes at a 64-byte aligned offset; returns that offset.
  uint64_t Add(const void* p, size_t n);
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// Assembles header + metadata + data and checksums them.
std::vector<uint8_t> AssembleModelFile(const std::string& meta_json, const DataSection& data);

}  // namespace weft::internal

#endif  // WEFT_SRC_MODEL_MODEL_FORMAT_H_
