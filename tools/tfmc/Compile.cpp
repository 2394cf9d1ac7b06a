//===- Compile.cpp - tfmc compile: a model's IR at any stage --------------===//
//
// tfmc compile MODEL.json [--emit=STAGE] [-o FILE] [--dump-ir DIR]
//              [--cache-only] [--cache-dir DIR] [--timing]
//              [--library-min-rows N]
//
//===----------------------------------------------------------------------===//
#include "tools/tfmc/Command.h"
#include "tools/tfmc/IntegerOption.h"
#include "tools/tfmc/OutputPaths.h"

#include "compiler/Pipelines/EmitModel.h"
#include "compiler/Pipelines/OpGraph.h"
#include "frontends/model/Model.h"
#include "runtime/session/CompilePipeline.h"

#include "mlir/Support/Timing.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <optional>

namespace cl = llvm::cl;

namespace tfmc::driver {
namespace {

class CompileCommand : public Command {
public:
  explicit CompileCommand(cl::OptionCategory &cat)
      : sub("compile", "Compile a model and print one IR stage"),
        model(cl::Positional, cl::desc("MODEL.json"), cl::Required,
              cl::sub(sub), cl::cat(cat)),
        output("o", cl::desc("Output file (default: stdout)"),
               cl::value_desc("FILE"), cl::init(""), cl::sub(sub),
               cl::cat(cat)),
        dumpIR("dump-ir",
               cl::desc(
                   "Write the IR stages to DIR: 01-tfm.mlir to 04-llvm.mlir, "
                   "05-llvmir.ll, 06-asm.s and the fused graph (02-fused.dot)"),
               cl::value_desc("DIR"), cl::init(""), cl::sub(sub), cl::cat(cat)),
        emit("emit",
             cl::desc("Stage to print: tfm, fused, loops, llvm, llvmir, asm, "
                      "obj (the host object file; needs -o), or graph (the "
                      "fused stage as SVG, or DOT with -o FILE.dot or "
                      "without Graphviz)"),
             cl::value_desc("STAGE"), cl::init("tfm"), cl::sub(sub),
             cl::cat(cat)),
        cacheOnly("cache-only",
                  cl::desc("Compile what 'translate' runs into the "
                           "compiled-model cache and print the entry's path "
                           "(no IR is printed)"),
                  cl::sub(sub), cl::cat(cat)),
        locations("locations",
                  cl::desc("Print each op's location with the IR (--emit "
                           "and --dump-ir's .mlir stages): its name in the "
                           "model, as tfmc profile's rows show it"),
                  cl::sub(sub), cl::cat(cat)),
        libraryMinRows(
            "library-min-rows",
            cl::desc("With --kernels=library: linear layers with fewer rows "
                     "than N run their loop kernel (default: what translate "
                     "uses on this machine, 1 where the packed kernels run, "
                     "else 8)"),
            cl::value_desc("N"), cl::init(0), cl::sub(sub), cl::cat(cat)),
        kernels(sub, cat), computeType(sub, cat), kvType(sub, cat),
        cache(sub, cat), timing(sub, cat) {}

  cl::SubCommand &subcommand() override { return sub; }

