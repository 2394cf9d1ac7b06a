//===- TfmDialect.h - the tfm dialect ---------------------------*- C++ -*-===//
#ifndef DIALECTS_TFM_IR_TFMDIALECT_H
#define DIALECTS_TFM_IR_TFMDIALECT_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Dialect.h"

#include "dialects/tfm/IR/TfmDialect.h.inc"
#include "dialects/tfm/IR/TfmEnums.h.inc"

#endif // DIALECTS_TFM_IR_TFMDIALECT_H
