//===- HalfCaches.cpp - attention keys and values kept in float16 ---------===//
#include "dialects/tfm/IR/TfmOps.h"
#include "dialects/tfm/Transforms/Passes.h"

#include "llvm/ADT/StringSet.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMHALFCACHES
#include "dialects/tfm/Transforms/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Whether every use of `arg` reads or writes it as attention keys/values.
bool onlyKeysOrValues(BlockArgument arg) {
  if (arg.use_empty())
    return false;
  for (OpOperand &use : arg.getUses()) {
    Operation *user = use.getOwner();
    if (auto attention = dyn_cast<AttentionOp>(user)) {
      if (use.get() == attention.getQuery() ||
          (use.get() != attention.getKey() && use.get() != attention.getValue()))
        return false;
      // Keys and values share an element type: both must be converted.
      continue;
    }
    if (auto write = dyn_cast<CacheWriteOp>(user)) {
      if (use.get() != write.getCache())
        return false;
      continue;
    }
    return false;
  }
  return true;
}

Type toHalf(Type type) {
  Type half = Float16Type::get(type.getContext());
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return RankedTensorType::get(tensor.getShape(), half);
  auto memref = cast<MemRefType>(type);
  return MemRefType::get(memref.getShape(), half);
}

bool isF32Rank3(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  return shaped && shaped.hasRank() && shaped.getRank() == 3 &&
         shaped.getElementType().isF32() &&
         (isa<RankedTensorType>(type) ||
          cast<MemRefType>(type).getLayout().isIdentity());
}

struct TfmHalfCachesPass
    : public tfm::impl::TfmHalfCachesBase<TfmHalfCachesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Arguments first: which names travel as float16.
    llvm::StringSet<> halfInputs;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      SmallVector<BlockArgument> chosen;
      for (BlockArgument arg : func.getArguments())
        if (isF32Rank3(arg.getType()) && onlyKeysOrValues(arg) &&
            pairedConsistently(arg))
          chosen.push_back(arg);
      for (BlockArgument arg : chosen) {
        arg.setType(toHalf(arg.getType()));
        if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                          kInputArgAttr))
          halfInputs.insert(name.getValue());
      }
      if (!chosen.empty())
        updateSignature(func);
    }
    // Then results handed to those inputs.
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      bool changed = false;
      for (unsigned i = 0; i < func.getNumResults(); ++i) {
        auto name = func.getResultAttrOfType<StringAttr>(i, kOutputResultAttr);
        if (!name || !halfInputs.contains(name.getValue()) ||
            !isF32Rank3(func.getResultTypes()[i]))
          continue;
        func.walk([&](func::ReturnOp ret) {
          OpBuilder b(ret);
          Value value = ret.getOperand(i);
          // Named after the output it rounds (`cross_key.0`), so that a
          // profile's rows tell the narrows apart.
          ret.setOperand(i, b.create<NarrowOp>(NameLoc::get(name),
                                               toHalf(value.getType()), value));
        });
        changed = true;
      }
      if (changed)
        updateSignature(func);
    }
  }

  /// Keys and values of one attention must share an element type: an
  /// argument is converted only if its partner at every attention is a
  /// block argument converted with it (both qualify).
  static bool pairedConsistently(BlockArgument arg) {
    for (OpOperand &use : arg.getUses()) {
      auto attention = dyn_cast<AttentionOp>(use.getOwner());
      if (!attention)
        continue;
      Value other = use.get() == attention.getKey() ? attention.getValue()
                                                     : attention.getKey();
      auto partner = dyn_cast<BlockArgument>(other);
      if (other == arg)
        continue;
      if (!partner || !isF32Rank3(partner.getType()) ||
          !onlyKeysOrValues(partner))
        return false;
    }
    return true;
  }

  static void updateSignature(func::FuncOp func) {
    SmallVector<Type> results;
    func.walk([&](func::ReturnOp ret) {
      results.assign(ret.getOperandTypes().begin(), ret.getOperandTypes().end());
    });
    if (results.empty())
      results.assign(func.getResultTypes().begin(), func.getResultTypes().end());
    func.setFunctionType(FunctionType::get(
        func.getContext(), func.getBody().getArgumentTypes(), results));
  }
};

} // namespace