  int run() override {
    auto library = kernels.useLibrary();
    if (!library)
      return fail(library.takeError());
    bool graph = emit == "graph";
    auto stage = graph ? mlir::tfm::Stage::Fused : mlir::tfm::parseStage(emit);
    if (!stage)
      return fail("--emit: unknown stage '" + emit +
                  "' (expected tfm, fused, loops, llvm, llvmir, asm, obj or "
                  "graph)");
    if (llvm::Error e = checkOutputBesideDump())
      return fail(std::move(e));
    if (locations && cacheOnly)
      return fail("--locations: --cache-only prints no IR");
    if (locations && (graph || *stage > mlir::tfm::Stage::LLVM) &&
        dumpIR.empty())
      return fail("--locations prints the MLIR stages' locations: --emit=" +
                  emit + " has none (with --dump-ir, its .mlir files do)");
    if (cacheOnly && (emit.getNumOccurrences() || !output.empty()))
      return fail("--cache-only prints no IR: it cannot go with --emit or -o "
                  "(--dump-ir DIR writes the stages of what it compiles)");
    auto kv = kvType.type();
    if (!kv)
      return fail(kv.takeError());
    if (*stage == mlir::tfm::Stage::Obj && output.empty() && !cacheOnly)
      return fail("--emit=obj writes a binary object: give -o FILE.o");
    if (libraryMinRows.getNumOccurrences()) {
      if (libraryMinRows < 1)
        return fail("--library-min-rows must be at least 1");
      if (!*library)
        return fail("--library-min-rows chooses between the library and the "
                    "loop kernels: it cannot go with --kernels=loops");
      if (cacheOnly)
        return fail("--cache-only stores what translate compiles (its row "
                    "threshold): it cannot go with --library-min-rows");
    }
    if (graph && !output.empty() && output != "-" &&
        !llvm::StringRef(output).ends_with(".svg") &&
        !llvm::StringRef(output).ends_with(".dot"))
      return fail("--emit=graph writes SVG or DOT: -o must end in .svg or "
                  ".dot");
    // Opening -o truncates it: not one of the model's files.
    FileRoles files;
    files.noteModel(model);
    if (llvm::Error e = files.checkOutput(output, "the output (-o)"))
      return fail(std::move(e));
    if (llvm::Error e = files.checkDumpDirectory(dumpIR))
      return fail(std::move(e));
    // --cache-only fills the weight cache too, as translate would.
    auto loaded =
        loadModelTimed(model, timing, cacheOnly ? cache.directory() : "");
    if (!loaded)
      return fail(loaded.takeError());
    // Only a decoder keeps keys and values: say so rather than let the
    // option pass as if it had done something.
    if (!kvType.name().empty() && kvType.name() != "auto" &&
        loaded->desc.arch.encoderOnly())
      llvm::errs() << "warning: --kv-type has no effect: " << model
                   << " is an encoder-only model (no decoder keys and "
                      "values to store)\n";
    if (cacheOnly)
      return fillCache(std::move(*loaded), *library);
    auto type = computeType.resolve(loaded->desc);
    if (!type)
      return fail(type.takeError());
    // What `translate` compiles on this machine (the runtime's own
    // pipelineFor), unless --library-min-rows says otherwise.
    runtime::CompileOptions compile;
    compile.useLibraryKernels = *library;
    compile.computeType = *type;
    compile.quantizeOutputProjection = computeType.outputProjection();
    compile.keyValueType = *kv;
    compile.timing = timing.root();
    mlir::tfm::PipelineOptions pipeline = runtime::pipelineFor(compile);
    if (libraryMinRows > 0)
      pipeline.libraryMinRows = libraryMinRows;
    pipeline.printLocations = locations;
    std::string path = output;
    auto text = graph ? emitGraph(*loaded, pipeline, path)
                      : mlir::tfm::emitModel(*loaded, *stage, dumpIR, pipeline);
    if (!text)
      return fail(text.takeError());
    // Without Graphviz, -o F.svg becomes F.dot: checked as well.
    if (path != output)
      if (llvm::Error e = files.checkOutput(path, "the output (-o)"))
        return fail(std::move(e));
    auto os = openOutput(path);
    if (!os)
      return fail(os.takeError());
    **os << *text;
    if (llvm::Error e = finishOutput(**os, path))
      return fail(std::move(e));
    return 0;
  }

private:
  /// --emit=graph: SVG through Graphviz, or DOT (asked for with a .dot
  /// output, or when `dot` is missing: then one warning, and an output
  /// named FILE.svg becomes FILE.dot).
  llvm::Expected<std::string> emitGraph(const frontend::Model &loaded,
                                        const mlir::tfm::PipelineOptions &p,
                                        std::string &path) {
    if (!dumpIR.empty())
      if (auto e = mlir::tfm::emitModel(loaded, mlir::tfm::Stage::Fused,
                                        dumpIR, p);
          !e)
        return e.takeError();
    auto dot = mlir::tfm::emitGraph(loaded, p);
    if (!dot || llvm::StringRef(path).ends_with(".dot"))
      return dot;
    auto svg = mlir::tfm::renderSvg(*dot);
    if (svg)
      return svg;
    std::string instead = path;
    if (llvm::StringRef(path).ends_with(".svg"))
      path = instead = path.substr(0, path.size() - 4) + ".dot";
    llvm::errs() << "warning: " << llvm::toString(svg.takeError())
                 << "; writing the graph as DOT"
                 << (instead.empty() || instead == "-" ? ""
                                                       : " to " + instead)
                 << "\n";
    return dot;
  }

  /// -o is not the --dump-ir directory nor one of the files it gets (which
  /// the dump would write and -o then overwrite, or the other way round).
  llvm::Error checkOutputBesideDump() const {
    if (dumpIR.empty() || output.empty() || output == "-")
      return llvm::Error::success();
    // Symbolic links resolved where the paths exist already.
    auto resolved = [](llvm::StringRef p) {
      llvm::SmallString<256> path(p.empty() ? "." : p);
      llvm::SmallString<256> real;
      if (!llvm::sys::fs::real_path(path, real))
        return std::string(real);
      llvm::sys::fs::make_absolute(path);
      llvm::sys::path::remove_dots(path, /*remove_dot_dot=*/true);
      return std::string(path);
    };
    std::string dir = resolved(dumpIR);
    if (resolved(output) == dir)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "-o " + output +
                                         " is the --dump-ir directory");
    llvm::StringRef name = llvm::sys::path::filename(output);
    if (resolved(llvm::sys::path::parent_path(output)) == dir &&
        name.size() > 3 && name[0] == '0' && name[1] >= '1' && name[1] <= '6' &&
        name[2] == '-')
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "-o " + output + " is a file --dump-ir " + dumpIR +
              " writes (its stages are named 01-tfm.mlir to 06-asm.s)");
    return llvm::Error::success();
  }

  /// --cache-only: compiles exactly what `translate` (or, for an
  /// encoder-only model, `encode`) loads, through the cache.
  int fillCache(frontend::Model loaded, bool library) {
    runtime::SessionOptions options;
    options.useLibraryKernels = library;
    if (!computeType.apply(options) || !kvType.apply(options))
      return 1;
    // As for translate: the stages are written and the entry refreshed.
    options.dumpDir = dumpIR;
    options.timing = timing.root();
    return fillCompileCache(std::move(loaded), std::move(options),
                            cache.directory());
  }

  cl::SubCommand sub;
  cl::opt<std::string> model, output, dumpIR, emit;
  cl::opt<bool> cacheOnly, locations;
  IntegerOption<int> libraryMinRows;
  KernelsOption kernels;
  ComputeTypeOptions computeType;
  KeyValueTypeOption kvType;
  CacheOptions cache;
  TimingOption timing;
};

} // namespace

std::unique_ptr<Command> createCompileCommand(cl::OptionCategory &cat) {
  return std::make_unique<CompileCommand>(cat);
}

} // namespace tfmc::driver
