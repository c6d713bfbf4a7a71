"""What a model's tokenizer does to each caption before the text tower sees it: how many tokens the caption
needs, and how many of them are the unknown token. A caption that needs more tokens than the tower's context
length is cut there; one with unknown tokens has text the tokenizer cannot represent. Extraction encodes both
anyway, as the model would; this records them, so a language the tokenizer serves badly shows in the results.

open_clip's own tokenizer is byte-level BPE: it represents any text, and only cuts. Hugging Face tokenizers
(open_clip's hf-hub models, transformers folders) and Chinese-CLIP's BERT vocabulary have an unknown token.
"""

from dataclasses import dataclass

# Captions listed by id in the record, per kind, beyond the counts.
LISTED = 20


@dataclass(frozen=True)
class CaptionFit:
    tokens: int  # the tokens the caption needs, its start and end tokens included
    unknown: int  # how many of them are the unknown token


def caption_fits(tokenizer, texts: list[str]) -> list[CaptionFit]:
    """How each caption fits `tokenizer`: open_clip's tokenizers, or a clipeval backend's (its `fits`)."""
    if hasattr(tokenizer, "fits"):
        return tokenizer.fits(texts)
    if hasattr(tokenizer, "encode") and hasattr(tokenizer, "sot_token_id"):  # open_clip's SimpleTokenizer
        return [CaptionFit(len(tokenizer.encode(text)) + 2, 0) for text in texts]
    return transformers_fits(tokenizer.tokenizer, cleaned(tokenizer, texts))


def cleaned(tokenizer, texts: list[str]) -> list[str]:
    """The texts as an open_clip tokenizer that wraps a transformers one cleans them before it tokenizes:
    HFTokenizer by its clean_fn; SigLipTokenizer (SigLIP's, in its __call__) by ftfy and whitespace, then
    lower case with punctuation removed."""
    from open_clip import tokenizer as open_clip_tokenizer

    if isinstance(tokenizer, open_clip_tokenizer.SigLipTokenizer):
        clean = open_clip_tokenizer.basic_clean
        return [open_clip_tokenizer.canonicalize_text(clean(text)) for text in texts]
    clean = getattr(tokenizer, "clean_fn", None)
    return [clean(text) for text in texts] if clean else list(texts)


def transformers_fits(tokenizer, texts: list[str]) -> list[CaptionFit]:
    """A transformers tokenizer's fit, its special tokens included, nothing cut."""
    unknown = tokenizer.unk_token_id
    encoded = tokenizer(list(texts), add_special_tokens=True, truncation=False)["input_ids"]
    return [CaptionFit(len(ids), 0 if unknown is None else ids.count(unknown)) for ids in encoded]


def tokenization_record(text_ids, fits: list[CaptionFit], context_length: int) -> dict:
    """The counts of captions cut at `context_length` and of those with unknown tokens, and the first ids of
    each, in text-id order."""
    cut = [int(t) for t, fit in zip(text_ids, fits) if fit.tokens > context_length]
    unknown = [int(t) for t, fit in zip(text_ids, fits) if fit.unknown]
    return {
        "captions": len(fits),
        "context_length": context_length,
        "cut": len(cut),
        "cut_text_ids": sorted(cut)[:LISTED],
        "longest": max((fit.tokens for fit in fits), default=0),
        "with_unknown_tokens": len(unknown),
        "unknown_text_ids": sorted(unknown)[:LISTED],
    }
