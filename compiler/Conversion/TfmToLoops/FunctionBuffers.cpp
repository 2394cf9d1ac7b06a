//===- FunctionBuffers.cpp - the entry functions' own buffers -------------===//
#include "compiler/Conversion/TfmToLoops/FunctionBuffers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

namespace mlir::tfm::loops {

void freeBuffers(ModuleOp module) {
  module.walk([](memref::AllocOp alloc) {
    Block *block = alloc->getBlock();
    Operation *last = alloc;
    SmallVector<Value> views{alloc.getResult()};
    while (!views.empty()) {
      Value v = views.pop_back_val();
      for (Operation *user : v.getUsers()) {
        // Freed already: IR lowered before (stage 3 given to
        // tfm-lower-to-loops again) must not free it twice.
        if (isa<memref::DeallocOp>(user))
          return;
        if (auto cast = dyn_cast<memref::CastOp>(user))
          views.push_back(cast.getResult());
        Operation *inBlock = block->findAncestorOpInBlock(*user);
        if (inBlock && last->isBeforeInBlock(inBlock))
          last = inBlock;
      }
    }
    OpBuilder b(alloc->getContext());
    if (last->hasTrait<OpTrait::IsTerminator>())
      b.setInsertionPoint(last);
    else
      b.setInsertionPointAfter(last);
    b.create<memref::DeallocOp>(alloc.getLoc(), alloc.getResult());
  });
}

void forwardResults(ModuleOp module) {
  module.walk([](func::FuncOp func) {
    if (func.isExternal())
      return;
    Block &entry = func.getBody().front();
    SmallVector<memref::CopyOp> copies;
    for (Operation *op = entry.getTerminator()->getPrevNode(); op;
         op = op->getPrevNode()) {
      auto copy = dyn_cast<memref::CopyOp>(op);
      if (!copy)
        break;
      copies.push_back(copy);
    }
    for (memref::CopyOp copy : copies) {
      auto dest = dyn_cast<BlockArgument>(copy.getTarget());
      auto alloc = copy.getSource().getDefiningOp<memref::AllocOp>();
      if (!dest || dest.getOwner() != &entry || !alloc ||
          alloc->getBlock() != &entry || alloc.getType() != dest.getType())
        continue;
      bool before = true;
      SmallVector<Value> views{alloc.getResult()};
      while (!views.empty() && before) {
        Value v = views.pop_back_val();
        for (Operation *user : v.getUsers()) {
          if (user == copy.getOperation())
            continue;
          if (auto cast = dyn_cast<memref::CastOp>(user))
            views.push_back(cast.getResult());
          Operation *inBlock = entry.findAncestorOpInBlock(*user);
          if (!inBlock || !inBlock->isBeforeInBlock(copy)) {
            before = false;
            break;
          }
        }
      }
      if (!before)
        continue;
      copy.erase();
      alloc.getResult().replaceAllUsesWith(dest);
      alloc.erase();
    }
  });
}

} // namespace mlir::tfm::loops
