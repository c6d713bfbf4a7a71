"""Small benchmark files in the formats real benchmarks ship, made from the shapes generator.

Karpathy split JSON + image folder, COCO captions JSON + image folder,
Chinese-CLIP tsv + jsonl, CIFAR python batches (written as Python 2's cPickle
wrote them), and ImageNet-style class folders.
"""

import base64
import io
import json
import pickle
import struct

import numpy as np
from PIL import Image

from clipeval.data.sources.shapes import CLASSNAMES, generate_shapes


def shapes(num_images, seed, first_image_id=0):
    """[(image_id, png bytes, [captions], class index)]."""
    images, captions, labels = generate_shapes(num_images, seed, first_image_id)
    texts = {}
    for text, positives in zip(captions.texts, captions.image_ids):
        texts.setdefault(int(positives[0]), []).append(text)
    return [(image_id, raw, texts[image_id], label) for (image_id, raw), (_, label) in zip(images, labels)]


def write_cnclip(directory, num_images=40, seed=9, first_image_id=500000):
    directory.mkdir(parents=True, exist_ok=True)
    images, captions, _ = generate_shapes(num_images, seed, first_image_id)
    (directory / "cn_imgs.tsv").write_text("".join(f"{i}\t{base64.b64encode(raw).decode()}\n" for i, raw in images))
    (directory / "cn_texts.jsonl").write_text(
        "".join(
            json.dumps({"text_id": int(t), "text": x, "image_ids": ids.tolist()}) + "\n"
            for t, x, ids in zip(captions.text_ids, captions.texts, captions.image_ids)
        )
    )
    return directory / "cn_imgs.tsv", directory / "cn_texts.jsonl"


def write_karpathy(directory, num_images=24, seed=11):
    """dataset_flickr30k.json with every image in the test split, and its image folder."""
    images = directory / "flickr30k-images"
    images.mkdir(parents=True, exist_ok=True)
    entries, sentid = [], 0
    for imgid, (_, raw, texts, _) in enumerate(shapes(num_images, seed)):
        filename = f"{7000 + imgid}.png"
        (images / filename).write_bytes(raw)
        sentences = []
        for text in texts:
            sentences.append({"tokens": text.split(), "raw": text, "imgid": imgid, "sentid": sentid})
            sentid += 1
        entries.append(
            {
                "imgid": imgid,
                "sentids": [s["sentid"] for s in sentences],
                "sentences": sentences,
                "split": "test",
                "filename": filename,
            }
        )
    annotations = directory / "dataset_flickr30k.json"
    annotations.write_text(json.dumps({"images": entries, "dataset": "flickr30k"}))
    return annotations, images


def write_coco(directory, num_images=24, seed=12):
    """captions_val2017.json and its image folder."""
    images = directory / "val2017"
    images.mkdir(parents=True, exist_ok=True)
    image_entries, notes = [], []
    for image_id, raw, texts, _ in shapes(num_images, seed, first_image_id=900):
        name = f"{image_id:012d}.png"
        (images / name).write_bytes(raw)
        image_entries.append({"id": image_id, "file_name": name, "height": 64, "width": 64})
        notes += [{"image_id": image_id, "id": 10 * image_id + k, "caption": text} for k, text in enumerate(texts)]
    annotations = directory / "captions_val2017.json"
    annotations.write_text(json.dumps({"info": {}, "images": image_entries, "annotations": notes}))
    return annotations, images


def write_imagefolder(directory, num_images=30, seed=13):
    """One folder per shape, a class-names file and a templates file."""
    root = directory / "val"
    for index, (_, raw, _, label) in enumerate(shapes(num_images, seed)):
        folder = root / CLASSNAMES[label]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{index:04d}.png").write_bytes(raw)
    for name in CLASSNAMES:
        (root / name).mkdir(parents=True, exist_ok=True)
    (directory / "classnames.txt").write_text("".join(f"{name}\n" for name in CLASSNAMES))
    (directory / "templates.txt").write_text("a {}\na picture of a {}\n")
    return root, directory / "classnames.txt", directory / "templates.txt"


class Python2StylePickler(pickle._Pickler):
    """Writes bytes as Python 2's str opcodes, as the CIFAR release (made with Python 2's cPickle) has them.

    Python 3 would write bytes at protocol 2 as calls to _codecs.encode, which
    the real files never contain.
    """

    dispatch = pickle._Pickler.dispatch.copy()

    def save_bytes(self, obj):
        if len(obj) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(obj)]) + obj)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(obj)) + obj)
        self.memoize(obj)

    dispatch[bytes] = save_bytes


