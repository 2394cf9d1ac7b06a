//===- SearchKernels.cpp - search scans called from compiled code --------===//
//
// The loop kernels of tfm.linear_topk compute a row's logits with the
// linear loop kernel and hand them to this scan (TopKScan.h), so that beam
// search's candidates and log-probabilities are the bits a search over the
// whole row computes, on every kernel path and in every build.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/TopKScan.h"

using namespace tfmc::runtime;

/// Row `row`'s candidates from its logits ([1, 1, vocab]) into
/// values[row, :] and ids[row, :].
extern "C" void _mlir_ciface_tfm_rt_topk_scan(
    MemRefDescriptor<3> *logits, MemRefDescriptor<1, int32_t> *never,
    int64_t eos, MemRefDescriptor<1, int32_t> *allow, int64_t row,
    MemRefDescriptor<2> *values, MemRefDescriptor<2, int32_t> *ids) {
  ScanExclusions excluded;
  excluded.never = never->aligned + never->offset;
  excluded.neverCount = never->sizes[0];
  excluded.eos = eos;
  excluded.allowEos =
      allow->aligned[allow->offset + row * allow->strides[0]] != 0;
  thread_local TopKScan scan;
  int64_t count = values->sizes[1];
  scan.reset(count);
  // The compiled caller passes a contiguous row of logits.
  scan.add(logits->aligned + logits->offset, 0, logits->sizes[2], excluded);
  scan.write(values->aligned + values->offset + row * values->strides[0],
             ids->aligned + ids->offset + row * ids->strides[0], count);
}

std::vector<std::pair<std::string, void *>>
tfmc::runtime::searchKernelSymbols() {
  return {{"_mlir_ciface_tfm_rt_topk_scan",
           reinterpret_cast<void *>(&_mlir_ciface_tfm_rt_topk_scan)}};
}
