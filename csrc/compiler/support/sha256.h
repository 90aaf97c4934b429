// SHA-256 (FIPS 180-4), for content-addressed cache keys.
#pragma once

#include <string>

namespace sparsetir {

// Lowercase hex digest of `data`.
std::string Sha256Hex(const std::string& data);

}  // namespace sparsetir
