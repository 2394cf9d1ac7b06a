// A program that embeds tfmc: translates its arguments with a model.
//   embed MODEL.json SENTENCE...
#include <tfmc/Translator.h>

#include <iostream>

int main(int argc, char **argv) {
  if (argc < 3) {
    std::cerr << "usage: embed MODEL.json SENTENCE...\n";
    return 2;
  }
  tfmc::LoadOptions load;
  load.useCache = false; // this example compiles fresh each run
  auto translator = tfmc::Translator::load(argv[1], load);
  if (!translator) {
    std::cerr << "error: " << translator.error() << "\n";
    return 1;
  }
  tfmc::TranslateOptions options;
  options.beamSize = 4;
  auto out = (*translator)->translate({argv + 2, argv + argc}, options);
  if (!out) {
    std::cerr << "error: " << out.error() << "\n";
    return 1;
  }
  for (const tfmc::Translation &t : *out)
    std::cout << (t.error.empty() ? t.best().text : "error: " + t.error)
              << "\n";
  return 0;
}