def python2_pickle(obj) -> bytes:
    buffer = io.BytesIO()
    Python2StylePickler(buffer, protocol=2).dump(obj)
    return buffer.getvalue()


def write_cifar(directory, layout, pixels, labels, names):
    """A batch and its meta file as the CIFAR python release has them (protocol 2, bytes keys)."""
    directory.mkdir(parents=True, exist_ok=True)
    flat = pixels.transpose(0, 3, 1, 2).reshape(len(pixels), -1)
    label_key, batch_name, meta_name, names_key = {
        "cifar10": (b"labels", "test_batch", "batches.meta", b"label_names"),
        "cifar100": (b"fine_labels", "test", "meta", b"fine_label_names"),
    }[layout]
    batch = {
        b"batch_label": b"testing batch 1 of 1",
        label_key: labels,
        b"data": flat,
        b"filenames": [f"img_{i}.png".encode() for i in range(len(labels))],
    }
    if layout == "cifar100":
        batch[b"coarse_labels"] = [0] * len(labels)
    (directory / batch_name).write_bytes(python2_pickle(batch))
    (directory / meta_name).write_bytes(python2_pickle({names_key: [n.encode() for n in names]}))
    return directory / batch_name


def write_shapes_cifar(directory, num_images=30, seed=14):
    """A CIFAR-10-layout batch of 32×32 shapes, with a templates file."""
    rows = shapes(num_images, seed)
    pixels = np.stack(
        [np.asarray(Image.open(io.BytesIO(raw)).convert("RGB").resize((32, 32))) for _, raw, _, _ in rows]
    )
    batch = write_cifar(
        directory / "cifar-10-batches-py", "cifar10", pixels, [label for *_, label in rows], list(CLASSNAMES)
    )
    (directory / "cifar-templates.txt").write_text("a {}\nthere is a {} in the picture\n")
    return batch, directory / "cifar-templates.txt"


def object_array_as_shape_pickle() -> bytes:
    """A CIFAR-like batch that names only numpy.ndarray, numpy.dtype and numpy's _reconstruct, yet builds an
    object array from raw bytes (a pointer 0x4141414141414141, its dtype's state claiming no objects) and
    passes it as another array's shape: run with numpy's own constructors, this pickle dereferences it."""

    def reconstruct(shape):
        return b"cnumpy._core.multiarray\n_reconstruct\ncnumpy\nndarray\n" + shape + b"U\x01b\x87R"

    def dtype(code):
        return b"cnumpy\ndtype\nU\x02" + code + b"\x89\x88\x87R(K\x03U\x01|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb"

    pointer_array = reconstruct(b"K\x00\x85") + b"(K\x01K\x01\x85" + dtype(b"O8") + b"\x89U\x08" + b"A" * 8 + b"tb"
    data_array = reconstruct(b"h\x01") + b"(K\x01K\x01\x85" + dtype(b"u1") + b"\x89U\x01xtb"
    return b"\x80\x02}(U\x06labels]U\x04data" + pointer_array + b"q\x010" + data_array + b"u."


def write_sugarcrepe(directory, num_images=10, seed=15):
    """SugarCrepe's layout: a folder of split files (id → filename, caption, negative_caption) over COCO
    val2017-named images. Each split takes some of the images, some images two splits; the negative caption of
    an image is another image's caption."""
    images = directory / "val2017"
    images.mkdir(parents=True, exist_ok=True)
    drawn = shapes(num_images, seed, first_image_id=397000)
    for image_id, raw, _, _ in drawn:
        (images / f"{image_id:012d}.png").write_bytes(raw)
    annotations = directory / "sugar-crepe"
    annotations.mkdir(exist_ok=True)
    splits = {"replace_obj": range(0, 6), "swap_att": range(4, num_images)}
    for split, indices in splits.items():
        entries = {}
        for key, index in enumerate(indices):
            image_id, _, texts, _ = drawn[index]
            other = drawn[(index + 1) % num_images][2]
            entries[str(3 * key)] = {
                "filename": f"{image_id:012d}.png",
                "caption": texts[0],
                "negative_caption": other[0],
            }
        (annotations / f"{split}.json").write_text(json.dumps(entries))
    return annotations, images


