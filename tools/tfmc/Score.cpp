//===- Score.cpp - tfmc score: corpus BLEU and chrF -----------------------===//
//
// tfmc score --hyp FILE --ref FILE [--ref FILE ...]
//
//===----------------------------------------------------------------------===//
#include "tools/tfmc/Command.h"

#include "runtime/scoring/ScoreFiles.h"

namespace cl = llvm::cl;

namespace tfmc::driver {
namespace {

class ScoreCommand : public Command {
public:
  explicit ScoreCommand(cl::OptionCategory &cat)
      : sub("score",
            "Corpus BLEU and chrF of translations (sacreBLEU-compatible)"),
        hypFile("hyp", cl::desc("Translations, one per line"),
                cl::value_desc("FILE"), cl::Required, cl::sub(sub),
                cl::cat(cat)),
        refFiles("ref",
                 cl::desc("Reference translations, one per line "
                          "(repeatable)"),
                 cl::value_desc("FILE"), cl::OneOrMore, cl::sub(sub),
                 cl::cat(cat)) {}

  cl::SubCommand &subcommand() override { return sub; }

  int run() override {
    auto report = scoring::scoreFiles(hypFile, refFiles);
    if (!report)
      return fail(report.takeError());
    llvm::outs() << report->bleu.format() << "\n"
                 << report->chrf.format() << "\n";
    return 0;
  }

private:
  cl::SubCommand sub;
  cl::opt<std::string> hypFile;
  cl::list<std::string> refFiles;
};

} // namespace

std::unique_ptr<Command> createScoreCommand(cl::OptionCategory &cat) {
  return std::make_unique<ScoreCommand>(cat);
}

} // namespace tfmc::driver
