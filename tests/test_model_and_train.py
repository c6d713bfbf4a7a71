import math

import open_clip
import pytest
import torch

from clipeval.errors import ClipevalError
from clipeval.models.build import build_model, weights_identity
from clipeval.models.training import TrainingSettings, contrastive_loss, train_clip


def test_tiny_config_is_registered_with_open_clip():
    assert "clipeval-tiny" in open_clip.list_models()


def test_unknown_arch():
    with pytest.raises(ClipevalError, match=r"unknown open_clip arch 'ViT-Q-99'"):
        build_model("ViT-Q-99", None)


def test_missing_checkpoint_file(tmp_path):
    with pytest.raises(ClipevalError, match=r"nope\.pt: checkpoint file not found \(model arch clipeval-tiny\)"):
        build_model("clipeval-tiny", str(tmp_path / "nope.pt"))


def test_unknown_pretrained_tag():
    with pytest.raises(ClipevalError, match=r"unknown pretrained tag 'laion9b' for arch 'ViT-B-32' \(known: .*openai"):
        build_model("ViT-B-32", "laion9b")


def test_weights_that_do_not_fit_the_arch(tmp_path, tiny_checkpoint):
    with pytest.raises(ClipevalError, match=r"tiny\.pt: weights do not fit arch 'RN50'"):
        build_model("RN50", str(tiny_checkpoint))


INITIALISERS = {name: getattr(torch.nn.init, name) for name in ("normal_", "uniform_", "kaiming_uniform_", "zeros_")}


def counted_initialisers(monkeypatch):
    """{initialiser: calls}, counting the calls of torch.nn.init's initialisers from now on."""
    calls = dict.fromkeys(INITIALISERS, 0)

    def counting(name, initialiser):
        def initialise(*args, **kwargs):
            calls[name] += 1
            return initialiser(*args, **kwargs)

        return initialise

    for name, initialiser in INITIALISERS.items():
        monkeypatch.setattr(torch.nn.init, name, counting(name, initialiser))
    return calls


