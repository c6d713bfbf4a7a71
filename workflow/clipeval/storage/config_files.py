"""A config file read as YAML nodes, before any loader expands or evaluates it.

Snakemake's config loader runs a file's YTE expressions as Python and copies
its aliases without bound: a config that asks for either is refused here
first, by `make run`, `clipeval follow` and the workflow as it starts (by
then Snakemake has loaded the file: a config file is code, as trusted as the
workflow). A key given twice is refused too (YAML keeps the last silently).
"""

import yaml

# Far beyond any real config (the largest example has a few hundred values).
MAX_VALUES = 100_000


# Snakemake evaluates the `?expression` values of a config with this key set as Python, as it loads the file.
YTE_KEY = "__use_yte__"


def yte_error(path) -> str | None:
    """A message if the config file asks for YTE, read without evaluating anything; else None."""
    try:
        with open(path, encoding="utf-8") as handle:
            root = yaml.compose(handle, Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):  # Snakemake says what is wrong with such a file
        return None
    if isinstance(root, yaml.MappingNode) and any(key.value == YTE_KEY for key, _ in root.value):
        return (
            f"{path}: {YTE_KEY} asks Snakemake to run the config's ?-expressions as Python; clipeval reads"
            " plain YAML configs only"
        )
    return None


class _AliasLoop(Exception):
    """A node reached again inside itself: args[0] is the node."""


def alias_error(path) -> str | None:
    """A message if the config file's YAML aliases contain themselves or expand past MAX_VALUES values, read
    from its node graph without expanding anything; else None. Snakemake merges a config by copying it, which
    recurses without end into the one and exhausts memory on the other before the workflow sees it."""
    try:
        with open(path, encoding="utf-8") as handle:
            root = yaml.compose(handle, Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):  # Snakemake says what is wrong with such a file
        return None
    sizes, open_nodes = {}, set()

    def size(node) -> int:  # the values the node stands for, aliases expanded
        if id(node) in sizes:
            return sizes[id(node)]
        if id(node) in open_nodes:
            raise _AliasLoop(node)
        open_nodes.add(id(node))
        children = (
            [part for pair in node.value for part in pair]
            if isinstance(node, yaml.MappingNode)
            else (node.value if isinstance(node, yaml.SequenceNode) else [])
        )
        total = 1
        for child in children:
            total = min(total + size(child), MAX_VALUES + 1)
        open_nodes.discard(id(node))
        sizes[id(node)] = total
        return total

    try:
        total = size(root) if root is not None else 0
    except _AliasLoop as loop:
        return (
            f"{path}: line {loop.args[0].start_mark.line + 1}: a YAML alias contains itself; clipeval reads configs"
            " of finite values only"
        )
    except RecursionError:
        return f"{path}: nested deeper than a config is read"
    if total > MAX_VALUES:
        return (
            f"{path}: holds more than {MAX_VALUES:,} values once its YAML aliases are expanded; aliases that expand"
            " this far are refused"
        )
    return None


def refuse_before_loading(path) -> None:
    """`make run`'s check, before Snakemake loads the file: exit 1 with the one line of yte_error or
    alias_error."""
    message = yte_error(path) or alias_error(path)
    if message:
        raise SystemExit(f"config error: {message}")


def duplicate_key_error(path) -> str | None:
    """`FILE: line N: key 'K' is given twice` for the first key a YAML mapping repeats, else None."""
    with open(path, encoding="utf-8") as handle:
        root = yaml.compose(handle, Loader=yaml.SafeLoader)
    seen_nodes, pending = set(), [root] if root is not None else []
    while pending:
        node = pending.pop()
        if id(node) in seen_nodes:  # an alias: the node it names is checked once
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in keys:
                        return f"{path}: line {key.start_mark.line + 1}: key {key.value!r} is given twice"
                    keys.add(key.value)
                pending += [key, value]
        elif isinstance(node, yaml.SequenceNode):
            pending += node.value
    return None
