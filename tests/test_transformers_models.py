"""Hugging Face transformers CLIP and SigLIP folders (`hf-transformers:DIR`): tiny random models saved with
save_pretrained, in their real layout, loaded offline; clipeval's features against the library's own forward
pass, the folder's processor and tokenizer; its problems in one line; and the workflow end to end."""

import json

import numpy as np
import pytest
import yaml
from conftest import run_cli
from snakemake_runner import copy_workflow, recorded_folders, run_jobs

from clipeval.errors import ClipevalError
from clipeval.models.model_check import model_problem

pytestmark = pytest.mark.minutes(2)

TINY_TOWER = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2}
WORDS = ["a", "an", "the", "red", "green", "blue", "yellow", "purple", "orange", "small", "large", "circle"]
WORDS += ["square", "triangle", "star", "hexagon", "cross", "on", "in", "of", "picture", "shape", "and", "with"]


def write_clip_folder(folder):
    """A CLIP model as transformers saves one: config.json and weights, CLIP's own BPE tokenizer (vocab.json and
    merges.txt, from open_clip's copy of CLIP's vocabulary) and a CLIPImageProcessor."""
    import open_clip
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPTokenizer

    folder.mkdir(parents=True)
    bpe = open_clip.tokenizer.SimpleTokenizer()
    # open_clip names CLIP's two special tokens its own way; CLIP's files (and transformers) as CLIP did.
    renamed = {"<start_of_text>": "<|startoftext|>", "<end_of_text>": "<|endoftext|>"}
    (folder / "vocab.json").write_text(json.dumps({renamed.get(token, token): i for token, i in bpe.encoder.items()}))
    merges = sorted(bpe.bpe_ranks, key=bpe.bpe_ranks.get)
    (folder / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt")).save_pretrained(folder)
    text = {**TINY_TOWER, "vocab_size": len(bpe.encoder), "max_position_embeddings": 77}
    vision = {**TINY_TOWER, "image_size": 32, "patch_size": 8}
    torch.manual_seed(0)
    CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=16)).save_pretrained(folder)
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(folder)


