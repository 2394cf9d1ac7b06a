//===- Quantize.cpp - tfmc quantize: a model with int8 weights ------------===//
//
// tfmc quantize MODEL.json -o DIR [--quantize-output-projection=false]
//
// Writes DIR/model.json ("compute_type": "int8") and DIR/model.safetensors
// with the linear weights as I8 + "_scale" tensors (runtime/io).
//
//===----------------------------------------------------------------------===//
#include "tools/tfmc/Command.h"

#include "runtime/io/QuantizedModel.h"

#include "llvm/Support/FormatVariadic.h"

namespace cl = llvm::cl;

namespace tfmc::driver {
namespace {

class QuantizeCommand : public Command {
public:
  explicit QuantizeCommand(cl::OptionCategory &cat)
      : sub("quantize", "Write a copy of a model with int8 linear weights "
                        "(I8 + _scale tensors, compute_type int8)"),
        model(cl::Positional, cl::desc("MODEL.json"), cl::Required,
              cl::sub(sub), cl::cat(cat)),
        output("o", cl::desc("Output directory (created if needed)"),
               cl::value_desc("DIR"), cl::init(""), cl::sub(sub),
               cl::cat(cat)),
        outputProjection(
            "quantize-output-projection",
            cl::desc("Quantize the output projection too (default true)"),
            cl::init(true), cl::sub(sub), cl::cat(cat)) {}

  cl::SubCommand &subcommand() override { return sub; }

  int run() override {
    if (output.empty())
      return fail("quantize needs -o DIR");
    auto loaded = frontend::loadModel(model);
    if (!loaded)
      return fail(loaded.takeError());
    auto summary =
        runtime::writeQuantizedModel(*loaded, output, outputProjection);
    if (!summary)
      return fail(summary.takeError());
    llvm::outs() << llvm::formatv(
        "{0}/model.json: {1} weights as int8, {2:f1} MB -> {3:f1} MB\n",
        output.getValue(), summary->quantizedTensors,
        summary->bytesBefore / 1e6, summary->bytesAfter / 1e6);
    return 0;
  }

private:
  cl::SubCommand sub;
  cl::opt<std::string> model, output;
  cl::opt<bool> outputProjection;
};

} // namespace

std::unique_ptr<Command> createQuantizeCommand(cl::OptionCategory &cat) {
  return std::make_unique<QuantizeCommand>(cat);
}

} // namespace tfmc::driver
