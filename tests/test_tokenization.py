"""The tokenization record: each caption's token count and unknown tokens, for every kind of tokenizer
clipeval's models have, checked against what the tokenizer itself gives with a context long enough to cut
nothing; and the summary's section built from the records."""

import pytest
import torch
from hub_standins import snapshot_folder, write_xlm_roberta_base

from clipeval.features.tokenization import LISTED, CaptionFit, caption_fits, tokenization_record
from clipeval.reporting.tokenization_table import tokenization_markdown

UNCUT = 400  # a context no caption here reaches


def nonpadding_counts(tokens: torch.Tensor, pad_id: int) -> list[int]:
    return (tokens != pad_id).sum(dim=1).tolist()


def test_open_clip_s_tokenizer_represents_any_text_and_only_cuts():
    import open_clip

    import clipeval.models.open_clip_models  # noqa: F401  registers clipeval-tiny

    tokenizer = open_clip.get_tokenizer("clipeval-tiny")
    texts = ["a red circle", " ".join(["a"] * 40), "แมวสีแดง", "a 🐱 on a mat"]
    fits = caption_fits(tokenizer, texts)
    assert fits[0] == CaptionFit(5, 0)  # <start>, a, red, circle, <end>
    assert fits[1] == CaptionFit(42, 0)
    assert [fit.tokens for fit in fits] == nonpadding_counts(tokenizer(texts, context_length=UNCUT), 0)
    assert all(fit.unknown == 0 for fit in fits)  # byte-level BPE: Thai and emoji are bytes it knows
    record = tokenization_record([7, 3, 9, 1], fits, tokenizer.context_length)
    assert record == {
        "captions": 4,
        "context_length": 32,
        "cut": sum(fit.tokens > 32 for fit in fits),
        "cut_text_ids": sorted(t for t, fit in zip([7, 3, 9, 1], fits) if fit.tokens > 32),
        "longest": max(fit.tokens for fit in fits),
        "with_unknown_tokens": 0,
        "unknown_text_ids": [],
    }
    assert 3 in record["cut_text_ids"] and 7 not in record["cut_text_ids"]


@pytest.fixture
def xlm_roberta_folder(tmp_path):
    write_xlm_roberta_base(tmp_path)
    return snapshot_folder(tmp_path, "xlm-roberta-base")


@pytest.mark.parametrize("wrapper", ["open_clip HFTokenizer", "transformers folder"])
def test_a_hugging_face_tokenizer_counts_its_unknown_tokens(xlm_roberta_folder, wrapper):
    from transformers import AutoTokenizer

    from clipeval.models.transformers_models import PaddedTokenizer

    if wrapper == "open_clip HFTokenizer":
        from open_clip.tokenizer import HFTokenizer

        tokenizer = HFTokenizer(str(xlm_roberta_folder), context_length=77)
    else:
        tokenizer = PaddedTokenizer(AutoTokenizer.from_pretrained(xlm_roberta_folder, local_files_only=True), 77)
    core = tokenizer.tokenizer
    texts = ["一只猫坐在垫子上", "一只狗坐在垫子上", "红色" * 45, "狗 犬 cat"]
    fits = caption_fits(tokenizer, texts)
    assert [fit.tokens for fit in fits] == [len(core(text)["input_ids"]) for text in texts]
    assert fits[2].tokens > 77
    uncut = tokenizer(texts, context_length=UNCUT) if wrapper == "open_clip HFTokenizer" else None
    if uncut is not None:
        assert [fit.tokens for fit in fits] == nonpadding_counts(uncut, core.pad_token_id)
    assert [fit.unknown for fit in fits] == [core(text)["input_ids"].count(core.unk_token_id) for text in texts]
    assert fits[0].unknown == 0 and fits[1].unknown == 1 and fits[3].unknown >= 2  # 狗 and 犬 are not known
    record = tokenization_record([10, 11, 12, 13], fits, 77)
    assert (record["cut"], record["cut_text_ids"]) == (1, [12])
    assert (record["with_unknown_tokens"], record["unknown_text_ids"]) == (2, [11, 13])