def write_siglip_folder(folder):
    """A SigLIP model as transformers saves one, with a small word-level tokenizer (SigLIP's own is a
    SentencePiece model) and a SiglipImageProcessor (a resize to the square, no crop)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, SiglipConfig, SiglipImageProcessor, SiglipModel

    folder.mkdir(parents=True)
    vocabulary = {token: index for index, token in enumerate(["<pad>", "<unk>", "</s>", *WORDS])}
    core = Tokenizer(models.WordLevel(vocabulary, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", eos_token="</s>")
    tokenizer.save_pretrained(folder)
    text = {**TINY_TOWER, "vocab_size": len(vocabulary), "max_position_embeddings": 16}
    vision = {**TINY_TOWER, "image_size": 32, "patch_size": 8}
    torch.manual_seed(1)
    SiglipModel(SiglipConfig(text_config=text, vision_config=vision)).save_pretrained(folder)
    SiglipImageProcessor(size={"height": 32, "width": 32}).save_pretrained(folder)


WRITERS = {"clip": write_clip_folder, "siglip": write_siglip_folder}


def library_features(folder, images, texts):
    """Unit features as the library computes them: its processor, its tokenizer, get_*_features."""
    import torch
    from transformers import AutoImageProcessor, AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(folder, local_files_only=True).eval()
    pixels = AutoImageProcessor.from_pretrained(folder)(images=images, return_tensors="pt")["pixel_values"]
    length = model.config.text_config.max_position_embeddings
    tokens = AutoTokenizer.from_pretrained(folder)(texts, padding="max_length", max_length=length, truncation=True)
    with torch.inference_mode():
        image_output = model.get_image_features(pixel_values=pixels)
        text_output = model.get_text_features(input_ids=torch.tensor(tokens["input_ids"]))
    unit = [
        torch.nn.functional.normalize(getattr(out, "pooler_output", out), dim=-1).numpy()
        for out in (image_output, text_output)
    ]
    return unit


def read_rows(path, key):
    rows = [json.loads(line) for line in open(path)]
    return [row[key] for row in rows], np.array([row["feature"] for row in rows])


@pytest.mark.workflow  # imports transformers and builds a model in two processes: too slow for `make test-fast`
@pytest.mark.parametrize("kind", list(WRITERS))
def test_features_are_the_library_s_own_forward_pass(tmp_path, shapes_dataset, kind):
    from clipeval.data.image_lmdb import ImageStore
    from clipeval.storage.jsonl import read_jsonl

    folder = tmp_path / kind
    WRITERS[kind](folder)
    result = run_cli(
        "extract-features", "--arch", f"hf-transformers:{folder}", "--images", shapes_dataset / "images.lmdb",
        "--texts", shapes_dataset / "texts.jsonl", "--image-output", tmp_path / "images.jsonl",
        "--text-output", tmp_path / "texts.jsonl", "--device", "cpu", "--num-workers", "0",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    image_ids, images = read_rows(tmp_path / "images.jsonl", "image_id")
    text_ids, texts = read_rows(tmp_path / "texts.jsonl", "text_id")
    store = ImageStore(shapes_dataset / "images.lmdb")
    pictures = [store.image(i).convert("RGB") for i in image_ids]
    captions = {row["text_id"]: row["text"] for _, row in read_jsonl(shapes_dataset / "texts.jsonl")}
    expected_images, expected_texts = library_features(folder, pictures, [captions[t] for t in text_ids])
    # Blocks of 64 against one batch: other kernel shapes, so equal to float32's rounding, not to the bit.
    np.testing.assert_allclose(images, expected_images, atol=2e-6)
    np.testing.assert_allclose(texts, expected_texts, atol=2e-6)


@pytest.mark.slow
def test_a_folder_that_cannot_be_loaded_is_named_in_one_line(tmp_path):
    folder = tmp_path / "clip"
    write_clip_folder(folder)
    arch = f"hf-transformers:{folder}"
    assert model_problem("mine", arch, "", "fp32", "extract.precision", "cpu") is None
    assert model_problem("mine", arch, "weights.pt", "fp32", "extract.precision", None) == (
        "models.mine.pretrained: a transformers folder holds its own weights: give pretrained: '' (not 'weights.pt')"
    )
    (folder / "preprocessor_config.json").unlink()
    assert model_problem("mine", arch, "", "fp32", "extract.precision", None) == (
        f"models.mine.arch: {folder}: no preprocessor_config.json (a transformers model folder, as save_pretrained"
        " writes it)"
    )
    (folder / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (folder / "preprocessor_config.json").write_text("{}")
    assert model_problem("mine", arch, "", "fp32", "extract.precision", None) == (
        f"models.mine.arch: {folder / 'config.json'}: model_type 'bert' is not one clipeval reads (clip, siglip,"
        " siglip2)"
    )
    from clipeval.models.build import build_model

    with pytest.raises(ClipevalError, match="no preprocess"):
        build_model(arch, "", preprocess={"mean": [0, 0, 0]})


@pytest.mark.slow
def test_a_folder_missing_weights_is_refused_not_started_at_random(tmp_path):
    from safetensors.torch import load_file, save_file

    from clipeval.models.transformers_models import build_transformers_model

    folder = tmp_path / "clip"
    write_clip_folder(folder)
    weights = load_file(folder / "model.safetensors")
    for name in ("logit_scale", "text_projection.weight"):
        del weights[name]
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ClipevalError) as refused:
        build_transformers_model(folder)
    assert str(refused.value) == (
        f"{folder}: its weights lack 2 of the model's tensors (logit_scale, text_projection.weight), which"
        " transformers would start at random"
    )


# A folder's own Python, named by auto_map in each of its configs: importing it leaves a file behind.
FOLDER_CODE = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\nclass Own: pass\n"
NAMED_CLASSES = ("image_processor_type", "tokenizer_class")
AUTO_MAPS = {
    "config.json": {"AutoModel": "own.Own"},
    "preprocessor_config.json": {"AutoImageProcessor": "own.Own"},
    "tokenizer_config.json": {"AutoTokenizer": ["own.Own", None]},
}


@pytest.mark.slow  # every loader in a new interpreter, torch and transformers imported each time
def test_no_answer_runs_code_from_a_model_folder(tmp_path, shapes_dataset):
    """transformers asks on standard input whether to run a folder's own code (auto_map) where it cannot tell
    otherwise; clipeval never lets it ask, so a `y` piped in, as a careless script might, runs nothing."""
    folder = tmp_path / "clip"
    write_clip_folder(folder)
    marker = tmp_path / "the folder's code ran"
    (folder / "own.py").write_text(FOLDER_CODE.format(marker=str(marker)))
    for name, auto_map in AUTO_MAPS.items():
        settings = json.loads((folder / name).read_text())
        # A class the library lacks: only the folder's code says what to build, so transformers would ask.
        named = {key: "OwnClass" for key in NAMED_CLASSES if key in settings}
        (folder / name).write_text(json.dumps({**settings, **named, "auto_map": auto_map}))
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "clipeval", "extract-features", "--arch", f"hf-transformers:{folder}",
         "--texts", shapes_dataset / "texts.jsonl", "--text-output", tmp_path / "texts.jsonl", "--device", "cpu"],
        input="y\ny\ny\n", capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert not marker.exists(), result.stderr[-2000:]
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1].startswith(
        f"clipeval: error: {folder}: cannot load the transformers model: The repository {folder} contains custom code"
    ), result.stderr[-2000:]


@pytest.mark.workflow
def test_a_transformers_folder_runs_through_the_workflow_beside_an_open_clip_model(tmp_path):
    workdir = copy_workflow(tmp_path / "workflow")
    write_siglip_folder(workdir / "models/siglip")
    config = {
        "experiment": "hf",
        "datasets": {"shapes": {"format": "shapes", "task": "retrieval", "num_images": 30, "seed": 3}},
        "models": {"siglip": {"arch": "hf-transformers:models/siglip", "pretrained": ""}},
        "extract": {"batch_size": 32, "num_workers": 0, "device": "cpu"},
        "metrics": {"bootstrap": 0},
    }
    (workdir / "config/config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    jobs = run_jobs(workdir)
    assert jobs["score_retrieval"] == 1 and "decode_pixels" not in jobs  # its processor is not open_clip's steps
    folders = recorded_folders(workdir, "hf")
    meta = json.loads((workdir / folders["models"]["siglip"] / "meta.json").read_text())
    assert meta["weights"].startswith("folder-sha256:") and meta["pixels"] is None


class RunsCode:
    """A pickle that runs a shell command when it is loaded without weights_only."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