def write_winogavil(directory, num_rows=8, num_images=14, seed=17):
    """WinoGAViL's layout: winogavil_dataset.csv as its repository ships it (candidates and associations as JSON
    lists of image names, the cue, the game's other columns, ID) and images/NAME.jpg (JPEG, as its
    download-images.py saves them). Rows take 5, 6, 10 and 12
    candidates in turn; the cue is the first candidate's class name, and the associations are the candidates of
    that class (at least one, never all). Returns (csv path, images folder)."""
    import csv

    images = directory / "images"
    images.mkdir(parents=True, exist_ok=True)
    drawn = shapes(num_images, seed)
    names = [f"item {index}" for index in range(num_images)]
    for name, (_, raw, _, _) in zip(names, drawn):
        Image.open(io.BytesIO(raw)).convert("RGB").save(images / f"{name}.jpg", format="JPEG", quality=95)
    label = {name: drawn[index][3] for index, name in enumerate(names)}
    path = directory / "winogavil_dataset.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["candidates", "cue", "associations", "score_fool_the_ai", "num_associations",
                         "num_candidates", "solvers_jaccard_mean", "solvers_jaccard_std", "ID"])  # fmt: skip
        for row in range(num_rows):
            count = (5, 6, 10, 12)[row % 4]
            candidates = [names[(row + k) % num_images] for k in range(count)]
            cue = CLASSNAMES[label[candidates[0]]]
            associations = [name for name in candidates if label[name] == label[candidates[0]]]
            if len(associations) == count:
                associations = associations[:-1]
            writer.writerow([json.dumps(candidates), cue, json.dumps(associations), 50, len(associations), count,
                             1.0, 0.0, 100 + row])  # fmt: skip
    return path, images


def write_winoground(directory, num_examples=6, seed=16):
    """Winoground's layout: examples.jsonl (id, caption_0/1, image_0/1 without suffix, tags) and images/."""
    images = directory / "images"
    images.mkdir(parents=True, exist_ok=True)
    drawn = shapes(2 * num_examples, seed)
    lines = []
    for example in range(num_examples):
        captions = []
        for j in range(2):
            _, raw, texts, _ = drawn[2 * example + j]
            (images / f"ex_{example}_img_{j}.png").write_bytes(raw)
            captions.append(texts[0])
        tag = ("Object", "Relation", "Both")[example % 3]
        lines.append(
            {
                "id": example,
                "caption_0": captions[0],
                "caption_1": captions[1],
                "image_0": f"ex_{example}_img_0",
                "image_1": f"ex_{example}_img_1",
                "tag": tag,
                "secondary_tag": "",
                "num_main_preds": 1,
                "collapsed_tag": tag,
            }
        )
    examples = directory / "examples.jsonl"
    examples.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return examples, images


def compositionality_entries(folder="sources"):
    """Config entries of the SugarCrepe, Winoground and ARO VG-Relation sets that write_sugarcrepe,
    write_winoground and write_aro make in FOLDER/sugarcrepe, FOLDER/winoground and FOLDER/aro."""
    return {
        "sugarcrepe": {
            "format": "sugarcrepe",
            "task": "compositionality",
            "annotations": f"{folder}/sugarcrepe/sugar-crepe",
            "images": f"{folder}/sugarcrepe/val2017",
        },
        "winoground": {
            "format": "winoground",
            "task": "compositionality",
            "examples": f"{folder}/winoground/examples.jsonl",
            "images": f"{folder}/winoground/images",
        },
        "vg-relation": {
            "format": "aro",
            "task": "compositionality",
            "annotations": f"{folder}/aro/visual_genome_relation.json",
            "images": f"{folder}/aro/images",
        },
    }


