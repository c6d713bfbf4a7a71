"""A summary number as markdown shows it, alone or with its interval."""


def number(value) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def cell(row: dict, column: str) -> str:
    """Blank where a metric does not apply to the row's task; n/a where it is undefined."""
    if column not in row:
        return ""
    text = number(row[column])
    if row.get(f"{column}_ci_low") is not None:
        text += f" [{number(row[column + '_ci_low'])}, {number(row[column + '_ci_high'])}]"
    return text
