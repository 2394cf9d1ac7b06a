//===- OpGraph.cpp - the fused graph as a picture -------------------------===//
#include "compiler/Pipelines/OpGraph.h"
#include "frontends/model/FileSupport.h"

#include "dialects/tfm/IR/TfmDialect.h"
#include "dialects/tfm/IR/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// "?x?x256" for tensor<?x?x256xf32>; "f16" etc. as the element type.
std::string shapeOf(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped)
    return "";
  std::string out;
  llvm::raw_string_ostream os(out);
  for (auto [i, d] : llvm::enumerate(shaped.getShape()))
    os << (i ? "x" : "") << (ShapedType::isDynamic(d) ? "?" : std::to_string(d));
  return out;
}

std::string elementOf(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped)
    return "";
  std::string out;
  llvm::raw_string_ostream os(out);
  shaped.getElementType().print(os);
  return out;
}

/// Escapes text for a DOT double-quoted label ("\n" line breaks kept).
std::string escape(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

/// What the fusion passes made of an op ("" for a plain one), and the
/// extra lines of its label.
struct Description {
  std::string fused;
  std::vector<std::string> lines;
};

Description describe(Operation *op,
                     const llvm::DenseMap<Value, std::string> &weights) {
  Description d;
  auto weightName = [&](Value v) -> std::string {
    auto it = weights.find(v);
    return it == weights.end() ? "" : it->second;
  };
  if (auto linear = dyn_cast<LinearOp>(op)) {
    Type w = linear.getWeight().getType();
    d.lines.push_back("weight " + shapeOf(w) + " " + elementOf(w) +
                      (linear.getScale() ? " (per-row scales)" : ""));
    int64_t slices = mergedProjectionCount(linear);
    if (slices > 1)
      d.fused = "merged projections (" + std::to_string(slices) + ")";
    if (linear.getActivation() != Activation::none)
      d.fused += (d.fused.empty() ? "" : " + ") +
                 stringifyActivation(linear.getActivation()).str();
    // A merged projection's weight names its parts ("a|b|c").
    if (std::string name = weightName(linear.getWeight()); !name.empty())
      for (llvm::StringRef part : llvm::split(name, '|'))
        d.lines.push_back(part.str());
  } else if (isa<LinearArgmaxOp, LinearTopkOp>(op)) {
    auto argmax = dyn_cast<LinearArgmaxOp>(op);
    Value weight =
        argmax ? argmax.getWeight() : cast<LinearTopkOp>(op).getWeight();
    d.fused = argmax
                  ? "projection + greedy choice (no logits stored)"
                  : "projection + log_softmax + best candidates (no logits "
                    "stored)";
    Type w = weight.getType();
    d.lines.push_back("weight " + shapeOf(w) + " " + elementOf(w));
    if (std::string name = weightName(weight); !name.empty())
      d.lines.push_back(name);
  } else if (auto attention = dyn_cast<AttentionOp>(op)) {
    d.fused = "scores + " +
              stringifyMaskKind(attention.getMaskKind()).str() +
              " mask + softmax + values";
    d.lines.push_back("heads " + std::to_string(attention.getNumHeads()));
    if (isa<MemRefType>(attention.getKey().getType()))
      d.lines.push_back("keys/values: KV cache " +
                        elementOf(attention.getKey().getType()));
    if (attention.getKeyRows())
      d.lines.push_back("shared source rows (key_rows)");
  } else if (isa<AddLayerNormOp>(op)) {
    d.fused = "residual + LayerNorm";
  } else if (auto mha = dyn_cast<MultiHeadAttentionOp>(op)) {
    d.lines.push_back("heads " + std::to_string(mha.getNumHeads()) + ", " +
                      stringifyMaskKind(mha.getMaskKind()).str() + " mask");
  } else if (auto slice = dyn_cast<SliceOp>(op)) {
    d.lines.push_back("features from " + std::to_string(slice.getOffset()));
  } else if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
    if (std::string name = weightName(embedding.getTable()); !name.empty())
      d.lines.push_back(name);
  } else if (auto positions = dyn_cast<PositionalEncodingOp>(op)) {
    std::string name = weightName(positions.getTable());
    d.lines.push_back(name.empty() ? "sinusoid table" : name);
  }
  return d;
}

class GraphPrinter {
public:
  explicit GraphPrinter(llvm::raw_ostream &os) : os(os) {}

