//===- CacheKey.cpp - the compiled-model cache key ------------------------===//
//
// The text whose hash names a compiled model in the cache: everything that
// changes the code (the build, LLVM, the architecture, the vocabularies,
// which functions, the pipeline options as pipelineFor() gives them, the
// host target) and nothing else (the weights, where the cache lives).
//
//===----------------------------------------------------------------------===//
#include "runtime/session/CompilePipeline.h"

#include "compiler/JIT/HostTarget.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/KernelIsa.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstring>
#include <elf.h>
#include <link.h>
#include <optional>

#ifndef TFMC_VERSION
#define TFMC_VERSION "unknown"
#endif

using namespace tfmc;
using namespace tfmc::runtime;

mlir::tfm::PipelineOptions
tfmc::runtime::pipelineFor(const CompileOptions &options) {
  mlir::tfm::PipelineOptions pipeline;
  pipeline.libraryMinRows = libraryKernelMinRows();
  pipeline.attentionPrefetchLevel = packed::aheadCacheLevel();
  pipeline.useLibraryCalls = options.useLibraryKernels;
  pipeline.computeType =
      frontend::stringifyComputeType(options.computeType).str();
  pipeline.quantizeOutputProjection = options.quantizeOutputProjection;
  pipeline.halfCaches =
      halfKeysValues(options.keyValueType, options.computeType);
  pipeline.profile = options.profile;
  pipeline.timing = options.timing;
  return pipeline;
}

/// "SIZE bytes, modified TIME" of `path`, or nothing when it cannot be read.
static std::optional<std::string> fileIdentity(const llvm::Twine &path) {
  llvm::sys::fs::file_status status;
  if (llvm::sys::fs::status(path, status) ||
      !llvm::sys::fs::is_regular_file(status))
    return std::nullopt;
  return llvm::formatv(
             "{0} bytes, modified {1}", status.getSize(),
             status.getLastModificationTime().time_since_epoch().count())
      .str();
}

/// The loaded object holding this code: its GNU build ID (the linker's
/// hash of the file, read from its PT_NOTE segments in memory, so that a
/// file replaced on disk while loaded cannot mislead it) and its name
/// ("" for the executable).
struct CodeObject {
  bool found = false;
  std::string buildId, name;
};

static CodeObject codeObject() {
  struct Search {
    uintptr_t address;
    CodeObject object;
  } search{reinterpret_cast<uintptr_t>(&codeObject), {}};
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        auto *s = static_cast<Search *>(data);
        bool holds = false;
        for (int i = 0; i < info->dlpi_phnum && !holds; ++i) {
          const ElfW(Phdr) &segment = info->dlpi_phdr[i];
          uintptr_t start = info->dlpi_addr + segment.p_vaddr;
          holds = segment.p_type == PT_LOAD && s->address >= start &&
                  s->address < start + segment.p_memsz;
        }
        if (!holds)
          return 0;
        s->object.found = true;
        s->object.name = info->dlpi_name ? info->dlpi_name : "";
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr) &segment = info->dlpi_phdr[i];
          if (segment.p_type != PT_NOTE)
            continue;
          auto *at =
              reinterpret_cast<const char *>(info->dlpi_addr + segment.p_vaddr);
          const char *end = at + segment.p_memsz;
          auto aligned = [](size_t n) { return (n + 3) & ~size_t(3); };
          while (at + sizeof(ElfW(Nhdr)) <= end) {
            const auto *note = reinterpret_cast<const ElfW(Nhdr) *>(at);
            const char *name = at + sizeof(ElfW(Nhdr));
            const auto *desc = reinterpret_cast<const unsigned char *>(
                name + aligned(note->n_namesz));
            const char *next =
                reinterpret_cast<const char *>(desc) + aligned(note->n_descsz);
            if (next > end)
              break;
            if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
                std::memcmp(name, "GNU", 4) == 0 && note->n_descsz > 0) {
              static constexpr char hex[] = "0123456789abcdef";
              for (size_t b = 0; b < note->n_descsz; ++b) {
                s->object.buildId += hex[desc[b] >> 4];
                s->object.buildId += hex[desc[b] & 15];
              }
              return 1;
            }
            at = next;
          }
        }
        return 1;
      },
      &search);
  return search.object;
}