def write_aro(directory, kind="relation", num_examples=8, seed=17):
    """ARO's VG-Relation (or VG-Attribution) layout: a JSON list of entries (image_path, the box, true and
    false captions, relation_name or attributes) and the images folder. Each image is a shape image pasted at
    (8, 4) into a larger grey canvas, so the box (8, 4, 64, 64) crops it back."""
    images = directory / "images"
    images.mkdir(parents=True, exist_ok=True)
    drawn = shapes(num_examples, seed)
    relations = ("on", "next to", "on", "holding")  # "next to" is one of ARO's symmetric relations
    entries = []
    for index, (_, raw, texts, _) in enumerate(drawn):
        canvas = Image.new("RGB", (90, 80), (128, 128, 128))
        canvas.paste(Image.open(io.BytesIO(raw)).convert("RGB"), (8, 4))
        name = f"{2300000 + index}.jpg" if index % 2 else f"{2300000 + index}.png"
        canvas.save(images / name)
        entry = {
            "image_id": str(2300000 + index),
            "image_path": name,
            "bbox_x": 8,
            "bbox_y": 4,
            "bbox_w": 64,
            "bbox_h": 64,
            "true_caption": texts[0],
            "false_caption": drawn[(index + 1) % num_examples][2][0],
        }
        if kind == "relation":
            entry["relation_name"] = relations[index % len(relations)]
        else:
            entry["attributes"] = [("red", "blue")[index % 2], "small"]
        entries.append(entry)
    annotations = directory / f"visual_genome_{kind}.json"
    annotations.write_text(json.dumps(entries))
    return annotations, images


def word_orders(caption, count=4):
    """`count` reorderings of a caption's words, as ARO's perturbations reorder them: rotations by 1, 2, …
    words, and the words reversed last."""
    words = caption.split()
    rotations = [" ".join(words[shift % len(words) :] + words[: shift % len(words)]) for shift in range(1, count)]
    return [*rotations, " ".join(reversed(words))]


def write_aro_order(directory, num_images=4, captions_per_image=2, seed=19, per_shard=5):
    """COCO-Order's layout as MIEB's copy holds it (gowitheflow/ARO-COCO-order): parquet shards
    (data/test-0000N-of-0000M.parquet) of a row per caption, its image repeated in `images` (the hub's Image
    struct), `correct_caption` and four word orders of it in hard_text_1 … hard_text_4."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = directory / "data"
    folder.mkdir(parents=True, exist_ok=True)
    rows = [
        {"images": {"bytes": raw, "path": None}, "correct_caption": caption}
        | dict(zip(("hard_text_1", "hard_text_2", "hard_text_3", "hard_text_4"), word_orders(caption)))
        for _, raw, texts, _ in shapes(num_images, seed)
        for caption in texts[:captions_per_image]
    ]
    chunks = [rows[start : start + per_shard] for start in range(0, len(rows), per_shard)]
    image_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    for number, chunk in enumerate(chunks):
        columns = {"images": pa.array([row["images"] for row in chunk], type=image_type)}
        columns |= {name: pa.array([row[name] for row in chunk]) for name in list(chunk[0])[1:]}
        pq.write_table(pa.table(columns), folder / f"test-{number:05d}-of-{len(chunks):05d}.parquet")
    return folder


def write_xm3600(directory, num_images=8, seed=18):
    """Crossmodal-3600's layout: captions.jsonl (image/key and, per language, its captions) and images/KEY.jpg.
    English has two captions an image, German one, Chinese one; the keys are hex like the release's."""
    images = directory / "images"
    images.mkdir(parents=True, exist_ok=True)
    lines = []
    for index, (_, raw, texts, _) in enumerate(shapes(num_images, seed)):
        key = f"{0x1A2B3C4D5E6F7000 + index:016x}"
        Image.open(io.BytesIO(raw)).convert("RGB").save(images / f"{key}.jpg", quality=95)
        lines.append(
            {
                "image/key": key,
                "en": {"caption": texts[:2], "caption/tokenized": texts[:2]},
                "de": {"caption": [f"ein Bild: {texts[0]}"], "caption/tokenized": [f"ein bild: {texts[0]}"]},
                "zh": {"caption": [f"一只{'猫狗'[index % 2]}坐在垫子上"], "caption/tokenized": ["一只 猫"]},
            }
        )
    annotations = directory / "captions.jsonl"
    annotations.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return annotations, images


def write_aligned_lines(directory, num_images=6, seed=21):
    """XTD10's layout: test_image_names.txt (one COCO file name a line), test_1kcaptions_de.txt (the caption of
    the image on the same line) and the images folder; returns (names, captions, images)."""
    images = directory / "images"
    images.mkdir(parents=True, exist_ok=True)
    names, captions = [], []
    for index, (_, raw, texts, _) in enumerate(shapes(num_images, seed)):
        name = f"COCO_val2014_{139 + 1000 * index:012d}.jpg"
        Image.open(io.BytesIO(raw)).convert("RGB").save(images / name, quality=95)
        names.append(name)
        captions.append(f"ein Bild: {texts[0]}")
    (directory / "test_image_names.txt").write_text("".join(f"{name}\n" for name in names))
    (directory / "test_1kcaptions_de.txt").write_text("".join(f"{caption}\n" for caption in captions))
    return directory / "test_image_names.txt", directory / "test_1kcaptions_de.txt", images