  void function(func::FuncOp func, int index) {
    std::string prefix = "f" + std::to_string(index) + "_";
    os << "  subgraph cluster_" << index << " {\n"
       << "    label=\"" << escape(func.getName()) << "\"; fontsize=18;\n"
       << "    style=rounded; color=gray60;\n";
    // Arguments: inputs and caches are nodes; weights are named on the ops
    // that use them.
    llvm::DenseMap<Value, std::string> nodes, weights;
    std::vector<std::string> argumentNodes;
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto role = [&](llvm::StringRef attr) -> std::string {
        if (auto s = func.getArgAttrOfType<StringAttr>(i, attr))
          return s.getValue().str();
        return "";
      };
      if (std::string w = role(kWeightArgAttr); !w.empty()) {
        weights[arg] = w;
        continue;
      }
      std::string input = role(kInputArgAttr), cache = role(kCacheArgAttr);
      if (input.empty() && cache.empty())
        continue;
      std::string id = prefix + "arg" + std::to_string(i);
      nodes[arg] = id;
      argumentNodes.push_back(id);
      std::string label = (cache.empty() ? input : cache) + "\n" +
                          shapeOf(arg.getType()) +
                          (shapeOf(arg.getType()).empty() ? "" : " ") +
                          elementOf(arg.getType());
      os << "    " << id << " [label=\"" << escape(label) << "\", shape="
         << (cache.empty() ? "ellipse" : "cylinder")
         << ", style=filled, fillcolor=\""
         << (cache.empty() ? "#dbe9f6" : "#e8def8") << "\"];\n";
    }
    if (!argumentNodes.empty()) {
      os << "    { rank=source;";
      for (const std::string &id : argumentNodes)
        os << " " << id << ";";
      os << " }\n";
    }
    int opIndex = 0;
    func.walk([&](Operation *op) {
      if (op->getDialect() == nullptr ||
          op->getDialect()->getNamespace() != TfmDialect::getDialectNamespace())
        return;
      std::string id = prefix + "op" + std::to_string(opIndex++);
      for (Value result : op->getResults())
        nodes[result] = id;
      Description d = describe(op, weights);
      std::string kind = op->getName().getStringRef().str();
      if (auto linear = dyn_cast<LinearOp>(op))
        kind += " " + stringifyActivation(linear.getActivation()).str();
      if (auto attention = dyn_cast<AttentionOp>(op))
        kind += " " + stringifyMaskKind(attention.getMaskKind()).str();
      std::string label = kind;
      if (std::string name = modelNameOf(op); !name.empty())
        label += "\n" + name;
      if (op->getNumResults() == 1)
        label += "\n-> " + shapeOf(op->getResult(0).getType()) + " " +
                 elementOf(op->getResult(0).getType());
      for (const std::string &line : d.lines)
        label += "\n" + line;
      if (!d.fused.empty())
        label += "\nfused: " + d.fused;
      os << "    " << id << " [label=\"" << escape(label) << "\"";
      if (!d.fused.empty())
        os << ", fillcolor=\"#fde0b8\", penwidth=2";
      os << ", tooltip=\"" << escape(kind) << "\"];\n";
      for (Value operand : op->getOperands()) {
        auto it = nodes.find(operand);
        if (it == nodes.end())
          continue; // a weight, or a constant
        os << "    " << it->second << " -> " << id << " [label=\""
           << escape(shapeOf(operand.getType())) << "\"];\n";
      }
    });
    // Results: exit nodes named as the runtime reads them.
    func.walk([&](func::ReturnOp ret) {
      for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
        std::string name = "result " + std::to_string(i);
        if (auto s = func.getResultAttrOfType<StringAttr>(i, kOutputResultAttr))
          name = s.getValue().str();
        std::string id = prefix + "out" + std::to_string(i);
        os << "    " << id << " [label=\"" << escape(name) << "\", "
           << "shape=doubleoctagon, style=filled, fillcolor=\"#d5f0dd\"];\n";
        auto it = nodes.find(value);
        if (it != nodes.end())
          os << "    " << it->second << " -> " << id << ";\n";
      }
    });
    os << "  }\n";
  }

private:
  llvm::raw_ostream &os;
};

} // namespace

std::string mlir::tfm::printOpGraph(ModuleOp module) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "digraph \"tfm\" {\n"
     << "  rankdir=TB; compound=true; fontname=\"Helvetica\";\n"
     << "  node [shape=box, style=\"rounded,filled\", fillcolor=white, "
        "fontname=\"Helvetica\", fontsize=10];\n"
     << "  edge [fontname=\"Helvetica\", fontsize=8, color=gray40];\n";
  GraphPrinter printer(os);
  int index = 0;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      printer.function(func, index++);
  os << "}\n";
  return out;
}

int64_t mlir::tfm::countTfmOps(ModuleOp module) {
  int64_t n = 0;
  module.walk([&](Operation *op) {
    if (op->getDialect() &&
        op->getDialect()->getNamespace() == TfmDialect::getDialectNamespace())
      ++n;
  });
  return n;
}

llvm::Expected<std::string> mlir::tfm::renderSvg(llvm::StringRef dot) {
  auto fail = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   message.str().c_str());
  };
  llvm::ErrorOr<std::string> program = llvm::sys::findProgramByName("dot");
  if (!program)
    return fail("Graphviz 'dot' is not installed (Debian: graphviz)");
  llvm::SmallString<128> in, out, err;
  if (llvm::sys::fs::createTemporaryFile("tfmc-graph", "dot", in) ||
      llvm::sys::fs::createTemporaryFile("tfmc-graph", "svg", out) ||
      llvm::sys::fs::createTemporaryFile("tfmc-graph", "err", err))
    return fail("cannot create temporary files for Graphviz");
  auto cleanup = [&] {
    llvm::sys::fs::remove(in);
    llvm::sys::fs::remove(out);
    llvm::sys::fs::remove(err);
  };
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(in, ec);
    if (ec) {
      cleanup();
      return fail("cannot write '" + in + "': " + ec.message());
    }
    os << dot;
    os.close();
    if (std::error_code ec = tfmc::frontend::takeWriteError(os)) {
      cleanup();
      return fail("cannot write '" + in + "': " + ec.message());
    }
  }
  std::optional<llvm::StringRef> redirects[] = {
      llvm::StringRef(in), llvm::StringRef(out), llvm::StringRef(err)};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(*program, {*program, "-Tsvg"},
                                         std::nullopt, redirects,
                                         /*SecondsToWait=*/120, 0, &message);
  auto svg = llvm::MemoryBuffer::getFile(out);
  auto errors = llvm::MemoryBuffer::getFile(err);
  cleanup();
  if (status != 0 || !svg) {
    std::string why = errors ? llvm::StringRef((*errors)->getBuffer())
                                   .trim()
                                   .split('\n')
                                   .first.str()
                             : message;
    return fail("Graphviz 'dot' failed: " + (why.empty() ? message : why));
  }
  return (*svg)->getBuffer().str();
}
