// Reading and writing NumPy .npy files (format versions 1.0-3.0, little-endian, C order).
#ifndef WEFT_SRC_CORE_NPY_H_
#define WEFT_SRC_CORE_NPY_H_

#include <string>

#include "weft/weft.h"

namespace weft::internal {

Expected<HostTensor> ReadNpy(const std::string& path);
Expected<HostTensor> ParseNpy(const std::string& bytes, const std::string& what);
Status WriteNpy(const std::string& path, const HostTensor& t);
std::string NpyDescr(DataType dt);
// DataType from a NumPy/Weft type name ("float32", "f4", "int64", ...), or DT_UNDEFINED.
DataType DataTypeFromName(const std::string& name);

}  // namespace weft::internal

#endif  // WEFT_SRC_CORE_NPY_H_
