//===- tfmc.cpp - the tfmc driver -----------------------------------------===//
//
// tfmc compile   MODEL.json [--emit=STAGE] [-o FILE] [--dump-ir DIR]
// tfmc translate MODEL.json [-i FILE] [-o FILE] [--ids] [--batch-size N] ...
// tfmc forward   MODEL.json --src IDS --tgt IDS -o LOGITS.npy
// tfmc score     --hyp FILE --ref FILE [--ref FILE ...]
//
// Argument parsing only; the work is done by the compiler and runtime
// libraries.
//
//===----------------------------------------------------------------------===//
#include "compiler/Pipelines/EmitModel.h"
#include "frontends/model/Model.h"
#include "runtime/io/Npy.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/scoring/ScoreFiles.h"
#include "runtime/session/Session.h"
#include "runtime/session/Translator.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <fstream>
#include <iostream>
#include <optional>
#include <unistd.h>

namespace cl = llvm::cl;
using namespace tfmc;

static int fail(const llvm::Twine &message) {
  llvm::errs() << "error: " << message << "\n";
  return 1;
}

static int fail(llvm::Error error) {
  std::string text = llvm::toString(std::move(error));
  // One line per error, whatever the library produced.
  std::replace(text.begin(), text.end(), '\n', ' ');
  return fail(llvm::StringRef(text).rtrim());
}

/// Reads a file of space-separated token ids, one sequence per line.
static llvm::Expected<runtime::TokenRows> readIdFile(llvm::StringRef path,
                                                     int64_t vocab) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(
        buffer.getError(), "%s: cannot open file: %s", path.str().c_str(),
        buffer.getError().message().c_str());
  runtime::TokenRows rows;
  llvm::SmallVector<llvm::StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  if (!lines.empty() && lines.back().trim().empty())
    lines.pop_back();
  for (size_t i = 0; i < lines.size(); ++i) {
    auto ids = runtime::parseIdLine(lines[i].rtrim("\r"), vocab);
    if (!ids)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(), "%s: line %zu: %s",
          path.str().c_str(), i + 1, llvm::toString(ids.takeError()).c_str());
    rows.push_back(std::move(*ids));
  }
  return rows;
}

