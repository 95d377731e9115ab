"""Prompts as token ids and in-context scoring with the demonstration prefix's key/value cache computed once
and reused for every query (source 003).

A prompt is `prefix + query`: the prefix is the start tokens (BOS; see `STARTS`) followed by the
demonstrations, each tokenised on its own and joined by the task's separator; the query is
the formatted example without its label. Tokenising the pieces separately makes the token ids identical in
every setting, so a demonstration's tokens in the ICL prefix are exactly the tokens of its finetuning example
(the Kendall metric pairs them) and cached and uncached scoring see the same ids.

score(label) = sum over the label's tokens of log p(token | prompt, earlier label tokens), from the
full-vocabulary softmax (the source's mean over tokens gives the same argmax for single-token labels).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from icgd.data.text import TextTask
from icgd.lm.record import Recorder

#: the analysed "last token" of a query. "label": the first token of the first label word appended after
#: the prompt, as the authors' code records it (docs/sources/dai_lmops_code.md); "prompt": the prompt's own
#: last token, where the prediction is read
ANALYSED = ("label", "prompt")


def token_ids(lm, text: str, first: bool = False) -> list[int]:
    """Token ids of `text`; `first`: it starts the sequence (the tokenizer's start tokens added)."""
    return list(lm.tokenizer(text, add_special_tokens=first).input_ids)


#: what starts every prompt and finetuning example. "bos": the tokenizer's start tokens, or the model's BOS
#: token where the tokenizer adds none (SmolLM2's `<|im_start|>`), so that the attention sink, the first
#: position every head can fall back on, is a token outside every measured slice, as the authors' `<s>` is;
#: "tokenizer": only what the tokenizer adds (nothing for SmolLM2: the query's first token, inside SimAM's
#: slice in ZSL, then collects the sink)
STARTS = ("bos", "tokenizer")


def start_ids(lm, start: str = "bos") -> list[int]:
    """The tokens every sequence starts with (see `STARTS`)."""
    if start not in STARTS:
        raise ValueError(f"start must be one of {STARTS}, got {start!r}")
    ids = token_ids(lm, "", first=True)
    if ids or start == "tokenizer":
        return ids
    bos = getattr(lm.tokenizer, "bos_token_id", None)
    if bos is None:
        bos = getattr(lm.model.config, "bos_token_id", None)
    if bos is None:
        raise ValueError(f"{getattr(lm, 'name', 'the model')}: the tokenizer adds no start token and the model names no BOS token; "
                         "use start='tokenizer'")
    return [int(bos)]


@dataclass
class Prefix:
    """Token ids of a prompt prefix and where each demonstration sits in it: spans[i] = (start, end)."""

    ids: list[int]
    spans: list[tuple[int, int]] = field(default_factory=list)

    @property
    def demo_positions(self) -> Tensor:
        """Positions (P_d,) of every demonstration token, in order (start tokens and separators left out)."""
        return torch.cat([torch.arange(a, b) for a, b in self.spans]) if self.spans else torch.zeros(0, dtype=torch.long)


def demonstration_ids(lm, task: TextTask, demos: Sequence[int]) -> list[list[int]]:
    """Token ids of each demonstration (example formatted with its label), no special tokens."""
    return [token_ids(lm, task.demonstration(int(i))) for i in demos]


def build_prefix(lm, task: TextTask, demos: Sequence[int], start: str = "bos") -> Prefix:
    """start tokens + demo_1 + separator + demo_2 + separator + ... (a separator after every demonstration)."""
    ids, spans = start_ids(lm, start), []
    sep = token_ids(lm, task.separator)
    for d in demonstration_ids(lm, task, demos):
        spans.append((len(ids), len(ids) + len(d)))
        ids += d + sep
    return Prefix(ids, spans)


def query_ids(lm, task: TextTask, queries: Sequence[int]) -> list[list[int]]:
    return [token_ids(lm, task.prompt(task.examples[int(i)][0])) for i in queries]


def label_ids(lm, task: TextTask) -> list[list[int]]:
    out = [token_ids(lm, task.answer(lab)) for lab in task.labels]
    if any(not t for t in out):
        raise ValueError(f"task {task.name}: a label word tokenises to nothing: {task.words}")
    return out


@dataclass
class Scored:
    """Label log-probabilities of Q queries, and (when recorded) the hook points at each query's analysed
    token: out (Q, L, D) attention outputs; query_scores[q] (L, H, S_q) pre-softmax scores to the query's own
    tokens (the analysed one included); prefix_scores (Q, L, P) scores to the prefix, summed over heads;
    q_last (Q, L, H*d) the query projection."""

    logp: Tensor
    out: Tensor | None = None
    query_scores: list[Tensor] | None = None
    prefix_scores: Tensor | None = None
    q_last: Tensor | None = None

    @property
    def pred(self) -> Tensor:
        return self.logp.argmax(-1)


@torch.no_grad()
def score(lm, prefix: Prefix | list[int], queries: Sequence[list[int]], labels: Sequence[list[int]],
          use_cache: bool = True, record: bool = False, record_queries: bool | str = False, analysed: str = "label",
          progress: bool = False, desc: str = "queries", batch: int = 1) -> Scored:
    """Score every label after prefix + each query: `Scored.logp` (Q, C) float64.

    use_cache: compute the prefix once and reuse its key/value cache for every query (rolled back after
    each); otherwise every sequence runs whole from the first token (tested equal). record: also capture
    the hook points at the analysed token (see `ANALYSED`); record_queries: the query too ("rotary" or
    "projection", see `icgd.lm.record`; True: "projection"). batch: queries run side by side in one forward
    (`score_batched`), the same numbers to float tolerance. The one-at-a-time path below stays as the plain
    reference the batched one is tested against (tests/unit/test_lm_parts.py, tests/integration/test_lm.py)."""
    from tqdm.auto import tqdm

    if analysed not in ANALYSED:
        raise ValueError(f"analysed must be one of {ANALYSED}, got {analysed!r}")
    if batch > 1:
        return score_batched(lm, prefix, queries, labels, batch, use_cache, record, record_queries, analysed,
                             progress, desc)
    pre = prefix.ids if isinstance(prefix, Prefix) else list(prefix)
    dev = lm.device
    n_q, P = len(queries), len(pre)
    logp = torch.empty(n_q, len(labels), dtype=torch.float64)
    outs, qscores, pscores, qlast = [], [], [], []
    cache = lm.model(torch.tensor([pre], device=dev), use_cache=True).cache if use_cache and pre else None
    if cache is not None:  # sliding-window layers (Gemma 3) keep what a query pushes out, so crop can roll back
        cache.activate_past_recording()

    def run(seq: list[int], keep: int) -> Tensor:
        """Next-token log-probabilities (keep, V) at the last `keep` positions of prefix + seq."""
        if cache is not None:
            logits = lm.model(torch.tensor([seq], device=dev), cache=cache, use_cache=True,
                              logits_to_keep=keep).logits[0]
            cache.crop(-len(seq))  # roll back to the prefix for the next sequence
        else:
            logits = lm.model(torch.tensor([pre + seq], device=dev), logits_to_keep=keep).logits[0]
        return torch.log_softmax(logits.double(), -1).cpu()

    rec = Recorder(lm.model, queries=record_queries, implementation=lm.attn_implementation) if record else None
    for qi, q in enumerate(tqdm(queries, disable=not progress, desc=desc, leave=False)):
        ext = labels[0][:1] if analysed == "label" else []
        if rec is not None:
            with rec:
                first = run(q + ext, len(ext) + 1)[0]
                r = rec.take()
            outs.append(r["out_last"].cpu())
            s = r["scores_last"]  # (L, H, P + len(q) + len(ext))
            qscores.append(s[:, :, P:].cpu())
            pscores.append(s[:, :, :P].sum(1).cpu())
            if record_queries:
                qlast.append(r["q"][:, -1].cpu())
        else:
            first = run(q + ext, len(ext) + 1)[0]
        for li, lt in enumerate(labels):
            if len(lt) == 1:
                logp[qi, li] = first[lt[0]]
            else:  # several tokens: one more sequence, read at the label's positions
                lp = run(q + lt[:-1], len(lt))
                logp[qi, li] = sum(float(lp[i, t]) for i, t in enumerate(lt))
    return Scored(logp, torch.stack(outs) if outs else None, qscores or None,
                  torch.stack(pscores) if pscores else None, torch.stack(qlast) if qlast else None)


@torch.no_grad()
def score_batched(lm, prefix: Prefix | list[int], queries: Sequence[list[int]], labels: Sequence[list[int]],
                  batch: int = 8, use_cache: bool = True, record: bool = False, record_queries: bool | str = False,
                  analysed: str = "label", progress: bool = False, desc: str = "queries") -> Scored:
    """`score(...)` with `batch` sequences per forward: the same `Scored`, to float tolerance (tested).

    Why: on a CPU one short query over a cached prefix reads every weight of the model for a few dozen
    tokens, so the forward is bound by memory bandwidth; `batch` queries share that read
    (`benchmarks/lm_eval_speed.py --batch`). The sequences are padded on the right (a causal model's real
    tokens never see the padding after them, and their positions are those of the unbatched run); the prefix
    cache is repeated along the batch (`Cache.batch_repeat_interleave`) and rolled back after each forward as
    in `score`; the logits are kept only at each row's needed positions (`logits_to_keep` as a (B, k) index
    tensor); the hook points are read per row at its analysed token (`Recorder.positions`, `take_rows`). The
    last batch is filled with copies of its last sequence, whose results are dropped. Labels of several
    tokens run as their own batches of query + label, unrecorded, as in `score`."""
    from tqdm.auto import tqdm

    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    if analysed not in ANALYSED:
        raise ValueError(f"analysed must be one of {ANALYSED}, got {analysed!r}")
    pre = prefix.ids if isinstance(prefix, Prefix) else list(prefix)
    dev, P = lm.device, len(pre)
    cache = None
    if use_cache and pre:
        cache = lm.model(torch.tensor([pre], device=dev), use_cache=True).cache
        cache.activate_past_recording()  # sliding-window layers: crop can roll back past the window
        cache.batch_repeat_interleave(batch)
    rec = Recorder(lm.model, queries=record_queries, implementation=lm.attn_implementation) if record else None
    shift = P if cache is None and pre else 0  # where the sequence starts in the forward's tokens

    def run(seqs: list[list[int]], ends: list[int], k: int, recording: bool = False):
        """(len(seqs), k, V) log-probabilities at the k positions before each `ends` of prefix + sequence
        (ends: positions in the sequence), and the hook points per row when recording."""
        n = len(seqs)
        rows, ends = list(seqs) + [seqs[-1]] * (batch - n), list(ends) + [ends[-1]] * (batch - n)
        width = max(len(r) for r in rows)
        ids = torch.tensor([r + [r[-1]] * (width - len(r)) for r in rows], device=dev)
        if cache is None and pre:
            ids = torch.cat([torch.tensor([pre] * batch, dtype=ids.dtype, device=dev), ids], 1)
        keep = torch.tensor([[shift + e - k + j for j in range(k)] for e in ends], device=dev)
        kw = dict(cache=cache, use_cache=True) if cache is not None else {}
        taken = None
        if recording:
            rec.positions = [shift + len(r) - 1 for r in rows]  # the analysed token: each row's last real one
            with rec:
                logits = lm.model(ids, logits_to_keep=keep, **kw).logits
                taken = rec.take_rows()[:n]
            rec.positions = None
        else:
            logits = lm.model(ids, logits_to_keep=keep, **kw).logits
        if cache is not None:
            cache.crop(-width)  # roll back to the prefix for the next batch
        return torch.log_softmax(logits[:n].double(), -1).cpu(), taken

    logp = torch.empty(len(queries), len(labels), dtype=torch.float64)
    outs, qscores, pscores, qlast = [], [], [], []
    ext = labels[0][:1] if analysed == "label" else []
    chunks = [list(range(i, min(i + batch, len(queries)))) for i in range(0, len(queries), batch)]
    for idx in tqdm(chunks, disable=not progress, desc=desc, leave=False):
        qs = [list(queries[i]) for i in idx]
        if rec is not None:  # recorded at the analysed token (query + first label token, or the query's last)
            first, taken = run([q + ext for q in qs], [len(q) for q in qs], 1, recording=True)
            for q, r in zip(qs, taken):
                outs.append(r["out_last"].cpu())
                sc = r["scores_last"]  # (L, H, P + len(q) + len(ext))
                qscores.append(sc[:, :, P:].cpu())
                pscores.append(sc[:, :, :P].sum(1).cpu())
                if record_queries:  # at the analysed token, not at the row's padding
                    qlast.append(r["q"][:, shift + len(q) + len(ext) - 1].cpu())
        else:
            first, _ = run(qs, [len(q) for q in qs], 1)
        first = first[:, 0]
        for li, lt in enumerate(labels):
            if len(lt) == 1:
                logp[idx, li] = first[:, lt[0]]
            else:  # several tokens: query + label, read at the label's positions
                lp, _ = run([q + lt[:-1] for q in qs], [len(q) + len(lt) - 1 for q in qs], len(lt))
                logp[idx, li] = lp[:, torch.arange(len(lt)), torch.tensor(lt)].sum(-1)
    return Scored(logp, torch.stack(outs) if outs else None, qscores or None,
                  torch.stack(pscores) if pscores else None, torch.stack(qlast) if qlast else None)


def label_logprobs(lm, prefix: str, queries: Sequence[str], labels: Sequence[str], use_cache: bool = True,
                   progress: bool = False) -> Tensor:
    """Log-probabilities (Q, L) float64 of each label string after the prefix text + each query text (the
    prefix tokenised whole with the start tokens; queries and labels appended as their own tokens)."""
    pre = token_ids(lm, prefix, first=True) if prefix else []
    qs = [token_ids(lm, q, first=not pre) for q in queries]
    labs = [token_ids(lm, w) for w in labels]
    if any(not t for t in labs):
        raise ValueError(f"a label tokenises to nothing: {labels}")
    return score(lm, pre, qs, labs, use_cache=use_cache, progress=progress).logp
