#!/usr/bin/env python3
"""A stand-in for a GPU machine in coconetc tune's tests (--runner): `build SRC BUILD` makes
BUILD/NAME_main from SRC/NAME_main.cu (a file naming its sources); `check BIN --spawn P --check DIR`
passes where DIR holds verify's vectors for P ranks; `bench BIN ... --iters K` prints the driver's
JSON line with a time made up from the build's tuning-table values: fastest at row_split_min = 2048
(8192 for more than 32 rows: -D T) and row_split_blocks = 4 (not the table's values), so that the
search has something to find, and the bytes the table's entries that take bytes were read at (T * H *
2, the rows' f16 input: every such entry of the build's header), but for those RUNNER_UNREAD names (a comma-separated list: the code took another path).
`bench` fails for a build whose row_split_min is 16384 (RUNNER_CRASH: another; a crash to survive); with RUNNER_WRONG set
every check fails; RUNNER_LUCKY and RUNNER_SCHED_FROM (below) make one build's first runs faster
than its later ones, and a schedule pay from a number of rows.
"""
import glob
import json
import math
import os
import re
import sys


def constant(src, name, default):
    """The value of a tuning-table function of one rule (what a candidate's build sets)."""
    text = open(os.path.join(src, "coconet_tuning.h")).read()
    m = re.search(r"inline [a-z ]+ %s\(long long bytes\) \{\s*tableRead\([^)]*\);\s*return (\d+)" % name, text)
    return int(m.group(1)) if m else default


def define(args, name):
    for i, a in enumerate(args):
        if a == "-D" and args[i + 1].startswith(name + "="):
            return int(args[i + 1].split("=", 1)[1])
    return None


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
        # (as the generated driver: the folder of verify --dump's vectors at these ranks)
        vectors = args[args.index("--check") + 1]
        if os.environ.get("RUNNER_WRONG"):  # (a build whose results are off)
            print("runner: out 'y': relative error 0.5 (limit 0.01): made-up wrong result", file=sys.stderr)
            return 1
        if not os.path.exists(os.path.join(vectors, "manifest.txt")):
            print("runner: cannot read %s/manifest.txt" % vectors, file=sys.stderr)
            return 1
        return 0 if ("ranks%d" % ranks) == os.path.basename(vectors.rstrip("/")) else 1
    lo, blocks = constant(src, "rowSplitMin", 4096), constant(src, "rowSplitBlocks", 2)
    if lo == int(os.environ.get("RUNNER_CRASH", "16384")):
        print("bench: made-up crash", file=sys.stderr)
        return 1
    # T rows of H f16 elements (softmax); more than 32 rows are fastest with parts of 8192
    rows, n = define(args, "T"), define(args, "H")
    best = 8192 if rows and rows > 32 else 2048
    us = 100 + 5 * abs(math.log2(lo / best)) + 3 * abs(blocks - 4)
    # RUNNER_SCHED_FROM=N: a build with a schedule applied is 10 us slower than the program without
    # one below N rows (-D T), 10 us faster from N
    sched_from = os.environ.get("RUNNER_SCHED_FROM")
    if sched_from and rows:
        cu = open(glob.glob(os.path.join(src, "*_main.cu"))[0].replace("_main.cu", ".cu")).read()
        if re.search(r"// Schedule applied:\s*\n//\s+\S", cu):
            us += 10 if rows < int(sched_from) else -10
    # RUNNER_LUCKY=VALUE:N: a build whose row_split_min is VALUE runs 20 us faster in its first N
    # timed runs only (drift between runs, which timing in turns exposes)
    lucky = os.environ.get("RUNNER_LUCKY", "")
    if lucky and lo == int(lucky.split(":")[0]):
        count = binary + ".runs"
        n = int(open(count).read()) if os.path.exists(count) else 0
        open(count, "w").write(str(n + 1))
        if n < int(lucky.split(":")[1]):
            us -= 20
    line = {"program": "x", "ranks": ranks, "median_us": us, "min_us": us, "max_us": us}
    if rows and n:
        b = rows * n * 2
        unread = os.environ.get("RUNNER_UNREAD", "").split(",")
        header = open(os.path.join(src, "coconet_tuning.h")).read()
        read = re.findall(r'tableRead\("([a-z_]+)", bytes\)', header)
        line["table_reads"] = {e: [b, b] for e in read if e not in unread}
    print(json.dumps(line))
    return 0


sys.exit(main())