def siglip_tokenizer():
    """open_clip's SigLipTokenizer around a small word-level vocabulary: its own sentencepiece ones are
    downloads, and its cleaning, which this checks, happens before the vocabulary is used."""
    from open_clip.tokenizer import SigLipTokenizer
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    words = ["<pad>", "</s>", "<unk>", "a", "red", "circle", "on", "mat", ",", "!", "A"]
    core = Tokenizer(models.WordLevel({word: i for i, word in enumerate(words)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()  # punctuation is a word of its own
    core.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    tokenizer = SigLipTokenizer.__new__(SigLipTokenizer)
    tokenizer.tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
    )
    tokenizer.context_length = 64
    return tokenizer


def test_siglip_s_tokenizer_is_counted_on_the_text_it_cleans():
    tokenizer = siglip_tokenizer()
    # SigLIP lower-cases and drops punctuation before it tokenizes: "A red circle, on a mat!" is 6 words.
    texts = ["A red circle, on a mat!", "a  red\tcircle", "a blue circle"]
    fits = caption_fits(tokenizer, texts)
    assert [fit.tokens for fit in fits] == nonpadding_counts(tokenizer(texts, context_length=UNCUT), 0) == [7, 4, 4]
    assert [fit.unknown for fit in fits] == [0, 0, 1]  # "blue" is not in the vocabulary


def test_chinese_clip_s_tokenizer_counts_its_unk_word_pieces():
    pytest.importorskip("cn_clip", reason="cn_clip is installed by `make` without its dependencies")
    from cn_clip.clip import _tokenizer
    from cn_clip.clip.utils import tokenize

    from clipeval.models.cnclip_models import ChineseTokenizer

    texts = ["一只猫坐在垫子上", "一只猫🛸", "红" * 60]
    fits = caption_fits(ChineseTokenizer(), texts)
    assert [fit.tokens for fit in fits] == nonpadding_counts(tokenize(texts, context_length=UNCUT), 0)
    unk = _tokenizer.vocab["[UNK]"]
    assert [fit.unknown for fit in fits] == (tokenize(texts, context_length=UNCUT) == unk).sum(dim=1).tolist()
    assert fits[0].unknown == 0 and fits[1].unknown == 1
    assert tokenization_record([0, 1, 2], fits, 52)["cut_text_ids"] == [2]


def test_the_record_lists_only_the_first_ids_of_each_kind():
    fits = [CaptionFit(90, 1)] * (LISTED + 5)
    record = tokenization_record(list(range(LISTED + 5, 0, -1)), fits, 77)
    assert record["cut"] == record["with_unknown_tokens"] == LISTED + 5
    assert record["cut_text_ids"] == record["unknown_text_ids"] == list(range(1, LISTED + 1))


def test_the_summary_section_shows_the_pairs_with_a_caption_cut_or_unknown():
    fitting = {"captions": 5, "context_length": 77, "cut": 0, "longest": 12, "with_unknown_tokens": 0}
    cut = {"captions": 5, "context_length": 77, "cut": 2, "longest": 95, "with_unknown_tokens": 0}
    unknown = {"captions": 7, "context_length": 52, "cut": 0, "longest": 20, "with_unknown_tokens": 3}
    assert tokenization_markdown([("a", "en", fitting)]) == []
    lines = tokenization_markdown([("a", "en", fitting), ("a", "th", cut), ("b", "th", unknown)])
    assert lines[1] == "## Captions the tokenizer cut or could not represent"
    assert lines[-3:] == [
        "|---|---|---|---|---|---|---|",
        "| a | th | 5 | 77 | 2 | 95 | 0 |",
        "| b | th | 7 | 52 | 0 | 20 | 3 |",
    ]