static llvm::Expected<std::unique_ptr<llvm::raw_fd_ostream>>
openOutput(llvm::StringRef path) {
  std::error_code ec;
  auto os =
      std::make_unique<llvm::raw_fd_ostream>(path.empty() ? "-" : path, ec);
  if (ec)
    return llvm::createStringError(ec, "%s: cannot write file: %s",
                                   path.str().c_str(), ec.message().c_str());
  return std::move(os);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);

  cl::SubCommand compileCommand("compile",
                                "Compile a model and print one IR stage");
  cl::SubCommand translateCommand("translate",
                                  "Translate sentences, one per line");
  cl::SubCommand forwardCommand(
      "forward", "Teacher-forced logits of source/target id files as .npy");
  cl::SubCommand scoreCommand(
      "score", "Corpus BLEU and chrF of translations (sacreBLEU-compatible)");

  cl::OptionCategory category("tfmc options");
  cl::opt<std::string> model(cl::Positional, cl::desc("MODEL.json"),
                             cl::Required, cl::sub(compileCommand),
                             cl::sub(translateCommand), cl::sub(forwardCommand),
                             cl::cat(category));
  cl::opt<std::string> output(
      "o", cl::desc("Output file (default: stdout)"), cl::value_desc("FILE"),
      cl::init(""), cl::sub(compileCommand), cl::sub(translateCommand),
      cl::sub(forwardCommand), cl::cat(category));
  cl::opt<std::string> dumpIR(
      "dump-ir", cl::desc("Write every IR stage to DIR as NN-stage.mlir"),
      cl::value_desc("DIR"), cl::init(""), cl::sub(compileCommand),
      cl::sub(translateCommand), cl::cat(category));

  cl::opt<std::string> kernels(
      "kernels",
      cl::desc("Linear layers: 'library' (oneDNN calls) or 'loops' "
               "(compiled loop nests); default library when built with "
               "oneDNN"),
      cl::init(runtime::haveLibraryKernels() ? "library" : "loops"),
      cl::sub(compileCommand), cl::sub(translateCommand),
      cl::sub(forwardCommand), cl::cat(category));

  // compile
  cl::opt<std::string> emit(
      "emit", cl::desc("Stage to print: tfm, fused, loops, llvm, llvmir, asm"),
      cl::value_desc("STAGE"), cl::init("tfm"), cl::sub(compileCommand),
      cl::cat(category));

  // translate
  cl::opt<std::string> input("i", cl::desc("Input file (default: stdin)"),
                             cl::value_desc("FILE"), cl::init(""),
                             cl::sub(translateCommand), cl::cat(category));
  cl::opt<bool> ids("ids", cl::desc("Lines are space-separated token ids"),
                    cl::sub(translateCommand), cl::cat(category));
  cl::opt<bool> replaceUnk(
      "replace-unk",
      cl::desc("Write the k-th <unk> of a translation as the source text of "
               "the k-th unknown source token (text mode)"),
      cl::sub(translateCommand), cl::cat(category));
  cl::opt<int64_t> batchSize("batch-size", cl::desc("Sentences per batch"),
                             cl::init(32), cl::sub(translateCommand),
                             cl::cat(category));
  cl::opt<int64_t> maxLength(
      "max-length",
      cl::desc("Most tokens generated per sentence, eos included"),
      cl::init(256), cl::sub(translateCommand), cl::cat(category));
  cl::opt<int64_t> minLength(
      "min-length", cl::desc("Fewest tokens before eos is allowed"),
      cl::init(0), cl::sub(translateCommand), cl::cat(category));
  cl::opt<int64_t> beamSize("beam-size", cl::desc("Beam width (1 = greedy)"),
                            cl::init(1), cl::sub(translateCommand),
                            cl::cat(category));
  cl::opt<double> lengthPenalty("length-penalty",
                                cl::desc("Beam scores are divided by length^A"),
                                cl::value_desc("A"), cl::init(1.0),
                                cl::sub(translateCommand), cl::cat(category));
  cl::opt<int64_t> nBest("n-best",
                         cl::desc("Write the N best hypotheses per input as "
                                  "'i ||| translation ||| score'"),
                         cl::value_desc("N"), cl::init(0),
                         cl::sub(translateCommand), cl::cat(category));
  cl::opt<bool> scores("scores",
                       cl::desc("Write 'i ||| translation ||| score' lines"),
                       cl::sub(translateCommand), cl::cat(category));
  cl::opt<bool> stats(
      "stats",
      cl::desc("Print load/JIT, encoder and decoder times and tokens/s to "
               "stderr"),
      cl::sub(translateCommand), cl::cat(category));
  cl::opt<int> threads("threads", cl::desc("Threads for compiled code"),
                       cl::init(1), cl::sub(translateCommand),
                       cl::cat(category));

  // forward
  cl::opt<std::string> srcFile("src", cl::desc("Source ids, one row per line"),
                               cl::value_desc("IDS"), cl::Required,
                               cl::sub(forwardCommand), cl::cat(category));
  cl::opt<std::string> tgtFile(
      "tgt", cl::desc("Target ids, one row per line, starting with bos"),
      cl::value_desc("IDS"), cl::Required, cl::sub(forwardCommand),
      cl::cat(category));

  // score
  cl::opt<std::string> hypFile("hyp", cl::desc("Translations, one per line"),
                               cl::value_desc("FILE"), cl::Required,
                               cl::sub(scoreCommand), cl::cat(category));
  cl::list<std::string> refFiles(
      "ref", cl::desc("Reference translations, one per line (repeatable)"),
      cl::value_desc("FILE"), cl::OneOrMore, cl::sub(scoreCommand),
      cl::cat(category));

  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "tfmc: compiler and runtime for encoder-decoder translation "
          "Transformers\n",
          &llvm::errs()))
    return 1;

  if (kernels != "library" && kernels != "loops")
    return fail("--kernels: expected 'library' or 'loops', got '" + kernels +
                "'");
  if (kernels == "library" && !runtime::haveLibraryKernels())
    return fail("--kernels=library: this tfmc was built without oneDNN");
  bool library = kernels == "library";

  if (scoreCommand) {
    auto report = scoring::scoreFiles(hypFile, refFiles);
    if (!report)
      return fail(report.takeError());
    llvm::outs() << report->bleu.format() << "\n"
                 << report->chrf.format() << "\n";
    return 0;
  }

  if (compileCommand) {
    auto stage = mlir::tfm::parseStage(emit);
    if (!stage)
      return fail("--emit: unknown stage '" + emit +
                  "' (expected tfm, fused, loops, llvm, llvmir or asm)");
    auto loaded = frontend::loadModel(model);
    if (!loaded)
      return fail(loaded.takeError());
    mlir::tfm::PipelineOptions pipeline;
    pipeline.useLibraryCalls = library;
    auto text = mlir::tfm::emitModel(*loaded, *stage, dumpIR, pipeline);
    if (!text)
      return fail(text.takeError());
    auto os = openOutput(output);
    if (!os)
      return fail(os.takeError());
    **os << *text;
    return 0;
  }

  if (translateCommand) {
    if (batchSize < 1)
      return fail("--batch-size must be at least 1");
    if (maxLength < 1)
      return fail("--max-length must be at least 1");
    if (minLength < 0)
      return fail("--min-length must not be negative");
    if (beamSize < 1)
      return fail("--beam-size must be at least 1");
    if (nBest < 0 || nBest > beamSize)
      return fail("--n-best must be between 1 and --beam-size");
    if (!(lengthPenalty >= 0.0))
      return fail("--length-penalty must not be negative");
    if (threads < 1)
      return fail("--threads must be at least 1");
    std::ifstream file;
    if (!input.empty()) {
      file.open(input);
      if (!file)
        return fail(input + ": cannot open file");
    }
    runtime::SessionOptions sessionOptions;
    sessionOptions.dumpDir = dumpIR;
    sessionOptions.threads = threads;
    sessionOptions.useLibraryKernels = library;
    sessionOptions.teacherForcing = false;
    auto loadStart = std::chrono::steady_clock::now();
    auto loaded = frontend::loadModel(model);
    if (!loaded)
      return fail(loaded.takeError());
    // Text mode: the tokenizers (and their model files) are checked before
    // the model is compiled, so a bad one is reported at once.
    std::optional<runtime::TextTokenizers> tokenizers;
    if (!ids) {
      auto created = runtime::createTextTokenizers(*loaded);
      if (!created)
        return fail(created.takeError());
      tokenizers = std::move(*created);
    }
    auto session = runtime::Session::open(std::move(*loaded), sessionOptions);
    if (!session)
      return fail(session.takeError());
    double loadSeconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - loadStart)
                             .count();
    auto os = openOutput(output);
    if (!os)
      return fail(os.takeError());
    runtime::TranslateOptions options;
    options.replaceUnknown = replaceUnk;
    options.batchSize = batchSize;
    options.search.maxLength = maxLength;
    options.search.minLength = minLength;
    options.search.beamSize = beamSize;
    options.search.lengthPenalty = lengthPenalty;
    options.scores = scores || nBest > 0;
    options.nBest = nBest > 0 ? int64_t(nBest) : 1;
    auto result = runtime::translateStream(
        **session, tokenizers ? &*tokenizers : nullptr,
        input.empty() ? std::cin : file, **os, llvm::errs(), options);
    if (!result)
      return fail(result.takeError());
    if (stats) {
      const runtime::Session &s = **session;
      double decode = s.decodeSeconds();
      llvm::errs() << llvm::formatv(
          "tfmc: {0} lines, {1} tokens; load+compile {2:f3} s (JIT {3:f3} "
          "s), encode {4:f3} s, decode {5:f3} s, {6:f1} tokens/s\n",
          result->lines, result->generatedTokens, loadSeconds,
          s.compiled().compileSeconds(), s.encodeSeconds(), decode,
          decode > 0 ? result->generatedTokens / decode : 0.0);
    }
    return result->badLines ? 1 : 0;
  }

  if (forwardCommand) {
    if (output.empty())
      return fail("forward needs -o LOGITS.npy");
    auto loaded = frontend::loadModel(model);
    if (!loaded)
      return fail(loaded.takeError());
    auto src = readIdFile(srcFile, loaded->sourceVocab.size());
    if (!src)
      return fail(src.takeError());
    auto tgt = readIdFile(tgtFile, loaded->targetVocab.size());
    if (!tgt)
      return fail(tgt.takeError());
    runtime::SessionOptions sessionOptions;
    sessionOptions.useLibraryKernels = library;
    sessionOptions.translation = false;
    auto session = runtime::Session::open(model, sessionOptions);
    if (!session)
      return fail(session.takeError());
    auto logits = (*session)->forward(*src, *tgt);
    if (!logits)
      return fail(logits.takeError());
    if (llvm::Error e = runtime::writeNpy(
            output, {logits->batch, logits->steps, logits->vocab},
            logits->values))
      return fail(std::move(e));
    return 0;
  }

  llvm::errs() << "error: expected a command: compile, translate, forward or "
                  "score "
                  "(see tfmc --help)\n";
  return 1;
}
