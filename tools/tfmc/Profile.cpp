//===- Profile.cpp - where tfmc profile writes its profile ----------------===//
#include "tools/tfmc/Command.h"
#include "tools/tfmc/OutputPaths.h"

#include "tfmc/Translator.h"

namespace cl = llvm::cl;

namespace tfmc::driver {

ProfileOutput::ProfileOutput(cl::SubCommand &sub, cl::OptionCategory &cat)
    : format("profile-format",
             cl::desc("The profile as 'md' (a Markdown table), 'json' or "
                      "'csv'"),
             cl::value_desc("md|json|csv"), cl::init("md"), cl::sub(sub),
             cl::cat(cat)),
      output("profile-output",
             cl::desc("Write the profile to FILE (default: stderr; the "
                      "translations go to -o or stdout as with translate)"),
             cl::value_desc("FILE"), cl::init(""), cl::sub(sub), cl::cat(cat)),
      svg("profile-svg",
          cl::desc("Also draw the profile as a bar chart (SVG) in FILE"),
          cl::value_desc("FILE"), cl::init(""), cl::sub(sub), cl::cat(cat)) {}

ProfileOutput::~ProfileOutput() = default;

llvm::Error ProfileOutput::checkPaths(FileRoles &files) const {
  if (format != "md" && format != "json" && format != "csv")
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--profile-format: expected md, json or csv, got '" + format + "'");
  if (llvm::Error e =
          files.checkOutput(output, "the profile (--profile-output)"))
    return e;
  if (llvm::Error e =
          files.checkOutput(svg, "the profile's picture (--profile-svg)"))
    return e;
  // As compile's --emit=graph: a picture named .png would be SVG text that
  // image viewers refuse (devices, /dev/stdout or a pipe's /dev/fd/N, are
  // not names).
  llvm::StringRef picture(svg);
  if (!picture.empty() && picture != "-" && !picture.starts_with("/dev/") &&
      !picture.ends_with_insensitive(".svg"))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--profile-svg writes SVG: the file name must end in .svg, got '" +
            svg + "'");
  return llvm::Error::success();
}

llvm::Error ProfileOutput::open() {
  for (auto [path, stream] :
       {std::pair{&output, &outputStream}, std::pair{&svg, &svgStream}}) {
    if (path->empty())
      continue;
    auto os = openOutput(*path);
    if (!os)
      return os.takeError();
    *stream = std::move(*os);
  }
  return llvm::Error::success();
}

llvm::Error ProfileOutput::write(const tfmc::Translator &translator) {
  auto profile = translator.profile();
  if (!profile)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   profile.error());
  auto text = formatProfile(*profile, format);
  if (!text)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   text.error());
  if (!outputStream) {
    llvm::errs() << *text;
  } else {
    *outputStream << *text;
    if (llvm::Error e = finishOutput(*outputStream, output))
      return e;
  }
  if (svgStream) {
    auto picture = formatProfile(*profile, "svg");
    if (!picture)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     picture.error());
    *svgStream << *picture;
    if (llvm::Error e = finishOutput(*svgStream, svg))
      return e;
  }
  return llvm::Error::success();
}

} // namespace tfmc::driver