def test_a_model_from_a_checkpoint_draws_no_random_weights_and_computes_as_open_clip_loads_it(
    tiny_checkpoint, monkeypatch
):
    calls = counted_initialisers(monkeypatch)
    open_clip.create_model("clipeval-tiny")
    assert all(calls.values()), calls  # what a random initialisation calls
    calls.update(dict.fromkeys(calls, 0))
    model, transform, tokenizer = build_model("clipeval-tiny", str(tiny_checkpoint))
    assert not any(calls.values()), calls
    torch.nn.init.normal_(torch.zeros(2))
    assert calls["normal_"] == 1  # the initialisers are back
    saved = torch.load(tiny_checkpoint)["state_dict"]
    built = model.state_dict()
    assert built.keys() == saved.keys() and all(torch.equal(built[key], saved[key]) for key in saved)

    reference, _, _ = open_clip.create_model_and_transforms("clipeval-tiny", pretrained=str(tiny_checkpoint))
    reference.eval()
    images = torch.rand(3, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    texts = tokenizer(["a red circle", "a blue square", "a green star"])
    with torch.no_grad():
        assert torch.equal(model.encode_image(images), reference.encode_image(images))
        assert torch.equal(model.encode_text(texts), reference.encode_text(texts))


def test_a_failed_load_puts_the_initialisers_back(tmp_path, tiny_checkpoint):
    with pytest.raises(ClipevalError, match="weights do not fit arch 'RN50'"):
        build_model("RN50", str(tiny_checkpoint))
    assert {name: getattr(torch.nn.init, name) for name in INITIALISERS} == INITIALISERS
    torch.manual_seed(0)
    assert torch.nn.init.normal_(torch.zeros(4)).abs().sum() > 0


def test_file_that_is_not_a_checkpoint(tmp_path):
    path = tmp_path / "junk.pt"
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(ClipevalError, match=r"junk\.pt: not a loadable checkpoint"):
        build_model("clipeval-tiny", str(path))


def _torch_loads_seen(monkeypatch):
    """(file, map_location, whether the load maps the file) of each torch.load call."""
    from torch.utils.serialization import config

    seen, original = [], torch.load

    def recording(path, *args, **kwargs):
        mapped = kwargs.get("mmap")
        seen.append((str(path), str(kwargs.get("map_location")), config.load.mmap if mapped is None else mapped))
        return original(path, *args, **kwargs)

    monkeypatch.setattr(torch, "load", recording)
    return seen


def test_a_zip_checkpoint_is_checked_on_the_meta_device_and_read_once_through_a_mapping(tiny_checkpoint, monkeypatch):
    seen = _torch_loads_seen(monkeypatch)
    model, _, _ = build_model("clipeval-tiny", str(tiny_checkpoint))
    reads = [(location, mapped) for path, location, mapped in seen if path == str(tiny_checkpoint)]
    # Besides the meta read that checks it and the mapped read that builds, one more mapped read looks for the
    # tag settings a fine-tuned checkpoint carries: none reads the tensors' bytes into memory.
    assert sorted(reads) == [("cpu", True), ("cpu", True), ("meta", False)]
    saved = torch.load(tiny_checkpoint, weights_only=True)["state_dict"]
    assert all(torch.equal(value, saved[key]) for key, value in model.state_dict().items())
    from torch.utils.serialization import config

    assert config.load.mmap is False


def test_a_checkpoint_in_torch_s_older_format_is_read_without_a_mapping(tiny_checkpoint, tmp_path, monkeypatch):
    saved = torch.load(tiny_checkpoint, weights_only=True)
    legacy = tmp_path / "legacy.pt"
    torch.save(saved, legacy, _use_new_zipfile_serialization=False)
    seen = _torch_loads_seen(monkeypatch)
    model, _, _ = build_model("clipeval-tiny", str(legacy))
    assert ("cpu", False) in [(location, mapped) for path, location, mapped in seen if path == str(legacy)]
    assert all(torch.equal(value, saved["state_dict"][key]) for key, value in model.state_dict().items())


def test_a_model_built_from_a_full_checkpoint_draws_no_random_weights(tiny_checkpoint, monkeypatch):
    """Every weight an initialiser would draw is overwritten by the strict load; that includes the attention
    weights torch's MultiheadAttention draws through the initialiser it imported by name."""
    drawn = []
    for method in ("uniform_", "normal_"):
        original = getattr(torch.Tensor, method)
        monkeypatch.setattr(
            torch.Tensor,
            method,
            lambda tensor, *a, _draw=original, **k: drawn.append(tensor.shape) or _draw(tensor, *a, **k),
        )
    build_model("clipeval-tiny", str(tiny_checkpoint))
    assert drawn == []
    torch.nn.MultiheadAttention(8, 2)  # the initialisers are back once the model is built
    assert (24, 8) in drawn  # its in-projection, through the xavier_uniform_ it imported


# open_clip reads .npz files as Google big_vision (SigLIP) weights with numpy.
def test_big_vision_weights_for_a_model_without_big_vision_towers(tmp_path):
    import numpy as np

    path = tmp_path / "siglip.npz"
    np.savez(path, **{"params/img/embedding/kernel": np.zeros((16, 16, 3, 8), np.float32)})
    with pytest.raises(ClipevalError) as error:
        build_model("clipeval-tiny", str(path))
    assert str(error.value) == (
        f"{path}: weights do not fit arch 'clipeval-tiny': open_clip loads .npz (big_vision)"
        " weights only into SigLIP-style models ('ModifiedResNet' object has no attribute"
        " 'trunk')"
    )


@pytest.mark.parametrize(
    "content, message",
    [
        (b"not a zip archive", "not a loadable checkpoint (BadZipFile)"),
        (None, "not a loadable checkpoint (ValueError)"),
        ({"params/b": [{"code": "anything"}]}, "array params/b.npy holds Python objects, not weights"),
    ],
)
def test_an_npz_that_is_not_weights_is_refused_before_open_clip_reads_it(tmp_path, content, message):
    import numpy as np

    path = tmp_path / "weights.npz"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        np.savez(path, **{key: np.array(value, dtype=object) for key, value in (content or {}).items()})
    with pytest.raises(ClipevalError) as error:
        build_model("clipeval-tiny", str(path))
    assert str(error.value) == f"{path}: {message}"


def test_weights_identity(tiny_checkpoint):
    import hashlib

    assert (
        weights_identity("clipeval-tiny", str(tiny_checkpoint))
        == "sha256:" + hashlib.sha256(tiny_checkpoint.read_bytes()).hexdigest()
    )
    assert weights_identity("ViT-B-32", "openai") == "open_clip-tag:openai"


def test_a_weights_folder_is_identified_by_its_files_names_and_content(tmp_path):
    import hashlib

    (tmp_path / "run/sub").mkdir(parents=True)
    (tmp_path / "run/open_clip_config.json").write_text("{}")
    (tmp_path / "run/sub/open_clip_model.safetensors").write_bytes(b"weights")
    listing = "".join(
        f"{name}\0{hashlib.sha256(content).hexdigest()}\n"
        for name, content in [("open_clip_config.json", b"{}"), ("sub/open_clip_model.safetensors", b"weights")]
    )
    expected = "folder-sha256:" + hashlib.sha256(listing.encode()).hexdigest()
    assert weights_identity(f"local-dir:{tmp_path}/run", "ignored.pt") == expected


def test_contrastive_loss_matches_hand_computation():
    torch.manual_seed(0)
    images, texts = torch.randn(4, 8), torch.randn(4, 8)
    scale = torch.tensor(math.log(10.0))
    loss = contrastive_loss(images, texts, scale).item()

    def unit(m):
        return [[v / math.sqrt(sum(x * x for x in row)) for v in row] for row in m.tolist()]

    a, b = unit(images), unit(texts)
    logits = [[10.0 * sum(x * y for x, y in zip(ra, rb)) for rb in b] for ra in a]
    columns = [list(col) for col in zip(*logits)]

    def cross_entropy(rows):
        return sum(math.log(sum(math.exp(v) for v in row)) - row[i] for i, row in enumerate(rows)) / len(rows)

    assert loss == pytest.approx((cross_entropy(logits) + cross_entropy(columns)) / 2, rel=1e-5)


@pytest.mark.slow
def test_training_lowers_the_loss_and_saves_an_open_clip_checkpoint(tmp_path, shapes_dataset):
    output = tmp_path / "model" / "checkpoint.pt"
    settings = TrainingSettings("clipeval-tiny", epochs=3, batch_size=20, lr=2e-3, seed=0)
    losses = train_clip(settings, shapes_dataset, output, log=lambda _: None)
    assert losses[-1] < losses[0]
    assert sorted(p.name for p in output.parent.iterdir()) == ["checkpoint.pt"]
    model, _, preprocess = open_clip.create_model_and_transforms("clipeval-tiny", pretrained=str(output))
    trained = torch.load(output, weights_only=True)["state_dict"]
    for name, value in model.state_dict().items():
        assert torch.equal(value, trained[name]), name


@pytest.mark.slow
def test_training_is_deterministic(tmp_path, shapes_dataset):
    for name in ("a.pt", "b.pt"):
        settings = TrainingSettings("clipeval-tiny", epochs=1, batch_size=20, lr=1e-3, seed=3)
        train_clip(settings, shapes_dataset, tmp_path / name, log=lambda _: None)
    a = torch.load(tmp_path / "a.pt", weights_only=True)["state_dict"]
    b = torch.load(tmp_path / "b.pt", weights_only=True)["state_dict"]
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_cuda_device_that_torch_does_not_see_is_a_clear_error():
    from clipeval.models.build import resolve_device

    count = torch.cuda.device_count()
    seen = f"torch sees {count} CUDA device(s)" if count else "torch sees no CUDA device"
    with pytest.raises(ClipevalError) as error:
        resolve_device(f"cuda:{count}")
    assert str(error.value) == f"device 'cuda:{count}' requested but {seen}"
    with pytest.raises(ClipevalError) as error:
        resolve_device("cuda:x")
    assert str(error.value) == "device 'cuda:x': expected auto, cpu, cuda or cuda:N"
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if count else "cpu")


