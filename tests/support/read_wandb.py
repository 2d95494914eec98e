"""Reads a W&B offline run (the run-<id>.wandb file wandb.init(mode="offline")
writes) and prints what it holds as JSON: the run's project, name and id, its
config, every history row and the exit code.

    python read_wandb.py OFFLINE_RUN_FOLDER

The file is a LevelDB-style log (wandb's own framing: a 7-byte header, then
32 KiB blocks of chunks, each with the CRC-32 of its type and bytes) of `Record` protobufs; the records
are decoded with the wandb package's own protobuf classes.
"""
import glob
import json
import os
import struct
import sys
import zlib

from wandb.proto import wandb_internal_pb2

BLOCK = 32768
HEADER = 7  # checksum (4), length (2), type (1)
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def records(path):
    data = open(path, "rb").read()
    if data[:4] != b":W&B" or struct.unpack("<H", data[4:6])[0] != 0xBEE1:
        raise ValueError("%s: not a W&B transaction log" % path)
    pos, pending = 7, b""
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:  # the rest of a block is padding
            pos += left
            continue
        checksum, length, kind = struct.unpack("<IHB", data[pos : pos + HEADER])
        if checksum == 0 and length == 0 and kind == 0:  # zeros: end of what was written
            break
        chunk = data[pos + HEADER : pos + HEADER + length]
        if zlib.crc32(bytes([kind]) + chunk) != checksum:
            raise ValueError("%s: bad checksum at byte %d" % (path, pos))
        pos += HEADER + length
        if kind == FULL:
            yield chunk
        elif kind == FIRST:
            pending = chunk
        elif kind == MIDDLE:
            pending += chunk
        elif kind == LAST:
            yield pending + chunk
        else:
            raise ValueError("%s: bad chunk type %d at byte %d" % (path, kind, pos))


def yaml_friendly(value):
    """Non-finite floats as YAML spells them (.nan, .inf), which JSON cannot."""
    if isinstance(value, float) and value != value:
        return ".nan"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    return value


def main(folder):
    (path,) = glob.glob(os.path.join(folder, "run-*.wandb"))
    out = {"run": {}, "config": {}, "history": [], "exit_code": None, "kinds": {}}
    for data in records(path):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(data)
        kind = record.WhichOneof("record_type")
        out["kinds"][kind] = out["kinds"].get(kind, 0) + 1
        if kind == "run":
            run = record.run
            out["run"] = {"project": run.project, "name": run.display_name, "id": run.run_id}
            for item in run.config.update:
                out["config"][item.key] = json.loads(item.value_json)
        elif kind == "config":
            for item in record.config.update:
                out["config"][item.key] = json.loads(item.value_json)
        elif kind == "history":
            out["history"].append(
                {
                    item.key or "/".join(item.nested_key): yaml_friendly(json.loads(item.value_json))
                    for item in record.history.item
                }
            )
        elif kind == "exit":
            out["exit_code"] = record.exit.exit_code
    out["config"].pop("_wandb", None)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
