"""In-context scoring: the log-probability of each label's token sequence after a prompt, with the
demonstration prefix's key/value cache computed once and reused for every query (source 003).

prompt = prefix (the formatted demonstrations) + query text; score(label) = sum over the label's tokens of
log p(token | prompt, earlier label tokens). The prefix is tokenised on its own and the query and label
tokens appended (no merge across the boundary), so cached and uncached scoring see the same token ids.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def token_ids(lm, text: str, first: bool) -> list[int]:
    """Token ids of `text`; `first`: it starts the sequence (the tokenizer's special start tokens added)."""
    return lm.tokenizer(text, add_special_tokens=first).input_ids


@torch.no_grad()
def label_logprobs(lm, prefix: str, queries: Sequence[str], labels: Sequence[str], use_cache: bool = True,
                   progress: bool = False) -> Tensor:
    """Log-probabilities (Q, L) float64 of each label after prefix + query, for Q queries and L labels.

    use_cache: compute the prefix once and reuse its key/value cache for every query (rolled back after
    each); otherwise every sequence runs whole from the first token. One sequence per query serves every
    single-token label; a label of several tokens adds one. Both give the same numbers to float rounding
    (tested)."""
    from tqdm.auto import tqdm

    dev = lm.device
    pre = token_ids(lm, prefix, first=True) if prefix else []
    lab = [token_ids(lm, w, first=False) for w in labels]
    if any(not t for t in lab):
        raise ValueError(f"a label tokenises to nothing: {labels}")
    out = torch.empty(len(queries), len(labels), dtype=torch.float64)
    cache = None
    if use_cache and pre:
        cache = lm.model(torch.tensor([pre], device=dev), use_cache=True).past_key_values
    for qi, q in enumerate(tqdm(queries, disable=not progress, desc="queries", leave=False)):
        qids = token_ids(lm, q, first=not pre)
        # one sequence per distinct label continuation: every single-token label is read from the query alone
        seqs = {tuple(qids + lt[:-1]) for lt in lab}
        logp = {seq: _continuation_logprobs(lm, pre, list(seq), cache, dev) for seq in seqs}
        for li, lt in enumerate(lab):
            lp = logp[tuple(qids + lt[:-1])][len(qids) - 1:]
            out[qi, li] = sum(float(lp[i, t]) for i, t in enumerate(lt))
    return out


def _continuation_logprobs(lm, pre: list[int], seq: list[int], cache, dev) -> Tensor:
    """Next-token log-probabilities (len(seq), V) float64 at each token of `seq` after the prefix `pre`, from
    the prefix cache (rolled back afterwards) or by running pre + seq whole."""
    if cache is not None:
        logits = lm.model(torch.tensor([seq], device=dev), past_key_values=cache, use_cache=True).logits[0]
        cache.crop(-len(seq))  # roll back to the prefix for the next sequence
    else:
        logits = lm.model(torch.tensor([pre + seq], device=dev)).logits[0, len(pre):]
    return torch.log_softmax(logits.double(), -1)
