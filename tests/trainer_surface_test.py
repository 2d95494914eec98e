#!/usr/bin/env python3
"""Counts the Trainer's public methods in trainer/trainer.hpp and fails above
the limit (issue 70): read-only state goes in TrainerState
(trainer/trainer_state.hpp, `trainer.state()`), as Lightning groups its
properties, so the Trainer's own face stays small. Constructors, the
destructor and deleted copies are not counted.
"""
import pathlib
import re
import sys

LIMIT = 25

# A declaration that names a function: `... name(` at the start of a
# statement, outside comments.
METHOD = re.compile(r"^\s*(?:explicit\s+|virtual\s+|static\s+|\[\[nodiscard\]\]\s+)*[\w:<>,\s&*]+?[\s&*](\w+)\s*\(")


def public_methods(header):
    text = header.read_text(encoding="utf-8")
    body = text[text.index("class Trainer {"):]
    body = body[:body.index("\n};")]
    methods, public = [], False
    for line in body.splitlines():
        stripped = line.strip()
        if stripped.startswith("//"):
            continue
        if stripped in ("public:", "private:", "protected:"):
            public = stripped == "public:"
            continue
        if not public:
            continue
        match = METHOD.match(line)
        if not match or "= delete" in line or match.group(1) in ("Trainer", "operator"):
            continue
        if stripped.startswith("~") or stripped.startswith("Trainer("):
            continue
        methods.append(match.group(1))
    return methods


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    methods = public_methods(root / "trainer" / "trainer.hpp")
    print(f"{len(methods)} public methods (limit {LIMIT}): {', '.join(methods)}")
    return 0 if 0 < len(methods) <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
