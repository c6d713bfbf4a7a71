"""Compositionality examples (examples.jsonl): which captions an example's images choose among.

One line per example: `{"example_id": 7, "group": "swap_att", "image_ids": [i0, i1], "text_ids": [t0, t1, …]}`.
Image `image_ids[j]` is described by caption `text_ids[j]`; the captions after the
images' own are negatives (SugarCrepe's negative caption, ARO's false captions).
Winoground has two images and two captions, SugarCrepe one image and two captions.
`group` is what the results are broken down by (SugarCrepe's split, Winoground's tag).
`"macro": false` marks an example whose group a macro average leaves out (ARO's
symmetric relations); sets without a macro average (SugarCrepe, Winoground) give no `macro`.

An example may instead have one caption that chooses several of its images
(WinoGAViL's cue among its candidates): `"associations": [ids …]` lists the
images that go with the caption, and the caption chooses as many images as
there are associations, scored by the Jaccard index of the two sets.
"""

from dataclasses import dataclass

import numpy as np

from clipeval.errors import ClipevalError
from clipeval.storage.ids import require_id
from clipeval.storage.jsonl import read_keyed_jsonl, write_jsonl


@dataclass(frozen=True)
class Example:
    example_id: int
    group: str
    image_ids: tuple[int, ...]
    text_ids: tuple[int, ...]
    macro: bool | None = None  # in the set's macro average (ARO's), or None where the set has none
    associations: tuple[int, ...] | None = None  # the images its one caption goes with (WinoGAViL's)


def check_example(example: Example, where: str) -> None:
    """At least one image, a caption for each and one more, no id twice; or, for an example with associations,
    one caption and associations that are some of its images but not all."""
    if not example.image_ids:
        raise ClipevalError(f"{where}: example {example.example_id} has no image")
    if example.associations is not None:
        check_associations(example, where)
    elif len(example.text_ids) < max(2, len(example.image_ids)):
        raise ClipevalError(
            f"{where}: example {example.example_id} has {len(example.text_ids)} caption(s) for"
            f" {len(example.image_ids)} image(s): it needs a caption per image and two or more in all"
        )
    for name, ids in (("image", example.image_ids), ("text", example.text_ids)):
        if len(set(ids)) != len(ids):
            raise ClipevalError(f"{where}: example {example.example_id} names a {name} id twice")


def check_associations(example: Example, where: str) -> None:
    name = f"{where}: example {example.example_id}"
    if len(example.text_ids) != 1:
        raise ClipevalError(f"{name} has associations and {len(example.text_ids)} captions: it needs one caption")
    outside = [i for i in example.associations if i not in example.image_ids]
    if outside:
        raise ClipevalError(f"{name}: association {outside[0]} is not one of its image_ids")
    if len(set(example.associations)) != len(example.associations):
        raise ClipevalError(f"{name} names an association twice")
    if not 0 < len(example.associations) < len(example.image_ids):
        raise ClipevalError(
            f"{name} has {len(example.associations)} associations among {len(example.image_ids)}"
            " images: it needs at least one, and fewer than its images"
        )


def write_examples(path, examples: list[Example]) -> None:
    write_jsonl(
        path,
        (
            {
                "example_id": e.example_id,
                "group": e.group,
                "image_ids": list(e.image_ids),
                "text_ids": list(e.text_ids),
                **({} if e.macro is None else {"macro": e.macro}),
                **({} if e.associations is None else {"associations": list(e.associations)}),
            }
            for e in examples
        ),
    )


def _id_list(value, where, example_id, field) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise ClipevalError(f"{where}: example {example_id}: {field} must be a list of ids")
    return tuple(require_id(item, f"{where}: example {example_id}", f"{field} entry") for item in value)


def load_examples(path) -> list[Example]:
    """Read and validate examples.jsonl; every problem names the file and line."""
    examples = []
    for where, example_id, row in read_keyed_jsonl(path, "example_id"):
        group = row.get("group")
        if not isinstance(group, str) or not group:
            raise ClipevalError(f"{where}: example {example_id} needs a group name")
        macro = row.get("macro")
        if macro is not None and not isinstance(macro, bool):
            raise ClipevalError(f"{where}: example {example_id}: macro must be true or false, got {macro!r}")
        associations = row.get("associations")
        example = Example(
            example_id,
            group,
            _id_list(row.get("image_ids"), where, example_id, "image_ids"),
            _id_list(row.get("text_ids"), where, example_id, "text_ids"),
            macro,
            None if associations is None else _id_list(associations, where, example_id, "associations"),
        )
        check_example(example, where)
        examples.append(example)
    if not examples:
        raise ClipevalError(f"{path}: no examples")
    return examples


def check_example_references(examples: list[Example], image_ids: np.ndarray, text_ids: np.ndarray, path) -> None:
    """Every image and caption an example names is in the dataset."""
    images, texts = set(image_ids.tolist()), set(text_ids.tolist())
    for example in examples:
        for name, ids, known in (("image", example.image_ids, images), ("text", example.text_ids, texts)):
            missing = [i for i in ids if i not in known]
            if missing:
                raise ClipevalError(f"{path}: example {example.example_id} names unknown {name} id {missing[0]}")
