"""The summary's section on captions that a model's tokenizer cut at its context length or could not
represent (features/tokenization.py records them at extraction): a row per model and dataset with any."""

COLUMNS = ("model", "dataset", "captions", "context length", "cut", "longest (tokens)", "with unknown tokens")


def tokenization_rows(records) -> list[dict]:
    """records: (model, dataset, tokenization record); the rows of the pairs with a caption cut or unknown
    tokens, in the order given."""
    return [
        {
            "model": model,
            "dataset": dataset,
            "captions": record["captions"],
            "context length": record["context_length"],
            "cut": record["cut"],
            "longest (tokens)": record["longest"],
            "with unknown tokens": record["with_unknown_tokens"],
        }
        for model, dataset, record in records
        if record["cut"] or record["with_unknown_tokens"]
    ]


def tokenization_markdown(records) -> list[str]:
    """The section's lines, or none when every caption fits its model's tokenizer."""
    rows = tokenization_rows(records)
    if not rows:
        return []
    lines = [
        "",
        "## Captions the tokenizer cut or could not represent",
        "",
        "Each model encodes a caption as its tokenizer gives it: cut after the context length, with text"
        " outside the tokenizer's vocabulary as its unknown token. The texts.tokenization.json beside each"
        " model's text features lists the first ids of each.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    return lines + ["| " + " | ".join(str(row[column]) for column in COLUMNS) + " |" for row in rows]
