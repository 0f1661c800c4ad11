# lit configuration for coconetc's golden tests (IR/AST output and diagnostics).
import os
import lit.formats

config.name = "coconetc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".cnet", ".test"]
config.test_source_root = os.path.dirname(__file__)
# Outputs (%t) go under the build folder when CMake runs the suite.
if lit_config.params.get("exec_root"):
    config.test_exec_root = lit_config.params["exec_root"]
config.excludes = ["Inputs", "lit.cfg.py"]

coconetc = lit_config.params.get("coconetc")
tools_dir = lit_config.params.get("tools_dir", "/usr/lib/llvm-14/bin")
source_root = lit_config.params.get("source_root",
                                    os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
if not coconetc:
    lit_config.fatal("pass --param coconetc=PATH/TO/coconetc")

config.environment["PATH"] = os.pathsep.join([tools_dir, config.environment.get("PATH", os.environ["PATH"])])
# (the build folder first: "%coconetc" is a prefix of it)
# %timeout N: N seconds, ten times N where the suite runs a sanitized coconetc (--param
# sanitized=1), which runs about ten times slower (long-chain.test's 200,000 statements: 3 s, 28 s).
if lit_config.params.get("sanitized"):
    config.substitutions.append((r"%timeout ([0-9]+)", r"timeout \g<1>0"))
else:
    config.substitutions.append(("%timeout", "timeout"))
config.substitutions.append(("%coconetc_dir", os.path.dirname(os.path.abspath(coconetc))))
config.substitutions.append(("%coconetc", coconetc))
config.substitutions.append(("%samples", os.path.join(source_root, "samples")))
config.substitutions.append(("%bench", os.path.join(source_root, "tools", "bench")))
config.substitutions.append(("%stdlib", os.path.join(source_root, "stdlib")))
config.substitutions.append(("%python", "python3"))
