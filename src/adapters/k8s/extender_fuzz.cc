// libFuzzer target for the Kubernetes wire readers (clang, -DTIDAL_FUZZ=ON):
//   build-fuzz/src/adapters/k8s/extender_fuzz -max_total_time=60 ../shared/fixtures/k8s-extender
#include <cstddef>
#include <cstdint>

#include "adapters/k8s/extender_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tidal::k8s::FuzzExtender(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
