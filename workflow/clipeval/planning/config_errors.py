"""A config's first schema error as one line that names the entry, the key and what is allowed.

config/schema.yaml describes every section; a dataset entry is checked
against its format's `$defs/FORMAT_dataset`. jsonschema's own messages for
an unknown key or a failed `oneOf` do not say what would be right, so those
two are reworded here. Snakemake loads this while it plans. The checks of
a config file's text, before any loader reads it, are in
storage/config_files.py; this module bounds a loaded config's size.
"""

import jsonschema

from clipeval.storage.config_files import MAX_VALUES

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


def _properties_with_defaults(validator, properties, instance, schema):
    """jsonschema's `properties`, after filling in each absent property that has a default."""
    if isinstance(instance, dict):
        for name, subschema in properties.items():
            if "default" in subschema:
                instance.setdefault(name, subschema["default"])
    yield from jsonschema.Draft202012Validator.VALIDATORS["properties"](validator, properties, instance, schema)


_FillingValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, {"properties": _properties_with_defaults}
)


def fill_defaults(config: dict, schema: dict) -> None:
    """Validate the config and fill in the schema's defaults where it lacks them, in place, as Snakemake's
    `validate(config, FILE)` does, from the schema already read (Snakemake's reads the file's YAML again with
    the pure-Python parser: a third of a second of every plan). Raises jsonschema's ValidationError."""
    _FillingValidator(schema).validate(config)
