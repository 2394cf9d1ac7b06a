//===- SearchHeads.cpp - decoder steps that end in the search's choices ---===//
//
// tfm-greedy-head adds decode_greedy (the step ending in each row's chosen
// id), tfm-beam-head adds decode_beam (the step ending in each row's best
// candidates and their log-probabilities): copies of decode_step whose
// output projection is fused with what the search reads from it.
//
//===----------------------------------------------------------------------===//
#include "dialects/tfm/IR/TfmDialect.h"
#include "dialects/tfm/IR/TfmOps.h"
#include "dialects/tfm/Transforms/Passes.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMGREEDYHEAD
#define GEN_PASS_DEF_TFMBEAMHEAD
#include "dialects/tfm/Transforms/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The output projection `step` returns, if it can end in a head: no
/// activation (an i8 weight comes with its scale).
LinearOp returnedProjection(func::FuncOp step) {
  if (step.isExternal() || step.getNumResults() != 1)
    return {};
  auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
  auto linear = ret.getOperand(0).getDefiningOp<LinearOp>();
  if (!linear || linear.getActivation() != Activation::none ||
      !linear->hasOneUse())
    return {};
  return linear;
}

/// Adds `name`: a copy of decode_step with inputs `inputNames` (types
/// `inputTypes`) appended, whose returned output projection is replaced by
/// the results of `fuse(b, projection, inputs)`, named `outputs`. Nothing
/// when the module has `name` already or decode_step does not end in such
/// a projection.
void addHead(ModuleOp module, StringRef name, ArrayRef<Type> inputTypes,
             ArrayRef<StringRef> inputNames, ArrayRef<StringRef> outputs,
             function_ref<Operation *(OpBuilder &, LinearOp, ValueRange)> fuse) {
  auto step = module.lookupSymbol<func::FuncOp>("decode_step");
  if (!step || module.lookupSymbol(name) || !returnedProjection(step))
    return;
  OpBuilder b(module.getContext());
  b.setInsertionPointAfter(step);
  auto head = cast<func::FuncOp>(b.clone(*step));
  head.setSymName(name);
  LinearOp projection = returnedProjection(head);
  // What decides the choices travels as inputs: the same compiled function
  // serves every model's special tokens, minimum length and beam size.
  unsigned first = head.getNumArguments();
  SmallVector<unsigned> at(inputTypes.size(), first);
  SmallVector<DictionaryAttr> attrs;
  for (StringRef n : inputNames)
    attrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(kInputArgAttr, b.getStringAttr(n))));
  SmallVector<Location> locs(inputTypes.size(), projection.getLoc());
  head.insertArguments(at, inputTypes, attrs, locs);
  b.setInsertionPoint(projection);
  Operation *fused =
      fuse(b, projection, head.getArguments().drop_front(first));
  auto ret = cast<func::ReturnOp>(head.getBody().front().getTerminator());
  ret->setOperands(fused->getResults());
  projection.erase();
  head.setType(b.getFunctionType(head.getArgumentTypes(),
                                 fused->getResultTypes()));
  for (auto [i, output] : llvm::enumerate(outputs))
    head.setResultAttr(i, kOutputResultAttr, b.getStringAttr(output));
}

RankedTensorType idList(OpBuilder &b) {
  return RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type());
}

struct TfmGreedyHeadPass
    : public tfm::impl::TfmGreedyHeadBase<TfmGreedyHeadPass> {
  void runOnOperation() override {
    OpBuilder b(&getContext());
    Type ids = idList(b);
    addHead(getOperation(), "decode_greedy", {ids, b.getIndexType(), ids},
            {"never_ids", "eos_id", "allow_eos"}, {"best_tokens"},
            [&](OpBuilder &b, LinearOp p, ValueRange in) -> Operation * {
              return b.create<LinearArgmaxOp>(p.getLoc(), ids, p.getInput(),
                                              p.getWeight(), p.getBias(), in[0],
                                              in[1], in[2], p.getScale());
            });
  }
};

struct TfmBeamHeadPass : public tfm::impl::TfmBeamHeadBase<TfmBeamHeadPass> {
  void runOnOperation() override {
    OpBuilder b(&getContext());
    Type ids = idList(b);
    int64_t dyn = ShapedType::kDynamic;
    auto valuesType = RankedTensorType::get({dyn, dyn}, b.getF32Type());
    auto idsType = RankedTensorType::get({dyn, dyn}, b.getI32Type());
    addHead(getOperation(), "decode_beam",
            {ids, b.getIndexType(), ids, b.getIndexType()},
            {"never_ids", "eos_id", "allow_eos", "candidates"},
            {"top_values", "top_ids"},
            [&](OpBuilder &b, LinearOp p, ValueRange in) -> Operation * {
              return b.create<LinearTopkOp>(
                  p.getLoc(), valuesType, idsType, p.getInput(),
                  p.getWeight(), p.getBias(), in[0], in[1], in[2], in[3],
                  p.getScale());
            });
  }
};

} // namespace
