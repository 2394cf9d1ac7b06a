//===- BFloat16.h - bfloat16 <-> binary32 ------------------------*- C++ -*-===//
//
// bfloat16 is the upper 16 bits of an IEEE binary32: the same exponent
// range, 8 bits of significand. Narrowing rounds to nearest, ties to even;
// NaNs stay NaNs (quiet).
//
//===----------------------------------------------------------------------===//
#ifndef FRONTENDS_MODEL_BFLOAT16_H
#define FRONTENDS_MODEL_BFLOAT16_H

#include <cstdint>
#include <cstring>

namespace tfmc {

inline float bfloat16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

inline uint16_t floatToBFloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: keep it one, quiet
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

} // namespace tfmc

#endif // FRONTENDS_MODEL_BFLOAT16_H
