// libFuzzer entry point: any bytes through read_pt2_bytes. luminal::Error is the reader's
// contract for bad input; any other exception, crash or sanitizer report is a finding.
#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "pt2/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    luminal::pt2::read_pt2_bytes(data, size);
  } catch (const luminal::Error&) {
  }
  return 0;
}
