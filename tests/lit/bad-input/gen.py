#!/usr/bin/env python3
"""Writes pathological .cnet inputs for the bad-input tests: gen.py KIND OUT."""
import sys

kind, out = sys.argv[1], sys.argv[2]
head = "program p(N: size) {\n  in x : f32[N];\n  y = "
tail = ";\n  return y;\n}\n"
if kind == "nested-parens":
    body = "(" * 20000 + "x" + ")" * 20000
elif kind == "nested-unary":
    body = "-" * 20000 + "x"
elif kind == "long-sum":
    body = " + ".join(["x"] * 100000)
elif kind == "long-chain":  # 200,000 statements, each reading the one before
    head = "program p(N: size) {\n  in x0 : f32[N];\n"
    body = "".join("  x%d = x%d + 1.0;\n" % (i, i - 1) for i in range(1, 200001))
    tail = "  return x200000;\n}\n"
elif kind == "unknown-names":  # 16,000 statements, each reading a name never declared
    head = "program p(N: size) {\n  in x : f32[N];\n"
    body = "".join("  y%d = z%d + 1.0;\n" % (i, i) for i in range(16000))
    tail = "  return x;\n}\n"
elif kind == "long-identifier":
    body = "a" * (1 << 20)
elif kind == "binary":
    body = ""
elif kind == "nested-calls":
    body = "sqrt(" * 5000 + "x" + ")" * 5000
else:
    sys.exit("unknown kind " + kind)
data = (head + body + tail).encode()
if kind == "binary":
    data = bytes(range(256)) * 64
with open(out, "wb") as f:
    f.write(data)
