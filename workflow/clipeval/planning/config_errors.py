"""A config's first schema error as one line that names the entry, the key and what is allowed.

config/schema.yaml describes every section; a dataset entry is checked
against its format's `$defs/FORMAT_dataset`. jsonschema's own messages for
an unknown key or a failed `oneOf` do not say what would be right, so those
two are reworded here. Snakemake loads this while it plans.

Before the schema, a config file that asks Snakemake to evaluate it as
Python (YTE's `__use_yte__`) is refused: `make run` checks before Snakemake
loads the file, the workflow as it starts (by then Snakemake has evaluated
it: a config file is code, as trusted as the workflow). Then two checks
that bound the work: a config file that gives
a key twice (YAML keeps the last silently) is refused, and so is a config
whose YAML aliases expand to more values than any real config has (an alias
"bomb" is small on disk; jsonschema's messages would print it expanded).
"""

import jsonschema
import yaml

# Far beyond any real config (the largest example has a few hundred values).
MAX_VALUES = 100_000
# jsonschema's messages quote the offending value; a long one is cut to this.
MAX_MESSAGE = 300


def location(path) -> str:
    """`models.tiny.train.epochs`, `metrics.recall_at[0]`."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "the config"


def describe(error: jsonschema.ValidationError, prefix=()) -> str:
    where = location([*prefix, *error.absolute_path])
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(allowed))
        return f"{where}: unknown key {', '.join(map(repr, unknown))} (allowed: {', '.join(allowed)})"
    if error.validator == "oneOf" and "description" in error.schema:
        return f"{where}: {error.schema['description']}; it gives {', '.join(sorted(error.instance)) or 'nothing'}"
    message = error.message if len(error.message) <= MAX_MESSAGE else error.message[:MAX_MESSAGE] + " …"
    return f"{where}: {message}"


def first_error(instance, schema, prefix=()) -> str | None:
    """The shallowest error, an unknown key first, described; a failed `oneOf` is described whole."""
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(instance),
        key=lambda error: (
            len(error.absolute_path),
            [str(part) for part in error.absolute_path],
            error.validator != "additionalProperties",
        ),
    )
    return describe(errors[0], prefix) if errors else None


def config_error(config: dict, schema: dict, formats) -> str | None:
    """The config's first error under the schema, with each dataset checked against its format's entry, then
    the first value a job's command would take for an option."""
    found = first_error(config, schema)
    if found:
        return found
    found = dataset_error(config, schema, formats)
    return found or leading_dash_error(config)


def leading_dash_error(config: dict) -> str | None:
    """A message naming the first dataset or model setting whose text starts with "-": the job's command gets it
    as an option's value, which argparse takes for another option and refuses without naming the key."""
    pending = [(["datasets"], config.get("datasets")), (["models"], config.get("models"))]
    while pending:
        path, value = pending.pop(0)
        if isinstance(value, dict):
            pending += [([*path, key], item) for key, item in value.items()]
        elif isinstance(value, list):
            pending += [([*path, index], item) for index, item in enumerate(value)]
        elif isinstance(value, str) and value.startswith("-"):
            return (
                f"{location(path)}: {value!r} starts with '-', which a job's command would read as an option"
                " (for a file or folder, write ./ before it)"
            )
    return None


def dataset_error(config: dict, schema: dict, formats) -> str | None:
    """The first error of a dataset entry under its format's schema entry."""
    definitions = schema["$defs"]
    for name, entry in config["datasets"].items():
        where = location(["datasets", name, "format"])
        if entry["format"] not in formats:
            return f"{where}: unknown format {entry['format']!r} (allowed: {', '.join(formats)})"
        if f"{entry['format']}_dataset" not in definitions:
            return f"{where}: the schema has no $defs/{entry['format']}_dataset"
        found = first_error(
            entry, {"$defs": definitions, "$ref": f"#/$defs/{entry['format']}_dataset"}, ["datasets", name]
        )
        if found:
            return found
    return None


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


def oversized_error(config) -> str | None:
    """A message if the config, with its aliases expanded, holds more than MAX_VALUES values."""
    count, pending = 0, [config]
    while pending:
        value = pending.pop()
        count += 1
        if count > MAX_VALUES:
            return (
                f"the config holds more than {MAX_VALUES:,} values once its YAML aliases are expanded;"
                " aliases that expand this far are refused"
            )
        if isinstance(value, dict):
            pending += value.values()
        elif isinstance(value, list):
            pending += value
    return None
