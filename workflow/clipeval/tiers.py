"""Tiers of the models scored on one dataset: which of them the data cannot tell apart from the best.

The best model by the headline metric starts tier 1, and every model whose
paired 95% bootstrap interval of the difference from it includes zero joins
that tier. The best of the models left starts tier 2, by the same rule, and
so on. The intervals are paired (comparison.py): both models' per-query
results are resampled together, as the experiment's own comparisons are.
"""

from clipeval.comparison import check_pairable, compare_models
from clipeval.errors import ClipevalError

RULE = (
    "T1, T2, …: tiers within a column. The best model starts T1, and each model whose paired 95% bootstrap"
    " interval of the difference from it includes zero shares its tier; the best of the rest starts T2, and so"
    " on. Only pairs scored under the column's settings are tiered."
)


def interval_includes_zero(interval) -> bool:
    """Whether a difference's interval leaves zero possible; an undefined one (None) cannot rule it out."""
    return interval is None or interval[0] <= 0.0 <= interval[1]


def assign_tiers(ranked: list, tied) -> dict:
    """{model: tier} for `ranked` (best first): each tier's leader is the best model not yet in a tier, and
    `tied(leader, model)` says whether a model shares the leader's tier."""
    tiers, remaining, tier = {}, list(ranked), 0
    while remaining:
        tier += 1
        leader, rest = remaining[0], remaining[1:]
        tiers[leader] = tier
        remaining = []
        for model in rest:
            if tied(leader, model):
                tiers[model] = tier
            else:
                remaining.append(model)
    return tiers


def best_first(values: dict) -> list:
    """Models by their headline value, highest first; equal values by name, so the order is the same every time."""
    return sorted(values, key=lambda model: (-values[model], model))


def column_tiers(values: dict, records: dict, paths: dict, metric: str, replicates: int, seed: int):
    """({model: tier}, {model: why it has none}) for one dataset's models scored alike.

    `values` are the models' headline values, `records` their ranks records (read from `paths`). A model whose
    queries differ from the best model's cannot be paired with it, and gets a reason instead of a tier.
    """
    ranked = best_first(values)
    untiered = {}
    for model in ranked[1:]:
        try:
            check_pairable(records[ranked[0]], records[model], paths[model])
        except ClipevalError as error:
            untiered[model] = str(error)
    ranked = [model for model in ranked if model not in untiered]

    def tied(leader, model) -> bool:
        result = compare_models((leader, model), records[leader], records[model], paths[model], replicates, seed)
        return interval_includes_zero(result["intervals"].get(metric))

    return assign_tiers(ranked, tied), untiered
