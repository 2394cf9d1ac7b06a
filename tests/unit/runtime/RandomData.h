//===- RandomData.h - random inputs for the kernel tests --------*- C++ -*-===//
#ifndef TESTS_UNIT_RUNTIME_RANDOMDATA_H
#define TESTS_UNIT_RUNTIME_RANDOMDATA_H

#include <cstdint>
#include <random>
#include <vector>

namespace tfmc::testing {

/// `count` draws of a standard normal.
inline std::vector<float> normal(int64_t count, std::mt19937 &rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(count);
  for (float &x : v)
    x = dist(rng);
  return v;
}

} // namespace tfmc::testing

#endif // TESTS_UNIT_RUNTIME_RANDOMDATA_H
