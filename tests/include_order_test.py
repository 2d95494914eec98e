#!/usr/bin/env python3
"""Reads every `#include <fulgur/...>` of the library and fails on an arrow
against the folder order (docs/development.md, "Layers"): a folder may include itself and
the folders below it, never one above. `version.hpp` (generated from
project(VERSION)) is below every folder.
"""
import pathlib
import re
import sys

ORDER = ["version.hpp", "core", "modules", "datamodules", "strategies/options", "strategies/environments", "strategies/cuda", "strategies/mpi", "strategies/launchers",
         "strategies/collectives", "strategies/sharding", "strategies", "loggers", "engine", "trainer", "callbacks", "trainer/cli", "online", "ensemble"]

# The callbacks the Trainer adds by default (enable_progress_bar,
# enable_model_summary, enable_checkpointing; CheckpointLocator also reads
# ModelCheckpoint's folders and best model) live with the other callbacks,
# above the Trainer that they see; trainer/ may include these three and
# nothing else of callbacks/.
TRAINER_DEFAULT_CALLBACKS = {"callbacks/model_checkpoint.hpp", "callbacks/progress_bar.hpp", "callbacks/model_summary.hpp"}

INCLUDE = re.compile(r"^\s*#\s*include\s*<fulgur/([^>]+)>", re.MULTILINE)


def layer(path):
    """The layer of a path relative to the repository root, or None."""
    for name in sorted(ORDER, key=len, reverse=True):
        if path == name or path.startswith(name + "/"):
            return name
    return None


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    errors = []
    # The layers' folders only: the rest of the checkout holds build/, whose
    # temporary folders other tests make and remove while this one walks.
    tops = sorted({name.split("/")[0] for name in ORDER} - {"version.hpp"})
    for file in sorted(f for top in tops for f in (root / top).rglob("*")):
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
            elif source == "trainer" and target in TRAINER_DEFAULT_CALLBACKS:
                continue
            elif ORDER.index(target_layer) > ORDER.index(source):
                errors.append(f"{rel} -> {target}: {source}/ may not include {target_layer}/ "
                              f"(order, bottom first: {', '.join(ORDER)})")
    for error in errors:
        print(error)
    print(f"{len(errors)} include(s) against the layer order")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
