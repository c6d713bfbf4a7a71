"""Stand-ins, in the Hugging Face cache's own layout, for what open_clip downloads for a multilingual model:
the text tower's config and tokenizer (xlm-roberta-base, shrunk to one small layer: the cache decides the
tower's size) and the open_clip weights that a pretrained tag names, random, of the architecture that
config gives. With HF_HUB_CACHE pointing at the folder and HF_HUB_OFFLINE=1, open_clip builds and loads the
model as it would after a real download."""

import json
from pathlib import Path

REVISION = "0123456789abcdef0123456789abcdef01234567"
# Characters the stand-in tokenizer knows, each with and without the word-start mark; others are <unk>.
KNOWN_CHARACTERS = "abcdefghijklmnopqrstuvwxyz0123456789一只猫坐在垫子上红色的连衣裙白色运动鞋男女款黑蓝"


def snapshot_folder(hub: Path, repo: str) -> Path:
    """The cache's folder for a repo's main revision, made with the ref that points at it."""
    root = hub / f"models--{repo.replace('/', '--')}"
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "refs" / "main").write_text(REVISION)
    folder = root / "snapshots" / REVISION
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_xlm_roberta_base(hub: Path) -> None:
    """xlm-roberta-base as transformers reads it: config.json, tokenizer.json (a unigram model, XLM-R's
    special tokens at XLM-R's ids) and tokenizer_config.json."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    vocabulary = [(token, 0.0) for token in specials]
    vocabulary += [("▁" + character, -1.0) for character in KNOWN_CHARACTERS]
    vocabulary += [(character, -2.0) for character in KNOWN_CHARACTERS] + [("▁", -3.0), ("<mask>", 0.0)]
    tokenizer = Tokenizer(models.Unigram(vocabulary, unk_id=specials.index("<unk>"), byte_fallback=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)]
    )
    folder = snapshot_folder(hub, "xlm-roberta-base")
    tokenizer.save(str(folder / "tokenizer.json"))
    special_names = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", "unk_token": "<unk>"}
    special_names.update(mask_token="<mask>", cls_token="<s>", sep_token="</s>")
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "XLMRobertaTokenizer", "model_max_length": 512, **special_names})
    )
    config = {
        "model_type": "xlm-roberta",
        "architectures": ["XLMRobertaForMaskedLM"],
        "vocab_size": len(vocabulary),
        "hidden_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "max_position_embeddings": 80,  # open_clip's 77 tokens, after RoBERTa's offset of the pad id
        "type_vocab_size": 1,
        "pad_token_id": 1,
        "bos_token_id": 0,
        "eos_token_id": 2,
        "layer_norm_eps": 1e-5,
    }
    (folder / "config.json").write_text(json.dumps(config))


def write_tagged_weights(hub: Path, arch: str, tag: str, seed: int = 0) -> Path:
    """Random weights of `arch` where open_clip looks for its pretrained `tag` (the cfg's hf_hub repo), as the
    safetensors file open_clip tries first. Needs the text tower's config in `hub` first."""
    import open_clip
    import torch
    from open_clip.pretrained import get_pretrained_cfg
    from safetensors.torch import save_file

    repo = get_pretrained_cfg(arch, tag)["hf_hub"].rstrip("/")
    torch.manual_seed(seed)
    model = open_clip.create_model(arch, pretrained_hf=False)  # the text tower from its config, not weights
    path = snapshot_folder(hub, repo) / "open_clip_model.safetensors"
    save_file({name: tensor.contiguous() for name, tensor in model.state_dict().items()}, str(path))
    return path
