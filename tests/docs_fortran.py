#!/usr/bin/env python3
"""Compiles every ```fortran block of docs/ against fulgur's Fortran modules.

    docs_fortran.py FC MODULE.f90... -- PAGE.md...

Each block is the body of a program with `implicit none`: its `use` lines
first, then the rest, so an undeclared name or a kind the module does not
export is an error, as in a user's program. The modules (the base module
first) are compiled once into a temporary folder; each block is checked with
-fsyntax-only. Errors name the page and the block's first line.
"""
import re
import subprocess
import sys
import tempfile
from pathlib import Path


def fortran_blocks(page):
    """(first line number, lines) of every ```fortran block of `page`."""
    found, start, body = [], None, []
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if start is None and re.match(r"^\s*```fortran\s*$", line):
            start, body = number + 1, []
        elif start is not None and re.match(r"^\s*```\s*$", line):
            found.append((start, body))
            start = None
        elif start is not None:
            body.append(line)
    return found


def main():
    split = sys.argv.index("--")
    fc, pages = sys.argv[1], [Path(p) for p in sys.argv[split + 1:]]
    modules = [str(Path(m).resolve()) for m in sys.argv[2:split]]
    failures, checked = 0, 0
    with tempfile.TemporaryDirectory(prefix="docs-fortran-") as tmp:
        subprocess.run([fc, "-c", f"-J{tmp}", *modules], cwd=tmp, check=True)
        for page in pages:
            for start, lines in fortran_blocks(page):
                checked += 1
                uses = [line for line in lines if re.match(r"^\s*use\b", line, re.IGNORECASE)]
                rest = [line for line in lines if line not in uses]
                source = Path(tmp) / f"block{checked}.f90"
                source.write_text("\n".join(["program docs_block", *uses, "implicit none", *rest,
                                             "end program docs_block", ""]))
                result = subprocess.run([fc, "-fsyntax-only", f"-I{tmp}", f"-J{tmp}", str(source)],
                                        capture_output=True, text=True)
                if result.returncode != 0:
                    failures += 1
                    print(f"{page}:{start}: this ```fortran block does not compile:\n{result.stderr}")
    print(f"docs_fortran: {checked} block(s) checked, {failures} failed")
    if checked == 0:
        sys.exit("docs_fortran: no ```fortran block found: the pages moved?")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
