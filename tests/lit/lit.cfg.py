# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "tfmc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tfmc_obj_root, "tests", "lit")
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
# tfmc caches compiled models; the tests use a cache of their own in the
# build tree (never the user's ~/.cache/tfmc). cache.test uses others.
config.environment["TFMC_CACHE_DIR"] = os.path.join(
    config.tfmc_obj_root, "tests", "lit", "tfmc-cache")
llvm_config.use_default_substitutions()
# FileCheck, not and count live in the LLVM tools directory.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["tfm-opt", "tfmc", "tfmc-serve"], [os.path.join(config.tfmc_obj_root, "bin")])
config.substitutions.append(
    ("%fixtures", os.path.join(config.tfmc_src_root, "tests", "e2e", "fixtures")))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(
    ("%examples", os.path.join(config.tfmc_src_root, "examples")))
if config.tfmc_onednn:
    config.available_features.add("onednn")
