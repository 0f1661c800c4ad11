"""Runs `coconetc check` on every schedule kept in the repository (samples/*/*.sched,
tests/gpu/programs/*.sched, tools/bench/programs/*.sched), each with its program, then
`coconetc compile`, and prints what they reported; exits 1 if any printed anything (a warning:
a knob the backend does not read or take, an overlap the backend runs unchunked) or failed.

Usage: knob-warnings.py COCONETC SOURCE_ROOT
"""
import glob
import os
import subprocess
import sys
import tempfile


def program_for(sched: str, root: str) -> str:
    folder, name = os.path.split(sched)
    base = os.path.splitext(name)[0]
    # the program beside it whose name the schedule's starts with (allreduce_one_shot.sched ->
    # allreduce.cnet), else the sample of that name (megatron_row_chunks2 -> samples/megatron_row)
    for cand in sorted(glob.glob(os.path.join(folder, "*.cnet")), key=len, reverse=True):
        if base.startswith(os.path.splitext(os.path.basename(cand))[0]):
            return cand
    for cand in sorted(glob.glob(os.path.join(root, "samples", "*", "*.cnet")), key=len, reverse=True):
        if base.startswith(os.path.splitext(os.path.basename(cand))[0]):
            return cand
    raise SystemExit(f"no program for {sched}")


def main() -> int:
    coconetc, root = sys.argv[1:3]
    scheds = sorted(glob.glob(os.path.join(root, "samples", "*", "*.sched")) +
                    glob.glob(os.path.join(root, "tests", "gpu", "programs", "*.sched")) +
                    glob.glob(os.path.join(root, "tools", "bench", "programs", "*.sched")))
    bad = 0
    for sched in scheds:
        # (NAME.backward.sched is the schedule of NAME's backward program: --backward)
        backward = ["--backward"] if sched.endswith(".backward.sched") else []
        prog = program_for(sched.replace(".backward.sched", ".sched"), root)
        r = subprocess.run([coconetc, "check", prog, "--schedule", sched] + backward, capture_output=True, text=True)
        if r.returncode == 0 and not r.stdout and not r.stderr:
            with tempfile.TemporaryDirectory() as out:
                r = subprocess.run([coconetc, "compile", prog, "--schedule", sched, "-o", out] + backward, capture_output=True, text=True)
                r.stdout = ""  # ("wrote N files")
        if r.returncode != 0 or r.stdout or r.stderr:
            bad += 1
            print(f"{os.path.relpath(sched, root)} with {os.path.relpath(prog, root)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    print(f"{len(scheds)} schedules, {bad} with output")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
