// tidal's own declarations of the few NVML calls it makes, matching the ABI
// of nvml.h (NVML 13.3.29, ../shared/fixtures/nvml/nvml-h-reference.md):
// enums are C ints, handles are opaque pointers, the structs below have
// nvml.h's layout. tidal loads libnvidia-ml.so.1 at run time (dlopen), so it
// builds and runs on machines without the NVIDIA driver.
//
// Portions of the layout follow nvml.h, whose notice reads in part:
// "Copyright 1993-2026 NVIDIA Corporation. All rights reserved. ... Users
// and possessors of this source code are hereby granted a nonexclusive,
// royalty-free license to use this code in individual and commercial
// software. NVIDIA MAKES NO REPRESENTATION ABOUT THE SUITABILITY OF THIS
// SOURCE CODE FOR ANY PURPOSE. IT IS PROVIDED "AS IS" WITHOUT EXPRESS OR
// IMPLIED WARRANTY OF ANY KIND. ... U.S. Government End Users. This source
// code is a "commercial item" as that term is defined at 48 C.F.R. 2.101
// (OCT 1995) ... and is provided to the U.S. Government only as a
// commercial end item." (the whole notice is in the fixture above).
#pragma once

namespace tidal::nvml::abi {

using Return = int;  // nvmlReturn_t
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorUninitialized = 1;
inline constexpr Return kErrorInvalidArgument = 2;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorNoPermission = 4;
inline constexpr Return kErrorNotFound = 6;
inline constexpr Return kErrorInsufficientSize = 7;
inline constexpr Return kErrorDriverNotLoaded = 9;
inline constexpr Return kErrorFunctionNotFound = 13;
inline constexpr Return kErrorGpuIsLost = 15;
inline constexpr Return kErrorUnknown = 999;

using Device = struct nvmlDevice_st*;  // nvmlDevice_t

struct Memory {  // nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct Utilization {  // nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};

struct PciInfo {  // nvmlPciInfo_t
  char busIdLegacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
};

// nvmlGpuTopologyLevel_t
inline constexpr int kTopologyInternal = 0;
inline constexpr int kTopologySingle = 10;
inline constexpr int kTopologyMultiple = 20;
inline constexpr int kTopologyHostbridge = 30;
inline constexpr int kTopologyNode = 40;
inline constexpr int kTopologySystem = 50;

inline constexpr int kFeatureEnabled = 1;      // nvmlEnableState_t NVML_FEATURE_ENABLED
inline constexpr unsigned kNvlinkMaxLinks = 36;  // NVML_NVLINK_MAX_LINKS (18 in NVML < 12)
inline constexpr unsigned kUuidBufferSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
inline constexpr unsigned kNameBufferSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
inline constexpr unsigned kDriverVersionBufferSize = 80;

extern "C" {
using InitFn = Return (*)();                                                  // nvmlInit_v2
using ShutdownFn = Return (*)();                                              // nvmlShutdown
using ErrorStringFn = const char* (*)(Return);                                // nvmlErrorString
using GetDriverVersionFn = Return (*)(char*, unsigned int);                   // nvmlSystemGetDriverVersion
using GetCountFn = Return (*)(unsigned int*);                                 // nvmlDeviceGetCount_v2
using GetHandleByIndexFn = Return (*)(unsigned int, Device*);                 // nvmlDeviceGetHandleByIndex_v2
using GetStringFn = Return (*)(Device, char*, unsigned int);                  // nvmlDeviceGetName, nvmlDeviceGetUUID
using GetPciInfoFn = Return (*)(Device, PciInfo*);                            // nvmlDeviceGetPciInfo_v3
using GetMemoryInfoFn = Return (*)(Device, Memory*);                          // nvmlDeviceGetMemoryInfo
using GetUtilizationFn = Return (*)(Device, Utilization*);                    // nvmlDeviceGetUtilizationRates
using GetMigModeFn = Return (*)(Device, unsigned int*, unsigned int*);        // nvmlDeviceGetMigMode
using GetUintFn = Return (*)(Device, unsigned int*);                          // nvmlDeviceGetMaxMigDeviceCount, nvmlDeviceGetNumaNodeId
using GetMigHandleFn = Return (*)(Device, unsigned int, Device*);             // nvmlDeviceGetMigDeviceHandleByIndex
using GetNvLinkStateFn = Return (*)(Device, unsigned int, int*);              // nvmlDeviceGetNvLinkState
using GetNvLinkRemotePciFn = Return (*)(Device, unsigned int, PciInfo*);      // nvmlDeviceGetNvLinkRemotePciInfo_v2
using GetCommonAncestorFn = Return (*)(Device, Device, int*);                 // nvmlDeviceGetTopologyCommonAncestor
}

}  // namespace tidal::nvml::abi
