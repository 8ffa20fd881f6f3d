// libFuzzer entry point: any text through parse_exported_program. luminal::Error is the
// parser's contract for bad input; any other exception, crash or sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "pt2/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    luminal::pt2::parse_exported_program(std::string(reinterpret_cast<const char*>(data), size),
                                         "models/model.json");
  } catch (const luminal::Error&) {
  }
  return 0;
}