def test_weights_neither_cached_nor_downloadable_are_one_error_said_once(tmp_path, monkeypatch, caplog):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ClipevalError) as error:
        build_model("ViT-B-32", "laion2b_s34b_b79k")
    assert str(error.value).startswith(
        "cannot build model 'ViT-B-32' with pretrained 'laion2b_s34b_b79k': Failed to download weights for tag"
        " 'laion2b_s34b_b79k': Failed to download file (open_clip_pytorch_model.bin) for laion/"
    )
    assert not [record for record in caplog.records if "Failed to download" in record.getMessage()]


def test_a_text_tower_config_not_in_the_hub_cache_is_one_error(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ClipevalError) as error:
        build_model("xlm-roberta-base-ViT-B-32", None)
    assert str(error.value).startswith(
        f"cannot build model 'xlm-roberta-base-ViT-B-32' with pretrained None: a file it needs is not in the"
        f" Hugging Face cache ({tmp_path}) and could not be downloaded: "
    )


def weights(path):
    return torch.load(path, weights_only=True)["state_dict"]


def is_text_tower(name):
    return not name.startswith("visual.") and name != "logit_scale"


@pytest.mark.slow
def test_a_fine_tune_keeps_its_frozen_tower_and_resumes_epoch_by_epoch_to_the_bits_of_one_training(
    tmp_path, shapes_dataset, tiny_checkpoint
):
    settings = TrainingSettings(
        "clipeval-tiny", epochs=2, batch_size=20, lr=1e-3, seed=1, start_from=str(tiny_checkpoint),
        warmup_steps=1, weight_decay=0.05, freeze=("text",),
    )  # fmt: skip
    quiet = {"log": lambda _: None}
    at_once = train_clip(settings, shapes_dataset, tmp_path / "at-once.pt", **quiet)
    first = train_clip(settings, shapes_dataset, tmp_path / "1.pt", 1, state_output=tmp_path / "1.state", **quiet)
    second = train_clip(settings, shapes_dataset, tmp_path / "2.pt", 2, tmp_path / "1.state", **quiet)
    assert first == at_once[:1] and second == at_once
    assert (tmp_path / "2.pt").read_bytes() == (tmp_path / "at-once.pt").read_bytes()

    start, tuned = weights(tiny_checkpoint), weights(tmp_path / "2.pt")
    text = [name for name in start if is_text_tower(name)]
    assert "text_projection" in text and "token_embedding.weight" in text
    assert all(torch.equal(start[name], tuned[name]) for name in text)
    assert not any(torch.equal(start[name], tuned[name]) for name in start if name.startswith("visual.proj"))


