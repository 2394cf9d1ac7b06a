//===- CompiledModel.cpp - a model's functions, JIT-compiled --------------===//
//
// Cold: import -> tfm -> loops (the argument lists are read here) -> LLVM
// dialect -> host object (LLVM O3 + codegen) -> the compile cache.
// Warm: the object and argument lists from the cache, no MLIR at all.
// Either way the object is linked in process by the same JitModule::load.
//
//===----------------------------------------------------------------------===//
#include "runtime/session/CompiledModel.h"
#include "runtime/session/CompilePipeline.h"

#include "compiler/JIT/CompileCache.h"
#include "compiler/JIT/JitModule.h"
#include "compiler/Pipelines/Pipelines.h"
#include "dialects/tfm/Transforms/Passes.h"
#include "frontends/importer/Importer.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/KernelIsa.h"
#include "runtime/kernels/ProfileProbes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/Timing.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <chrono>
#include <malloc.h>
#include <optional>

using namespace tfmc;
using namespace tfmc::runtime;

struct CompiledModel::Impl {
  std::unique_ptr<mlir::tfm::JitModule> jit;
};

CompiledModel::CompiledModel() : impl(std::make_unique<Impl>()) {}
CompiledModel::~CompiledModel() = default;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Reads the argument list of a destination-passing function at the loops
/// stage.
static llvm::Expected<std::vector<ArgSpec>>
describeArguments(mlir::func::FuncOp func) {
  std::vector<ArgSpec> specs;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    ArgSpec spec;
    bool tagged = false;
    for (auto [attr, kind] :
         {std::pair{frontend::kWeightAttr, ArgSpec::Kind::Weight},
          std::pair{frontend::kWeightScaleAttr, ArgSpec::Kind::WeightScale},
          std::pair{frontend::kInputAttr, ArgSpec::Kind::Input},
          std::pair{frontend::kCacheAttr, ArgSpec::Kind::Cache},
          std::pair{frontend::kOutputAttr, ArgSpec::Kind::Output}}) {
      if (auto name = func.getArgAttrOfType<mlir::StringAttr>(i, attr)) {
        spec.kind = kind;
        spec.name = name.str();
        tagged = true;
      }
    }
    if (!tagged)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "argument %u of '%s' has no role", i,
                                     func.getName().str().c_str());
    mlir::Type type = func.getArgument(i).getType();
    if (type.isIndex()) {
      spec.element = ArgSpec::Element::Index;
    } else {
      auto memref = mlir::cast<mlir::MemRefType>(type);
      mlir::Type element = memref.getElementType();
      spec.element = element.isF32()          ? ArgSpec::Element::F32
                     : element.isF16()        ? ArgSpec::Element::F16
                     : element.isBF16()       ? ArgSpec::Element::BF16
                     : element.isInteger(8)   ? ArgSpec::Element::I8
                                              : ArgSpec::Element::I32;
      for (int64_t d : memref.getShape())
        spec.shape.push_back(mlir::ShapedType::isDynamic(d) ? -1 : d);
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

//===----------------------------------------------------------------------===//
// Cache metadata: the functions' argument lists as JSON.
//===----------------------------------------------------------------------===//

static constexpr const char *kKindNames[] = {"weight", "input", "cache",
                                             "output", "weight_scale"};
static constexpr const char *kElementNames[] = {"f32", "i32", "index", "f16",
                                                "i8",  "bf16"};

static std::string writeMetadata(const std::vector<CompiledFunction> &fns,
                                 const std::vector<ProfiledOp> &ops) {
  llvm::json::Array functions;
  for (const CompiledFunction &f : fns) {
    llvm::json::Array args;
    for (const ArgSpec &a : f.args) {
      llvm::json::Array shape;
      for (int64_t d : a.shape)
        shape.push_back(d);
      args.push_back(llvm::json::Object{
          {"kind", kKindNames[static_cast<int>(a.kind)]},
          {"element", kElementNames[static_cast<int>(a.element)]},
          {"name", a.name},
          {"shape", std::move(shape)}});
    }
    functions.push_back(
        llvm::json::Object{{"name", f.name}, {"args", std::move(args)}});
  }
  llvm::json::Array profile;
  for (const ProfiledOp &op : ops)
    profile.push_back(
        llvm::json::Array{op.function, op.kind, op.name, op.detail, op.flopRows,
                          op.flopRowKeys, op.bytesCall, op.bytesRows,
                          op.bytesRowKeys, op.bytesBatchKeys, op.arithmetic});
  return llvm::formatv("{0}", llvm::json::Value(llvm::json::Object{
                                  {"functions", std::move(functions)},
                                  {"profile", std::move(profile)}}))
      .str();
}

/// The profiled variant's table from a cache entry's "profile" array (one
/// array per id: its texts, its numbers, then its arithmetic); false when
/// malformed.
static bool readProfile(const llvm::json::Array &rows,
                        std::vector<ProfiledOp> &ops) {
  for (const llvm::json::Value &row : rows) {
    const llvm::json::Array *fields = row.getAsArray();
    if (!fields || fields->size() != 11)
      return false;
    ProfiledOp op;
    std::string *texts[] = {&op.function, &op.kind, &op.name, &op.detail};
    int64_t *numbers[] = {&op.flopRows,  &op.flopRowKeys,  &op.bytesCall,
                          &op.bytesRows, &op.bytesRowKeys, &op.bytesBatchKeys};
    for (int i = 0; i < 4; ++i) {
      std::optional<llvm::StringRef> text = (*fields)[i].getAsString();
      if (!text)
        return false;
      *texts[i] = text->str();
    }
    for (int i = 0; i < 6; ++i) {
      std::optional<int64_t> n = (*fields)[4 + i].getAsInteger();
      if (!n)
        return false;
      *numbers[i] = *n;
    }
    std::optional<llvm::StringRef> arithmetic = (*fields)[10].getAsString();
    if (!arithmetic)
      return false;
    op.arithmetic = arithmetic->str();
    ops.push_back(std::move(op));
  }
  return true;
}

/// The inverse of writeMetadata; nullopt for anything malformed.
static std::optional<std::vector<CompiledFunction>>
readMetadata(llvm::StringRef text, std::vector<ProfiledOp> &ops) {
  llvm::Expected<llvm::json::Value> root = llvm::json::parse(text);
  if (!root) {
    llvm::consumeError(root.takeError());
    return std::nullopt;
  }
  auto index = [](llvm::ArrayRef<const char *> names,
                  std::optional<llvm::StringRef> s) -> int {
    for (auto [i, n] : llvm::enumerate(names))
      if (s && *s == n)
        return static_cast<int>(i);
    return -1;
  };
  std::vector<CompiledFunction> fns;
  const llvm::json::Object *obj = root->getAsObject();
  const llvm::json::Array *functions =
      obj ? obj->getArray("functions") : nullptr;
  if (!functions)
    return std::nullopt;
  if (const llvm::json::Array *profile = obj->getArray("profile"))
    if (!readProfile(*profile, ops))
      return std::nullopt;
  for (const llvm::json::Value &fv : *functions) {
    const llvm::json::Object *f = fv.getAsObject();
    const llvm::json::Array *args = f ? f->getArray("args") : nullptr;
    std::optional<llvm::StringRef> name =
        f ? f->getString("name") : std::nullopt;
    if (!args || !name)
      return std::nullopt;
    CompiledFunction fn;
    fn.name = name->str();
    for (const llvm::json::Value &av : *args) {
      const llvm::json::Object *a = av.getAsObject();
      if (!a)
        return std::nullopt;
      int kind = index(kKindNames, a->getString("kind"));
      int element = index(kElementNames, a->getString("element"));
      std::optional<llvm::StringRef> argName = a->getString("name");
      const llvm::json::Array *shape = a->getArray("shape");
      if (kind < 0 || element < 0 || !argName || !shape)
        return std::nullopt;
      ArgSpec spec{static_cast<ArgSpec::Kind>(kind),
                   static_cast<ArgSpec::Element>(element),
                   argName->str(),
                   {}};
      for (const llvm::json::Value &d : *shape) {
        std::optional<int64_t> extent = d.getAsInteger();
        if (!extent)
          return std::nullopt;
        spec.shape.push_back(*extent);
      }
      fn.args.push_back(std::move(spec));
    }
    fns.push_back(std::move(fn));
  }
  return fns;
}

//===----------------------------------------------------------------------===//
// Compilation.
//===----------------------------------------------------------------------===//

std::string tfmc::runtime::defaultCacheDirectory() {
  return mlir::tfm::defaultCacheDirectory();
}

const CompiledFunction *CompiledModel::function(llvm::StringRef name) const {
  for (const CompiledFunction &f : functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

/// Runs `fn` inside a timer named `name` under `parent` (if any).
template <typename Fn>
static auto timed(mlir::TimingScope *parent, llvm::StringRef name, Fn fn) {
  if (!parent)
    return fn(static_cast<mlir::TimingScope *>(nullptr));
  mlir::TimingScope scope = parent->nest(name);
  return fn(&scope);
}

/// Import and lower down to a host object; fills `functions`.
static llvm::Expected<std::string>
compileObject(const frontend::Architecture &arch, int64_t sourceVocabSize,
              int64_t targetVocabSize, const CompileOptions &options,
              std::vector<CompiledFunction> &functions,
              std::vector<ProfiledOp> &profile) {
  // Single-threaded: on this machine's two cores MLIR's pass threads gain
  // nothing measurable, and a compile never races with the threads of a
  // concurrent caller.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  mlir::DialectRegistry registry;
  mlir::tfm::registerPipelineDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();

  frontend::ImportOptions import;
  import.encode = import.decodeStep = options.translation;
  import.forward = options.teacherForcing;
  import.encoderStates = options.encoderStates;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      timed(options.timing, "import", [&](mlir::TimingScope *) {
        return frontend::importModel(context, arch, sourceVocabSize,
                                     targetVocabSize, import);
      });
  using mlir::tfm::Stage;
  mlir::tfm::PipelineOptions pipeline = pipelineFor(options);
  if (llvm::Error e = mlir::tfm::lowerToStage(*module, Stage::Tfm, Stage::Loops,
                                              pipeline, options.dumpDir))
    return std::move(e);
  for (const char *name :
       {"encode", "decode_step", "decode_greedy", "decode_beam", "forward",
        "encode_states"}) {
    auto func = module->lookupSymbol<mlir::func::FuncOp>(name);
    if (!func)
      continue;
    auto args = describeArguments(func);
    if (!args)
      return args.takeError();
    functions.push_back({name, std::move(*args), nullptr});
  }
  if (auto table = (*module)->getAttrOfType<mlir::ArrayAttr>(
          mlir::tfm::kProfileTableAttr))
    for (mlir::Attribute entry : table) {
      auto dict = mlir::cast<mlir::DictionaryAttr>(entry);
      auto text = [&](llvm::StringRef key) {
        return mlir::cast<mlir::StringAttr>(dict.get(key)).str();
      };
      auto number = [&](llvm::StringRef key) {
        return mlir::cast<mlir::IntegerAttr>(dict.get(key)).getInt();
      };
      profile.push_back({text("function"), text("kind"), text("name"),
                         text("detail"), text("arithmetic"),
                         number("flop_rows"), number("flop_row_keys"),
                         number("bytes_call"), number("bytes_rows"),
                         number("bytes_row_keys"), number("bytes_batch_keys")});
    }
  if (llvm::Error e = mlir::tfm::lowerToStage(
          *module, Stage::Loops, Stage::LLVM, pipeline, options.dumpDir))
    return std::move(e);
  return timed(
      options.timing, "LLVM optimisation and code generation",
      [&](mlir::TimingScope *) { return mlir::tfm::emitObject(*module, {}); });
}

llvm::Expected<std::unique_ptr<CompiledModel>>
CompiledModel::compile(const frontend::Architecture &arch,
                       int64_t sourceVocabSize, int64_t targetVocabSize,
                       const CompileOptions &options) {
  auto start = std::chrono::steady_clock::now();
  if (options.useLibraryKernels && !haveLibraryKernels())
    return error("this tfmc was built without oneDNN");
  std::unique_ptr<CompiledModel> model(new CompiledModel());

  std::optional<mlir::tfm::CompileCache> cache;
  std::string key;
  if (!options.cacheDir.empty() && !buildIdentified())
    llvm::errs() << "warning: compile cache: cannot tell which file holds "
                    "this build's compiler; compiling without the cache\n";
  else if (!options.cacheDir.empty()) {
    cache.emplace(options.cacheDir, llvm::errs());
    key = cacheKey(arch, sourceVocabSize, targetVocabSize, options);
    model->cachePath = cache->entryPath(key);
  }

  std::string object;
  if (cache && options.dumpDir.empty() && !options.refreshCache) {
    timed(options.timing, "cache lookup", [&](mlir::TimingScope *) {
      std::optional<mlir::tfm::CompileCache::Entry> entry = cache->lookup(key);
      if (!entry)
        return;
      std::vector<ProfiledOp> ops;
      std::optional<std::vector<CompiledFunction>> fns =
          readMetadata(entry->metadata, ops);
      if (!fns) {
        llvm::errs() << "warning: compile cache: " << model->cachePath
                     << ": unreadable function list; recompiling\n";
        return;
      }
      model->functions = std::move(*fns);
      model->profile = std::move(ops);
      object = std::move(entry->object);
      model->cacheHit = true;
    });
  }
  if (!model->cacheHit) {
    auto compiled = compileObject(arch, sourceVocabSize, targetVocabSize,
                                  options, model->functions, model->profile);
    if (!compiled)
      return compiled.takeError();
    object = std::move(*compiled);
    // The compiler's heap (MLIR context, LLVM modules) is free now: give
    // its pages back before the weights and batches take memory (4 MB
    // off the peak of a compiling run).
    malloc_trim(0);
    if (cache)
      timed(options.timing, "cache store", [&](mlir::TimingScope *) {
        cache->store(key, writeMetadata(model->functions, model->profile),
                     object);
      });
  }

  llvm::Error linked = timed(
      options.timing, "JIT link", [&](mlir::TimingScope *) -> llvm::Error {
        auto symbols = kernelSymbols();
        for (auto &probe : profile::probeSymbols())
          symbols.push_back(probe);
        auto jit = mlir::tfm::JitModule::load(object, symbols);
        if (!jit)
          return jit.takeError();
        model->impl->jit = std::move(*jit);
        for (CompiledFunction &f : model->functions) {
          auto entry = model->impl->jit->lookup(f.name);
          if (!entry)
            return entry.takeError();
          f.entry = *entry;
        }
        return llvm::Error::success();
      });
  if (linked)
    return std::move(linked);
  model->seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return std::move(model);
}
