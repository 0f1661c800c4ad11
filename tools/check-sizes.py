#!/usr/bin/env python3
"""The size check (CTest `sizes`): no file under src/ over 800 lines and no function over 150.

A function is one defined at namespace scope: src/ is clang-formatted, so its definition starts
at column 0 (its signature may span lines) with a line ending in '{' and its body closes with a
'}' at column 0. Lambdas and local classes count toward the function around them; member
functions defined inside a class body (short by style) are not measured.
Usage: tools/check-sizes.py [SOURCE_ROOT]   (prints each excess and fails, else one summary line)
"""
import pathlib
import re
import sys

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 150
NOT_FUNCTIONS = re.compile(r"(namespace|struct|class|enum|union|extern|typedef|using)\b")


def functions(lines):
    """(first line, line count, signature) of each function defined at namespace scope."""
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line or line[0].isspace() or line.startswith(("//", "#", "}")) or NOT_FUNCTIONS.match(line):
            i += 1
            continue
        # a declaration at column 0: its signature runs to the line that ends in '{' or ';'
        start = i
        while i < len(lines) and lines[i].strip() and not lines[i].rstrip().endswith(("{", ";")):
            i += 1
        head = " ".join(l.strip() for l in lines[start:i + 1])
        if i >= len(lines) or not lines[i].rstrip().endswith("{") or "(" not in head or "=" in head.split("(")[0]:
            i += 1
            continue  # a declaration, a variable's initializer (`const Table t = {`), ...
        if lines[i].rstrip().endswith("}"):
            i += 1
            continue  # defined on one line
        end = i + 1
        while end < len(lines) and not lines[end].startswith("}"):
            end += 1
        yield start + 1, end - start + 1, head
        i = end + 1


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    bad = 0
    files = sorted(p for p in (root / "src").rglob("*") if p.is_file() and p.suffix in (".cpp", ".h", ".cuh", ".def", ".in"))
    nfun = 0
    for path in files:
        lines = path.read_text().split("\n")
        rel = path.relative_to(root)
        if len(lines) - 1 > MAX_FILE_LINES:
            print(f"check-sizes: {rel}: {len(lines) - 1} lines (at most {MAX_FILE_LINES})")
            bad = 1
        if path.suffix not in (".cpp", ".h"):
            continue
        for first, count, sig in functions(lines):
            nfun += 1
            if count > MAX_FUNCTION_LINES:
                print(f"check-sizes: {rel}:{first}: {sig[:90]} is {count} lines (at most {MAX_FUNCTION_LINES})")
                bad = 1
    if not bad:
        print(f"check-sizes: {len(files)} files within {MAX_FILE_LINES} lines, {nfun} functions within {MAX_FUNCTION_LINES}")
    return bad


if __name__ == "__main__":
    sys.exit(main())
