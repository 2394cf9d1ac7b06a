//===- Forward.cpp - tfmc forward: teacher-forced logits as .npy ----------===//
//
// tfmc forward MODEL.json --src IDS --tgt IDS -o LOGITS.npy
//              [--output logits|log-probs|probs]
//
//===----------------------------------------------------------------------===//
#include "tools/tfmc/Command.h"
#include "tools/tfmc/OutputPaths.h"

#include "frontends/model/Model.h"
#include "runtime/io/Npy.h"

#include "mlir/Support/Timing.h"

#include "llvm/Support/FormatVariadic.h"

#include <optional>

namespace cl = llvm::cl;

namespace tfmc::driver {
namespace {

class ForwardCommand : public Command {
public:
  explicit ForwardCommand(cl::OptionCategory &cat)
      : sub("forward",
            "Teacher-forced logits of source/target id files as .npy"),
        model(cl::Positional, cl::desc("MODEL.json"), cl::Required,
              cl::sub(sub), cl::cat(cat)),
        output("o", cl::desc("Output .npy file"), cl::value_desc("FILE"),
               cl::init(""), cl::sub(sub), cl::cat(cat)),
        srcFile("src", cl::desc("Source ids, one row per line"),
                cl::value_desc("IDS"), cl::Required, cl::sub(sub),
                cl::cat(cat)),
        tgtFile(
            "tgt", cl::desc("Target ids, one row per line, each starting with the "
                          "model's decoder start token (bos unless the "
                          "model file says otherwise)"),
            cl::value_desc("IDS"), cl::Required, cl::sub(sub), cl::cat(cat)),
        head("output",
             cl::desc("What to write: 'logits' (default), 'log-probs' "
                      "(log_softmax) or 'probs' (softmax) over the target "
                      "vocabulary"),
             cl::value_desc("KIND"), cl::init("logits"), cl::sub(sub),
             cl::cat(cat)),
        kernels(sub, cat),
        threads(sub, cat,
                "Threads for the linear layers (oneDNN and the packed "
                "kernels split each layer's columns between them)"),
        computeType(sub, cat), cache(sub, cat), timing(sub, cat) {}

  cl::SubCommand &subcommand() override { return sub; }

  int run() override {
    if (output.empty())
      return fail("forward needs -o LOGITS.npy");
    FileRoles files;
    files.noteModel(model);
    files.noteRead(srcFile, "the source file (--src)");
    files.noteRead(tgtFile, "the target file (--tgt)");
    if (llvm::Error e = files.checkOutput(output, "the logits (-o)"))
      return fail(std::move(e));
    auto library = kernels.useLibrary();
    if (!library)
      return fail(library.takeError());
    auto threadCount = threads.count();
    if (!threadCount)
      return fail(threadCount.takeError());
    runtime::LogitsOutput kind;
    if (head == "logits")
      kind = runtime::LogitsOutput::Logits;
    else if (head == "log-probs")
      kind = runtime::LogitsOutput::LogProbs;
    else if (head == "probs")
      kind = runtime::LogitsOutput::Probs;
    else
      return fail("--output: expected 'logits', 'log-probs' or 'probs', got "
                  "'" +
                  head + "'");
    auto loaded = loadModelTimed(model, timing, cache.directory());
    if (!loaded)
      return fail(loaded.takeError());
    if (loaded->desc.arch.encoderOnly())
      return fail(frontend::needsDecoderMessage(model, "forward"));
    auto src = readIdFile(srcFile, loaded->sourceVocab.size());
    if (!src)
      return fail(src.takeError());
    auto tgt = readIdFile(tgtFile, loaded->targetVocab.size(), "target");
    if (!tgt)
      return fail(tgt.takeError());
    // Located errors for what the session would reject by row number.
    if (src->size() != tgt->size())
      return fail(llvm::formatv("{0} has {1} lines but {2} has {3}: forward "
                                "needs one target line per source line",
                                srcFile, src->size(), tgtFile, tgt->size())
                      .str());
    // bos, or the model's own decoder start token (Marian: pad).
    const frontend::SpecialTokens &special = loaded->desc.special;
    int64_t start = special.decoderStart;
    const char *what = special.hasBos && start == special.bos
                           ? "bos"
                           : "the decoder start token";
    for (size_t r = 0; r < tgt->size(); ++r)
      if ((*tgt)[r].empty() || (*tgt)[r].front() != start)
        return fail(llvm::formatv("{0}:{1}: a target line must start with "
                                  "{2} ({3})",
                                  tgtFile, r + 1, what, start)
                        .str());
    runtime::SessionOptions sessionOptions;
    sessionOptions.useLibraryKernels = *library;
    sessionOptions.threads = *threadCount;
    if (!computeType.apply(sessionOptions))
      return 1;
    sessionOptions.translation = false;
    auto session =
        openSessionTimed(std::move(*loaded), sessionOptions, cache, timing);
    if (!session)
      return fail(session.takeError());
    std::optional<mlir::TimingScope> runTiming = timing.scope("run");
    auto logits = (*session)->forward(*src, *tgt, kind);
    if (!logits)
      return fail(logits.takeError());
    warnIfNotNumbers(logits->values, kind == runtime::LogitsOutput::Logits
                                         ? "the logits"
                                     : kind == runtime::LogitsOutput::Probs
                                         ? "the probabilities"
                                         : "the log-probabilities");
    if (llvm::Error e = runtime::writeNpy(
            output, {logits->batch, logits->steps, logits->vocab},
            logits->values))
      return fail(std::move(e));
    return 0;
  }

private:
  cl::SubCommand sub;
  cl::opt<std::string> model, output, srcFile, tgtFile, head;
  KernelsOption kernels;
  ThreadsOption threads;
  ComputeTypeOptions computeType;
  CacheOptions cache;
  TimingOption timing;
};

} // namespace

std::unique_ptr<Command> createForwardCommand(cl::OptionCategory &cat) {
  return std::make_unique<ForwardCommand>(cat);
}

} // namespace tfmc::driver
