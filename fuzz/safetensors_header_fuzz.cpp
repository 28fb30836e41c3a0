// safetensors: the file as SafetensorsFile maps and validates it (what a checkpoint load
// does for each weight file). Then the promises it makes about what it accepted: every
// tensor's bytes match its shape and dtype, and the tensors fit in the data section.
#include <algorithm>
#include <limits>

#include "fuzz_support.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace glass;
  const std::string& path = fuzz::scratch_path(".safetensors");
  fuzz::write_scratch(path, data, size);
  fuzz::run_one([&] {
    const SafetensorsFile file(path);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | data[i];
    const uint64_t data_section = size - 8 - header_len;
    const std::byte* lo = nullptr;
    const std::byte* hi = nullptr;
    uint64_t total = 0;
    for (const auto& [name, t] : file.tensors()) {
      GLASS_FUZZ_CHECK(t.name == name, name);
      unsigned __int128 bytes = dtype_size(t.dtype);
      for (int64_t d : t.shape) {
        GLASS_FUZZ_CHECK(d >= 0, name, " ", t.shape_string());
        bytes *= static_cast<uint64_t>(d);  // the parser keeps each partial product within 64 bits
      }
      GLASS_FUZZ_CHECK(bytes == t.nbytes, name, ": ", t.nbytes, " bytes for ", t.shape_string());
      (void)t.numel();
      if (t.nbytes == 0) continue;
      GLASS_FUZZ_CHECK(t.data != nullptr, name);
      lo = lo == nullptr ? t.data : std::min(lo, t.data);
      hi = hi == nullptr ? t.data + t.nbytes : std::max(hi, t.data + t.nbytes);
      total += t.nbytes;
      // Touch the first and last byte (a span outside the mapping faults here).
      volatile std::byte first = t.data[0], last = t.data[t.nbytes - 1];
      (void)first;
      (void)last;
    }
    // Non-overlapping spans inside the data section: together no bigger than it, and all
    // of them within one data section's width of each other.
    GLASS_FUZZ_CHECK(total <= data_section, total, " tensor bytes in a ", data_section, "-byte data section");
    if (lo != nullptr)
      GLASS_FUZZ_CHECK(static_cast<uint64_t>(hi - lo) <= data_section, "tensors span ", hi - lo, " bytes");
    for (const auto& [key, value] : file.metadata()) (void)value.size();
  });
  return 0;
}
