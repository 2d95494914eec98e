"""same_checkpoints.py A B: torch.load(weights_only=True) reads both; their
state_dict tensors (in the same order) and optimizer states (every tensor
bit for bit, every other value equal, param_groups too; an optimizer's
state in any order of its indices) are the same. Prints "same N" (N the
state_dict's entries) or fails naming the first difference."""
import sys

import torch

a, b = (torch.load(path, weights_only=True) for path in sys.argv[1:3])
for key in ("fsdp_shards", "mesh_shards"):
    assert key not in a and key not in b, f"sharded metadata {key} left in a whole file"


def same(x, y, where):
    if isinstance(x, torch.Tensor):
        assert isinstance(y, torch.Tensor) and x.shape == y.shape and torch.equal(x, y), where
    elif isinstance(x, dict):
        assert isinstance(y, dict) and set(x) == set(y), (where, list(x), list(y))
        for k in x:
            same(x[k], y[k], f"{where}.{k}")
    elif isinstance(x, (list, tuple)):
        assert len(x) == len(y), where
        for i, (u, v) in enumerate(zip(x, y)):
            same(u, v, f"{where}[{i}]")
    else:
        assert x == y, (where, x, y)


assert list(a["state_dict"]) == list(b["state_dict"]), "the parameters' order differs"
same(a["state_dict"], b["state_dict"], "state_dict")
same(a["optimizer_states"], b["optimizer_states"], "optimizer_states")
assert a["optimizer_states"] and a["optimizer_states"][0]["state"], "no optimizer state to compare"
print("same", len(a["state_dict"]))
