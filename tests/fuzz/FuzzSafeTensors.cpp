//===- FuzzSafeTensors.cpp - safetensors reader ---------------------------===//
#include "FuzzSupport.h"

#include "frontends/model/SafeTensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = tfmc::fuzz::writeInput(data, size, ".safetensors");
  auto file = tfmc::frontend::SafeTensorsFile::open(path);
  if (!file) {
    tfmc::fuzz::consume(file.takeError());
    return 0;
  }
  // Touch every element of every tensor (catches spans past the end).
  volatile float sum = 0;
  for (const tfmc::frontend::TensorView &t : (*file)->tensors())
    for (int64_t i = 0; i < t.numElements(); ++i)
      sum = sum + t.data[i];
  return 0;
}
