"""A config's first schema error as one line that names the entry, the key and what is allowed.

config/schema.yaml describes every section; a dataset entry is checked
against its format's `$defs/FORMAT_dataset`. jsonschema's own messages for
an unknown key or a failed `oneOf` do not say what would be right, so those
two are reworded here. Snakemake loads this while it plans.
"""

import jsonschema


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
    return f"{where}: {error.message}"


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
    """The config's first error under the schema, with each dataset checked against its format's entry."""
    found = first_error(config, schema)
    if found:
        return found
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
