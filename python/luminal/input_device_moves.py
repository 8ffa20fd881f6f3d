"""Graph inputs that the graph itself copies from the CPU to a GPU: the caller copies them instead.

A compiled program runs on one device. But a model on a GPU may copy a small CPU tensor there
inside its forward: a transformers StaticCache compiled before any eager step initialises inside
the graph and moves its CPU `cumulative_length` to the keys' device. Such a move of a graph input
is taken out of the graph: the placeholder then stands for the moved tensor, and every call copies
that argument to the device before the program runs, which is the copy eager makes. Only a
placeholder that nothing reads but such moves, all to one device, is lifted; any other device
move stays in the graph, where the translator refuses it with the node's name."""

from __future__ import annotations

from typing import Any

import torch

# The device types an input is copied to by the call. Tests add "cpu" to run the rewritten graph
# (the placeholder read, mutated and returned where the copy was) on a machine without a GPU.
LIFTED_DEVICE_TYPES = {"cuda"}


def lift_input_device_moves(gm: torch.fx.GraphModule) -> dict[int, torch.device]:
    """Rewrites `gm` in place; returns {placeholder position: the device to copy that argument to}."""
    moves: dict[int, torch.device] = {}
    placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
    for position, placeholder in enumerate(placeholders):
        value = placeholder.meta.get("example_value")
        if not isinstance(value, torch.Tensor) or value.device.type != "cpu" or not placeholder.users:
            continue
        targets = {_device_moved_to(user) for user in placeholder.users}
        if len(targets) != 1:
            continue
        device = targets.pop()
        if device is None or device.type not in LIFTED_DEVICE_TYPES:
            continue
        for move in list(placeholder.users):
            move.replace_all_uses_with(placeholder)
            gm.graph.erase_node(move)
        moves[position] = device
    if moves:
        gm.graph.lint()
        gm.recompile()
    return moves


def move_inputs(args: tuple[Any, ...], moves: dict[int, torch.device]) -> tuple[Any, ...]:
    """The call's arguments with each lifted input copied to its device."""
    moved = list(args)
    for position, device in moves.items():
        moved[position] = moved[position].to(device)
    return tuple(moved)


def _device_moved_to(node: torch.fx.Node) -> torch.device | None:
    """The device `node` copies its tensor to, when that is all it does: `t.to(device)`,
    `t.to(device=device)` (either with non_blocking=, which changes no value) or `t.cuda()`."""
    if node.op != "call_method":
        return None
    kwargs = {k: v for k, v in node.kwargs.items() if k != "non_blocking"}
    if node.target == "cuda" and len(node.args) == 1 and not kwargs:
        return torch.device("cuda")
    if node.target != "to":
        return None
    if len(node.args) == 2 and not kwargs:
        device = node.args[1]
    elif len(node.args) == 1 and set(kwargs) == {"device"}:
        device = kwargs["device"]
    else:
        return None
    if isinstance(device, str):
        try:
            device = torch.device(device)
        except RuntimeError:
            return None
    return device if isinstance(device, torch.device) else None