@pytest.mark.slow
def test_resuming_from_another_epochs_state_is_one_error(tmp_path, shapes_dataset):
    settings = TrainingSettings("clipeval-tiny", epochs=3, batch_size=20, lr=1e-3, seed=1)
    state = tmp_path / "1.state"
    train_clip(settings, shapes_dataset, tmp_path / "1.pt", 1, state_output=state, log=lambda _: None)
    with pytest.raises(ClipevalError) as error:
        train_clip(settings, shapes_dataset, tmp_path / "3.pt", 3, state, log=lambda _: None)
    assert str(error.value) == f"{state}: a state after epoch 1, not after epoch 2"
    (tmp_path / "checkpoint.state").write_bytes((tmp_path / "1.pt").read_bytes())
    with pytest.raises(ClipevalError) as error:
        train_clip(settings, shapes_dataset, tmp_path / "2.pt", 2, tmp_path / "checkpoint.state", log=lambda _: None)
    assert str(error.value) == f"{tmp_path / 'checkpoint.state'}: not a training state to resume from (KeyError)"
    assert not (tmp_path / "2.pt").exists() and not (tmp_path / "3.pt").exists()


@pytest.mark.slow
def test_a_bfloat16_training_keeps_float32_weights(tmp_path, shapes_dataset):
    settings = TrainingSettings("clipeval-tiny", epochs=1, batch_size=20, lr=1e-3, seed=1, precision="bf16")
    losses = train_clip(settings, shapes_dataset, tmp_path / "bf16.pt", log=lambda _: None)
    assert math.isfinite(losses[0])
    floats = [tensor for tensor in weights(tmp_path / "bf16.pt").values() if tensor.is_floating_point()]
    assert floats and {tensor.dtype for tensor in floats} == {torch.float32}


def test_the_train_command_offers_the_towers_and_precisions_training_knows():
    from clipeval.commands import train as command
    from clipeval.models import training

    assert (command.TOWERS, command.PRECISIONS) == (training.TOWERS, training.PRECISIONS)


def test_the_train_command_refuses_half_precision_on_the_cpu_under_the_portable_profile(tmp_path):
    """As the planner does (planning/checks.py): its kernels are not pinned, so its bits would vary by CPU."""
    from conftest import run_cli

    common = ("train", "--arch", "clipeval-tiny", "--dataset", tmp_path / "none", "--output", tmp_path / "out.pt")
    common += ("--epochs", 1, "--batch-size", 2, "--lr", "1e-3", "--seed", 0, "--precision", "bf16")
    result = run_cli(*common)
    assert (result.returncode, result.stderr) == (
        1,
        "clipeval: error: --precision bf16 on the CPU is outside --numerics portable, whose training is the same bits"
        " on every CPU: train in fp32, on a GPU (--device cuda), or under --numerics native\n",
    )
    assert not (tmp_path / "out.pt").exists()
    # Under the native profile, or on a GPU, it is asked for knowingly.
    from clipeval.numerics import pins_training

    assert pins_training("native", "bf16", "cpu") and pins_training("portable", "amp", "cuda")
    assert not pins_training("portable", "amp", "cpu") and pins_training("portable", "fp32", "cpu")


