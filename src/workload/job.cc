#include "workload/job.h"

namespace tidal {

const char* QosName(Qos q) {
  switch (q) {
    case Qos::kUnspecified: return "";
    case Qos::kLatencySensitive: return "LS";
    case Qos::kBestEffort: return "BE";
    case Qos::kBurstable: return "Burstable";
    case Qos::kGuaranteed: return "Guaranteed";
  }
  return "";
}

}  // namespace tidal
