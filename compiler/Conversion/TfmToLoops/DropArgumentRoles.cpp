//===- DropArgumentRoles.cpp - strip tfm.* argument attributes ------------===//
#include "compiler/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMDROPARGUMENTROLES
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;

namespace {

/// The attributes of `attrs` whose names do not start with "tfm.".
DictionaryAttr withoutRoles(DictionaryAttr attrs) {
  if (!attrs)
    return attrs;
  SmallVector<NamedAttribute> kept;
  for (NamedAttribute a : attrs)
    if (!a.getName().strref().starts_with("tfm."))
      kept.push_back(a);
  return DictionaryAttr::get(attrs.getContext(), kept);
}

struct TfmDropArgumentRolesPass
    : public tfm::impl::TfmDropArgumentRolesBase<TfmDropArgumentRolesPass> {
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp func) {
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        func.setArgAttrs(i, withoutRoles(func.getArgAttrDict(i)));
      for (unsigned i = 0; i < func.getNumResults(); ++i)
        func.setResultAttrs(i, withoutRoles(func.getResultAttrDict(i)));
    });
  }
};

} // namespace
