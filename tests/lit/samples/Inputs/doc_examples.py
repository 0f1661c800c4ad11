"""Checks every ```cnet example of docs/language.md with coconetc.

Usage: doc_examples.py COCONETC LANGUAGE_MD WORKDIR
Each example is written to WORKDIR/exampleNN.cnet and must pass `coconetc check`
silently. Prints one line per failing example and exits 1 if any failed.
"""
import os
import re
import subprocess
import sys


def main():
    coconetc, doc, workdir = sys.argv[1:4]
    os.makedirs(workdir, exist_ok=True)
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    examples = re.findall(r"^```cnet\n(.*?)^```", text, re.S | re.M)
    if not examples:
        print("no cnet examples found in " + doc)
        return 1
    failed = 0
    for i, code in enumerate(examples):
        path = os.path.join(workdir, "example%02d.cnet" % i)
        with open(path, "w", encoding="utf-8") as f:
            f.write(code)
        r = subprocess.run([coconetc, "check", path], capture_output=True, text=True)
        if r.returncode != 0 or r.stdout or r.stderr:
            failed += 1
            first = code.strip().splitlines()[0]
            print("example %d (%s) failed with exit code %d:\n%s%s" %
                  (i, first, r.returncode, r.stdout, r.stderr))
    print("%d examples, %d failed" % (len(examples), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
