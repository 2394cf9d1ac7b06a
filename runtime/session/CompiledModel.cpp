//===- CompiledModel.cpp - a model's functions, JIT-compiled --------------===//
#include "runtime/session/CompiledModel.h"

#include "compiler/JIT/JitModule.h"
#include "compiler/Pipelines/Pipelines.h"
#include "frontends/importer/Importer.h"
#include "runtime/kernels/KernelAbi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include <chrono>

using namespace tfmc;
using namespace tfmc::runtime;

struct CompiledModel::Impl {
  mlir::MLIRContext context;
  std::unique_ptr<mlir::tfm::JitModule> jit;
};

CompiledModel::CompiledModel() : impl(std::make_unique<Impl>()) {}
CompiledModel::~CompiledModel() = default;

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
      spec.element = memref.getElementType().isF32() ? ArgSpec::Element::F32
                                                     : ArgSpec::Element::I32;
      for (int64_t d : memref.getShape())
        spec.shape.push_back(mlir::ShapedType::isDynamic(d) ? -1 : d);
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

const CompiledFunction *CompiledModel::function(llvm::StringRef name) const {
  for (const CompiledFunction &f : functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

llvm::Expected<std::unique_ptr<CompiledModel>>
CompiledModel::compile(const frontend::Architecture &arch,
                       int64_t sourceVocabSize, int64_t targetVocabSize,
                       const CompileOptions &options) {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<CompiledModel> model(new CompiledModel());
  mlir::MLIRContext &context = model->impl->context;
  mlir::DialectRegistry registry;
  mlir::tfm::registerPipelineDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();

  frontend::ImportOptions import;
  import.encode = import.decodeStep = options.translation;
  import.forward = options.teacherForcing;
  import.encoderStates = options.encoderStates;
  mlir::OwningOpRef<mlir::ModuleOp> module = frontend::importModel(
      context, arch, sourceVocabSize, targetVocabSize, import);
  using mlir::tfm::Stage;
  mlir::tfm::PipelineOptions pipeline;
  if (options.useLibraryKernels && !haveLibraryKernels())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "this tfmc was built without oneDNN");
  pipeline.useLibraryCalls = options.useLibraryKernels;
  if (llvm::Error e = mlir::tfm::lowerToStage(*module, Stage::Tfm, Stage::Loops,
                                              pipeline, options.dumpDir))
    return std::move(e);
  for (const char *name :
       {"encode", "decode_step", "forward", "encode_states"}) {
    auto func = module->lookupSymbol<mlir::func::FuncOp>(name);
    if (!func)
      continue;
    auto args = describeArguments(func);
    if (!args)
      return args.takeError();
    model->functions.push_back({name, std::move(*args), nullptr});
  }
  if (llvm::Error e = mlir::tfm::lowerToStage(
          *module, Stage::Loops, Stage::LLVM, pipeline, options.dumpDir))
    return std::move(e);
  auto jit = mlir::tfm::JitModule::create(*module, {}, kernelSymbols());
  if (!jit)
    return jit.takeError();
  model->impl->jit = std::move(*jit);
  for (CompiledFunction &f : model->functions) {
    auto entry = model->impl->jit->lookup(f.name);
    if (!entry)
      return entry.takeError();
    f.entry = *entry;
  }
  model->seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return std::move(model);
}
