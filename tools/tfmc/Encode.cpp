//===- Encode.cpp - tfmc encode: encoder states as .npy -------------------===//
//
// tfmc encode MODEL.json --src IDS -o STATES.npy
//
// Works for encoder-only models (num_decoder_layers 0) and for the encoder
// of a translation model alike.
//
//===----------------------------------------------------------------------===//
#include "tools/tfmc/Command.h"
#include "tools/tfmc/OutputPaths.h"

#include "frontends/model/Model.h"
#include "runtime/io/Npy.h"

#include "mlir/Support/Timing.h"

#include <optional>

namespace cl = llvm::cl;

namespace tfmc::driver {
namespace {

class EncodeCommand : public Command {
public:
  explicit EncodeCommand(cl::OptionCategory &cat)
      : sub("encode", "Encoder output [B, L, d_model] of source id lines as "
                      ".npy"),
        model(cl::Positional, cl::desc("MODEL.json"), cl::Required,
              cl::sub(sub), cl::cat(cat)),
        output("o", cl::desc("Output .npy file"), cl::value_desc("FILE"),
               cl::init(""), cl::sub(sub), cl::cat(cat)),
        srcFile("src",
                cl::desc("Source ids, one row per line (eos is appended, "
                         "rows right-padded as in translate)"),
                cl::value_desc("IDS"), cl::Required, cl::sub(sub),
                cl::cat(cat)),
        dumpIR("dump-ir",
               cl::desc(
                   "Write the IR stages 01-04 of what this command compiles to "
                   "DIR as NN-stage.mlir"),
               cl::value_desc("DIR"), cl::init(""), cl::sub(sub), cl::cat(cat)),
        kernels(sub, cat),
        threads(sub, cat,
                "Threads for the linear layers (oneDNN and the packed "
                "kernels split each layer's columns between them)"),
        computeType(sub, cat), cache(sub, cat), timing(sub, cat) {}

  cl::SubCommand &subcommand() override { return sub; }

  int run() override {
    if (output.empty())
      return fail("encode needs -o STATES.npy");
    FileRoles files;
    files.noteModel(model);
    files.noteRead(srcFile, "the source file (--src)");
    if (llvm::Error e = files.checkDumpDirectory(dumpIR))
      return fail(std::move(e));
    if (llvm::Error e = files.checkOutput(output, "the states (-o)"))
      return fail(std::move(e));
    auto library = kernels.useLibrary();
    if (!library)
      return fail(library.takeError());
    auto threadCount = threads.count();
    if (!threadCount)
      return fail(threadCount.takeError());
    auto loaded = loadModelTimed(model, timing, cache.directory());
    if (!loaded)
      return fail(loaded.takeError());
    auto src = readIdFile(srcFile, loaded->sourceVocab.size());
    if (!src)
      return fail(src.takeError());
    if (src->empty())
      return fail(srcFile + ": no source lines");
    runtime::SessionOptions sessionOptions;
    sessionOptions.useLibraryKernels = *library;
    sessionOptions.threads = *threadCount;
    if (!computeType.apply(sessionOptions))
      return 1;
    sessionOptions.dumpDir = dumpIR;
    sessionOptions.translation = false;
    sessionOptions.teacherForcing = false;
    sessionOptions.encoderStates = true;
    auto session =
        openSessionTimed(std::move(*loaded), sessionOptions, cache, timing);
    if (!session)
      return fail(session.takeError());
    std::optional<mlir::TimingScope> runTiming = timing.scope("run");
    int64_t limit = (*session)->maxSourceTokens();
    for (size_t i = 0; i < src->size(); ++i)
      if (static_cast<int64_t>((*src)[i].size()) > limit)
        llvm::errs() << "warning: " << srcFile << ": line " << i + 1 << ": "
                     << (*src)[i].size() << " ids, truncated to " << limit
                     << " (max_len " << limit + 1 << " with eos)\n";
    auto states = (*session)->encode(*src);
    if (!states)
      return fail(states.takeError());
    warnIfNotNumbers(states->values, "the encoder states");
    if (llvm::Error e = runtime::writeNpy(
            output, {states->batch, states->length, states->dModel},
            states->values))
      return fail(std::move(e));
    return 0;
  }

private:
  cl::SubCommand sub;
  cl::opt<std::string> model, output, srcFile, dumpIR;
  KernelsOption kernels;
  ThreadsOption threads;
  ComputeTypeOptions computeType;
  CacheOptions cache;
  TimingOption timing;
};

} // namespace

std::unique_ptr<Command> createEncodeCommand(cl::OptionCategory &cat) {
  return std::make_unique<EncodeCommand>(cat);
}

} // namespace tfmc::driver
