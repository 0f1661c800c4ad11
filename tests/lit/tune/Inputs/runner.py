#!/usr/bin/env python3
"""A stand-in for a GPU machine in coconetc tune's tests (--runner): `build SRC BUILD` makes
BUILD/NAME_main from SRC/NAME_main.cu (a file naming its sources); `check BIN --spawn P --check DIR`
passes where DIR holds verify's vectors for P ranks; `bench BIN ... --iters K` prints the driver's
JSON line with a time made up from the build's tuning constants: fastest at kRowSplitMin = 2048
and kRowSplitBlocks = 4 (not the table's values), so that the search has something to find.
`bench` fails for a build whose constants say kRowSplitMin = 16384 (a crash to survive).
"""
import glob
import json
import math
import os
import re
import sys


def constant(src, name, default):
    text = open(os.path.join(src, "coconet_tuning.h")).read()
    m = re.search(r"constexpr [a-z ]+ %s = (\d+)" % name, text)
    return int(m.group(1)) if m else default


def main():
    what = sys.argv[1]
    if what == "build":
        src, build = sys.argv[2], sys.argv[3]
        os.makedirs(build, exist_ok=True)
        name = os.path.basename(glob.glob(os.path.join(src, "*_main.cu"))[0])[:-3]
        with open(os.path.join(build, name), "w") as f:
            f.write(src + "\n")
        return 0
    binary, args = sys.argv[2], sys.argv[3:]
    src = open(binary).read().strip()
    ranks = int(args[args.index("--spawn") + 1])
    if what == "check":
        return 0 if os.path.exists(os.path.join(args[args.index("--check") + 1], "ranks%d" % ranks, "manifest.json")) else 1
    lo, blocks = constant(src, "kRowSplitMin", 4096), constant(src, "kRowSplitBlocks", 2)
    if lo == 16384:
        print("bench: made-up crash", file=sys.stderr)
        return 1
    us = 100 + 5 * abs(math.log2(lo / 2048)) + 3 * abs(blocks - 4)
    print(json.dumps({"program": "x", "ranks": ranks, "median_us": us, "min_us": us, "max_us": us}))
    return 0


sys.exit(main())