def write_wds_export(directory, kind="retrieval", num_images=10, seed=19, per_shard=4, groups=None):
    """CLIP_benchmark's webdataset export of a set: ROOT/test/0.tar, 1.tar, … (KEY.webp with KEY.txt captions or
    KEY.cls labels), nshards.txt, and for classification classnames.txt and its templates file; returns ROOT.
    `groups(index)`: the integers of each sample's KEY.npy, as DataComp's fairness sets add them. kind
    "multilabel" writes voc2007_multilabel's layout: KEY.npy a float32 0/1 vector of the classes the sample holds
    (`groups(index)` lists them), no KEY.cls, and dataset_type.txt saying `multilabel`."""
    import tarfile

    split = directory / "test"
    split.mkdir(parents=True, exist_ok=True)
    drawn = shapes(num_images, seed)
    shards = [drawn[start : start + per_shard] for start in range(0, num_images, per_shard)]
    for number, shard in enumerate(shards):
        with tarfile.open(split / f"{number}.tar", "w", format=tarfile.USTAR_FORMAT) as archive:
            for index, (_, raw, texts, label) in enumerate(shard, start=number * per_shard):
                webp = io.BytesIO()
                Image.open(io.BytesIO(raw)).save(webp, format="webp", lossless=True)
                other = "\n".join(texts).encode() if kind == "retrieval" else str(label).encode()
                members = [("webp", webp.getvalue()), ("txt" if kind == "retrieval" else "cls", other)]
                if kind == "multilabel":
                    multi_hot = np.zeros(len(CLASSNAMES), dtype=np.float32)
                    multi_hot[groups(index)] = 1
                    vector = io.BytesIO()
                    np.save(vector, multi_hot)
                    members[1:] = [("npy", vector.getvalue())]
                elif groups is not None:
                    vector = io.BytesIO()
                    np.save(vector, np.array(groups(index), dtype=np.int64))
                    members.append(("npy", vector.getvalue()))
                for extension, data in members:
                    info = tarfile.TarInfo(f"s{index:07d}.{extension}")
                    info.size, info.mtime = len(data), 0
                    archive.addfile(info, io.BytesIO(data))
    (split / "nshards.txt").write_text(f"{len(shards)}\n")
    if kind == "retrieval":
        (directory / "dataset_type.txt").write_text("retrieval\n")
    else:
        (directory / "classnames.txt").write_text("".join(f"{name}\n" for name in CLASSNAMES))
        (directory / "zeroshot_classification_templates.txt").write_text("a photo of a {c}.\na drawing of the {c}.\n")
    if kind == "multilabel":
        (directory / "dataset_type.txt").write_text("multilabel\n")
    return directory


def write_parquet_shards(directory, kind="retrieval", num_images=9, seed=20, per_shard=4):
    """Parquet shards as the Hugging Face hub holds an image dataset (data/test-0000N-of-0000M.parquet): an
    `image` column of the hub's Image struct (bytes, path), and `caption` (a list of strings) or `label` (an
    int, its ClassLabel names in the schema's `huggingface` metadata)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = directory / "data"
    folder.mkdir(parents=True, exist_ok=True)
    drawn = shapes(num_images, seed)
    chunks = [drawn[start : start + per_shard] for start in range(0, num_images, per_shard)]
    image_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    features = {"image": {"_type": "Image"}}
    if kind == "retrieval":
        features["caption"] = {"feature": {"dtype": "string", "_type": "Value"}, "_type": "Sequence"}
    else:
        features["label"] = {"names": list(CLASSNAMES), "_type": "ClassLabel"}
    metadata = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
    for number, chunk in enumerate(chunks):
        images = pa.array([{"bytes": raw, "path": f"{image_id}.png"} for image_id, raw, _, _ in chunk], type=image_type)
        if kind == "retrieval":
            other = ("caption", pa.array([texts for _, _, texts, _ in chunk], type=pa.list_(pa.string())))
        else:
            other = ("label", pa.array([label for *_, label in chunk], type=pa.int64()))
        table = pa.table({"image": images, other[0]: other[1]}).replace_schema_metadata(metadata)
        pq.write_table(table, folder / f"test-{number:05d}-of-{len(chunks):05d}.parquet")
    return folder
