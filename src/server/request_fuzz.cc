// libFuzzer target for the API's request parsing (clang, -DTIDAL_FUZZ=ON):
//   build-fuzz/src/server/request_fuzz -max_total_time=60 src/server/fuzz_corpus
#include <cstddef>
#include <cstdint>

#include "server/request_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tidal::server::FuzzRequest(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