@pytest.mark.slow
def test_pytorch_model_bin_weights_are_checked_to_be_plain_tensors_at_the_start(tmp_path):
    """A folder whose pytorch_model.bin pickles more than tensors passed the start check, and its job ended in
    an UnpicklingError traceback; one of plain tensors (save_pretrained's older format) loads."""
    import torch
    from safetensors.torch import load_file

    from clipeval.models.build import build_model

    folder = tmp_path / "clip"
    write_clip_folder(folder)
    weights = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").unlink()
    arch = f"hf-transformers:{folder}"
    torch.save(weights, folder / "pytorch_model.bin")
    assert model_problem("mine", arch, "", "fp32", "extract.precision", "cpu") is None
    build_model(arch, "")
    marker = tmp_path / "ran"
    torch.save({**weights, "x": RunsCode(marker)}, folder / "pytorch_model.bin", _use_new_zipfile_serialization=False)
    message = f"{folder}/pytorch_model.bin: not plain tensors, which is all clipeval loads (UnpicklingError)"
    assert model_problem("mine", arch, "", "fp32", "extract.precision", "cpu") == f"models.mine.arch: {message}"
    with pytest.raises(Exception) as error:
        build_model(arch, "")
    assert str(error.value) == message
    (folder / "pytorch_model.bin").unlink()
    assert model_problem("mine", arch, "", "fp32", "extract.precision", "cpu") == (
        f"models.mine.arch: {folder}: no weights (model.safetensors, model.safetensors.index.json or pytorch_model.bin)"
    )
    assert not marker.exists()
