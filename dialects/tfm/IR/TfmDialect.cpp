//===- TfmDialect.cpp - the tfm dialect -----------------------------------===//
#include "dialects/tfm/IR/TfmDialect.h"
#include "dialects/tfm/IR/TfmOps.h"

using namespace mlir;
using namespace mlir::tfm;

#include "dialects/tfm/IR/TfmDialect.cpp.inc"
#include "dialects/tfm/IR/TfmEnums.cpp.inc"

void TfmDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/tfm/IR/TfmOps.cpp.inc"
      >();
}
