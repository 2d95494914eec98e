#!/usr/bin/env python3
"""Reads every `#include <fulgur/...>` of the library and fails on an arrow
against the folder order (README, "Layers"): a folder may include itself and
the folders below it, never one above.

KNOWN lists the arrows that still point up today. It must only shrink: a new
upward arrow fails, and so does a listed one that is gone (delete its line).
"""
import pathlib
import re
import sys

ORDER = ["modules", "datamodules", "strategies", "trainer", "callbacks", "trainer/cli"]

# Still to remove: components that read YAML through the CLI's ConfigSection.
KNOWN = {
    ("callbacks/callback_registry.hpp", "trainer/cli/config_section.hpp"),
    ("callbacks/early_stopping.cpp", "trainer/cli/config_section.hpp"),
    ("callbacks/gradient_accumulation_scheduler.cpp", "trainer/cli/config_section.hpp"),
    ("callbacks/learning_rate_monitor.cpp", "trainer/cli/config_section.hpp"),
    ("callbacks/timer.cpp", "trainer/cli/config_section.hpp"),
    ("datamodules/cinic10.cpp", "trainer/cli/config_section.hpp"),
    ("datamodules/imagenet.cpp", "trainer/cli/config_section.hpp"),
    ("trainer/model_checkpoint.cpp", "trainer/cli/config_error.hpp"),
    ("trainer/model_checkpoint.cpp", "trainer/cli/config_section.hpp"),
    ("trainer/progress_bar.cpp", "trainer/cli/config_section.hpp"),
}

INCLUDE = re.compile(r"^\s*#\s*include\s*<fulgur/([^>]+)>", re.MULTILINE)


def layer(path):
    """The layer of a path relative to the repository root, or None."""
    for name in sorted(ORDER, key=len, reverse=True):
        if path == name or path.startswith(name + "/"):
            return name
    return None


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    found, errors = set(), []
    for file in sorted(root.rglob("*")):
        if file.suffix not in (".hpp", ".cpp") or not file.is_file():
            continue
        rel = file.relative_to(root).as_posix()
        source = layer(rel)
        if source is None:
            continue
        for target in INCLUDE.findall(file.read_text(encoding="utf-8")):
            target_layer = layer(target)
            if target_layer is None:
                errors.append(f"{rel}: includes <fulgur/{target}>, which is in no layer of {ORDER}")
            elif ORDER.index(target_layer) > ORDER.index(source):
                found.add((rel, target))
    for arrow in sorted(found - KNOWN):
        errors.append(f"{arrow[0]} -> {arrow[1]}: {layer(arrow[0])}/ may not include {layer(arrow[1])}/ "
                      f"(order, bottom first: {', '.join(ORDER)})")
    for arrow in sorted(KNOWN - found):
        errors.append(f"{arrow[0]} -> {arrow[1]} is gone: delete it from KNOWN in {pathlib.Path(__file__).name}")
    for error in errors:
        print(error)
    print(f"{len(found)} known upward include(s) left, {len(errors)} error(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
