// The canonical key of a LiteRT customCode (weft/litert.h). Apart from the importer because the
// registry uses it too (a package's framework/litert/op_map.json), without flatbuffers.
#include <cctype>
#include <string>

#include "weft/litert.h"

namespace weft {

std::string LiteRtCustomOpKey(const std::string& custom_code) {
  std::string s = custom_code;
  for (char& c : s)
    if (c == '-' || c == ' ') c = '_';
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  s = s.substr(b, e - b);
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace weft