@pytest.mark.slow
def test_a_training_set_too_large_to_hold_is_preprocessed_a_batch_at_a_time_to_the_same_bits(
    tmp_path, shapes_dataset, monkeypatch
):
    settings = TrainingSettings("clipeval-tiny", epochs=1, batch_size=20, lr=1e-3, seed=2)
    train_clip(settings, shapes_dataset, tmp_path / "held.pt", log=lambda _: None)
    monkeypatch.setattr("clipeval.models.training.HELD_IMAGES_BYTES", 0)
    train_clip(settings, shapes_dataset, tmp_path / "by-batch.pt", log=lambda _: None)
    assert (tmp_path / "held.pt").read_bytes() == (tmp_path / "by-batch.pt").read_bytes()


def test_a_tags_activation_and_preprocessing_are_what_open_clip_sets_beyond_its_arch():
    from clipeval.models.open_clip_models import tag_settings

    openai = tag_settings("ViT-B-32", "openai")  # open_clip's metadata, nothing downloaded
    assert openai["quick_gelu"] is True and openai["mean"] == (0.48145466, 0.4578275, 0.40821073)
    assert tag_settings("ViT-B-16-SigLIP", "webli")["resize_mode"] == "squash"


@pytest.mark.slow
def test_a_checkpoint_fine_tuned_from_a_tag_is_built_with_the_tags_settings(tmp_path, tiny_checkpoint, shapes_dataset):
    from open_clip.transformer import QuickGELU
    from torchvision.transforms import Normalize

    from clipeval.models.open_clip_models import TAG_SETTINGS_KEY

    carried = {"quick_gelu": True, "mean": (0.5, 0.5, 0.5), "std": (0.25, 0.25, 0.25), "resize_mode": "squash"}
    start = tmp_path / "from-a-tag.pt"
    torch.save({**torch.load(tiny_checkpoint, weights_only=True), TAG_SETTINGS_KEY: carried}, start)
    settings = TrainingSettings("clipeval-tiny", epochs=1, batch_size=20, lr=1e-3, seed=1, start_from=str(start))
    train_clip(settings, shapes_dataset, tmp_path / "tuned.pt", log=lambda _: None)
    assert (
        torch.load(tmp_path / "tuned.pt", weights_only=True)[TAG_SETTINGS_KEY] == carried
    )  # and on, fine-tune after fine-tune
    for weights, quick in ((tiny_checkpoint, False), (tmp_path / "tuned.pt", True)):
        model, transform, _ = build_model("clipeval-tiny", str(weights))
        assert any(isinstance(module, QuickGELU) for module in model.modules()) == quick
        normalize = next(step for step in transform.transforms if isinstance(step, Normalize))
        assert tuple(normalize.mean) == ((0.5,) * 3 if quick else open_clip.OPENAI_DATASET_MEAN)
    # The pixel stage decodes its images as the model's own preprocessing resizes them.
    from clipeval.models.preprocessing import pixel_recipe

    assert "squash" in pixel_recipe("clipeval-tiny", str(tmp_path / "tuned.pt"))
    assert "squash" not in pixel_recipe("clipeval-tiny", str(tiny_checkpoint))
    # The config's own preprocessing still wins.
    _, transform, _ = build_model("clipeval-tiny", str(tmp_path / "tuned.pt"), preprocess={"mean": [0.1, 0.2, 0.3]})
    assert tuple(next(s for s in transform.transforms if isinstance(s, Normalize)).mean) == (0.1, 0.2, 0.3)


def test_a_frozen_image_towers_batch_norms_keep_their_statistics():
    from clipeval.models.training import train_mode

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.visual = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 1), torch.nn.BatchNorm2d(4))
            self.text = torch.nn.BatchNorm1d(4)

    model = Model()
    train_mode(model, ("image",))
    assert (model.training, model.visual[0].training, model.visual[1].training, model.text.training) == (
        True, True, False, True,
    )  # fmt: skip
    train_mode(model, ())
    assert model.visual[1].training