/// The build that holds this code, so that a rebuilt tfmc never trusts
/// objects of an older lowering: the GNU build ID of the executable or
/// library holding it (each its own: tfmc and tfmc-serve, built from the
/// same sources, keep entries apart, since either can be rebuilt without
/// the other). Without a build ID (a link without --build-id), the file's
/// path, size and modification time, the executable's through
/// /proc/self/exe (dladdr names it by its argv[0], which `tfmc serve`
/// passes on to tfmc-serve). Empty when neither can be told: then the
/// cache is not used at all (an "unknown" shared by every build would
/// hand one build's objects to another). Worked out once per process.
static const std::string &buildIdentity() {
  static const std::string identity = []() -> std::string {
    CodeObject code = codeObject();
    if (!code.found)
      return "";
    if (!code.buildId.empty())
      return "build-id " + code.buildId;
    std::string file = code.name;
    if (file.empty()) {
      llvm::SmallString<256> exe;
      if (llvm::sys::fs::real_path("/proc/self/exe", exe))
        return "";
      file = std::string(exe);
    }
    std::optional<std::string> own = fileIdentity(file);
    return own ? file + ", " + *own : "";
  }();
  return identity;
}

bool tfmc::runtime::buildIdentified() { return !buildIdentity().empty(); }

std::string CompiledModel::cacheKey(const frontend::Architecture &arch,
                                    int64_t sourceVocabSize,
                                    int64_t targetVocabSize,
                                    const CompileOptions &options) {
  using frontend::LayerKind;
  mlir::tfm::PipelineOptions pipeline = pipelineFor(options);
  std::string key;
  llvm::raw_string_ostream os(key);
  os << "format: tfmc compiled model 1\n"
     << "tfmc: " << TFMC_VERSION << "; build " << buildIdentity() << "\n"
     << "llvm: " << LLVM_VERSION_STRING << "\n"
     << "architecture: d_model " << arch.dModel << ", heads " << arch.numHeads
     << ", layers " << arch.numEncoderLayers << "+" << arch.numDecoderLayers
     << ", d_ff " << arch.dFF << ", max_len " << arch.maxLen << ", activation "
     << frontend::stringifyActivation(arch.activation) << ", layer_norm_eps "
     << llvm::formatv("{0:e16}", arch.layerNormEps).str()
     << ", embedding_scale " << arch.embeddingScale << ", positions "
     << arch.positionalEncoding << "\n"
     << "encoder layer: " << arch.layerRecipe(LayerKind::Encoder).str()
     << "; final norm " << arch.finalNorm(LayerKind::Encoder) << "\n";
  if (!arch.encoderOnly())
    os << "decoder layer: " << arch.layerRecipe(LayerKind::Decoder).str()
       << "; final norm " << arch.finalNorm(LayerKind::Decoder) << "\n";
  os << "vocabularies: " << sourceVocabSize << " " << targetVocabSize << "\n";
  // An encoder-only model compiles its encoder states alone, whatever is
  // asked of translation (compile --cache-only asked for it, encode not:
  // two keys for one module), and has no keys or values to store.
  if (arch.encoderOnly())
    os << "functions: encoder states " << options.encoderStates << "\n";
  else
    os << "functions: translation " << options.translation
       << ", teacher forcing " << options.teacherForcing << ", encoder states "
       << options.encoderStates << "\n";
  os << "kernels: " << (pipeline.useLibraryCalls ? "library" : "loops")
     << ", library from " << pipeline.libraryMinRows << " rows\n"
     << "attention prefetches into: L" << pipeline.attentionPrefetchLevel
     << "\n"
     << "compute type: " << pipeline.computeType
     << (pipeline.computeType != "float32" && !pipeline.quantizeOutputProjection
             ? " (output projection float32)"
             : "")
     << "\n"
     << "keys and values: "
     << (pipeline.halfCaches && !arch.encoderOnly() ? "float16" : "float32")
     << "\n"
     << "target: " << mlir::tfm::hostTargetDescription() << "\n";
  if (pipeline.profile)
    os << "profiled: probes around every op\n";
  return key;
}
