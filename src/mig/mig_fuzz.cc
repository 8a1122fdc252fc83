// libFuzzer target for the MIG readers: nvidia-smi mig -lgi/-lgip/-lgipp and
// mig-parted configs (clang, -DTIDAL_FUZZ=ON):
//   build/src/mig/mig_fuzz src/mig/fuzz_corpus -max_total_time=60
#include <cstddef>
#include <cstdint>

#include "mig/mig_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tidal::mig::FuzzMigReaders(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
