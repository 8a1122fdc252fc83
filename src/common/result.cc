#include "common/result.h"

namespace tidal {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kParse: return "parse error";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kUnschedulable: return "unschedulable";
    case ErrorCode::kUnresolvable: return "unresolvable";
    case ErrorCode::kDeferred: return "deferred";
    case ErrorCode::kFailedPrecondition: return "failed precondition";
    case ErrorCode::kIo: return "i/o error";
    case ErrorCode::kInternal: return "internal error";
  }
  return "error";
}

}  // namespace tidal
