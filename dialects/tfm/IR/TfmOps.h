//===- TfmOps.h - tfm operations --------------------------------*- C++ -*-===//
#ifndef DIALECTS_TFM_IR_TFMOPS_H
#define DIALECTS_TFM_IR_TFMOPS_H

#include "dialects/tfm/IR/TfmDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/tfm/IR/TfmOps.h.inc"

#endif // DIALECTS_TFM_IR_TFMOPS_H
