// libFuzzer target for the store URL parser (clang, -DTIDAL_FUZZ=ON):
//   build/src/store/store_url_fuzz -max_total_time=60
#include <cstddef>
#include <cstdint>

#include "store/store_url_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tidal::store::FuzzStoreUrl(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
