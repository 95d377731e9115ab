"""In-context classification and perplexity of a small LM trained from scratch (source 003, sec. 4;
`icgd.learners.causal_lm.CausalLM`), on the LM study's tasks (`icgd.data.text`).

Prompts are the tasks' own (template, separator, space-prefixed label words), encoded as the LM's training
text is (`encode`: UTF-8 bytes by default, or the text task's subword tokenizer, `TextLM.encode`). As in
the authors' code, demonstrations (seed s: `icgd.data.text.TextTask.demonstrations`) are added in order while the
prompt still fits the model's context (`max_len` tokens, the training length), up to `k_max`; the label
score is the mean log-probability of its tokens after the prompt (the code's mean over label tokens).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from icgd.core.episodes import Episodes, make_generator
from icgd.data.text import TextTask


def _bytes(text: str) -> list[int]:
    return list(text.encode("utf-8"))


Encode = Callable[[str], list[int]]


def fitted_prefix(task: TextTask, demos: Sequence[int], room: int, k_max: int, encode: Encode = _bytes
                  ) -> tuple[list[int], int]:
    """(prefix tokens, k): demonstrations added in order while they fit in `room` tokens, at most k_max."""
    sep = encode(task.separator)
    out: list[int] = []
    k = 0
    for i in demos[:k_max]:
        d = encode(task.demonstration(int(i))) + sep
        if len(out) + len(d) > room:
            break
        out += d
        k += 1
    return out, k


@torch.no_grad()
def label_scores(model, prompts: Sequence[list[int]], labels: Sequence[list[int]], batch: int = 64) -> Tensor:
    """(Q, C) mean log-probability per token of each label after each prompt (right-padded batches)."""
    seqs = [(qi, ci, p + lab) for qi, p in enumerate(prompts) for ci, lab in enumerate(labels)]
    out = torch.empty(len(prompts), len(labels), dtype=torch.float64)
    dev = model.embed.device
    for s in range(0, len(seqs), batch):
        part = seqs[s:s + batch]
        width = max(len(q) for _, _, q in part)
        ids = torch.zeros(len(part), width, dtype=torch.long)
        for r, (_, _, q) in enumerate(part):
            ids[r, :len(q)] = torch.tensor(q)
        lp = model.sequence_logprobs(ids.to(dev)).cpu()  # (b, width - 1): log p(ids[t] | ids[<t])
        for r, (qi, ci, q) in enumerate(part):
            n = len(labels[ci])
            out[qi, ci] = lp[r, len(q) - 1 - n:len(q) - 1].mean()
    return out


def icl_accuracy(model, task: TextTask, queries: Sequence[int], seed: int, k_max: int, max_len: int,
                 encode: Encode = _bytes) -> dict[str, Any]:
    """Accuracy of the model on `queries` (task indices) with the demonstrations of `seed` (k_max = 0:
    zero-shot). Returns {"accuracy", "k" (demonstrations that fit), "pred" (Q,), "gold" (Q,), "correct"
    (Q,) 0/1}."""

    labels = [encode(task.answer(lab)) for lab in task.labels]
    prompts_q = [encode(task.prompt(task.examples[int(i)][0])) for i in queries]
    longest = max(len(p) for p in prompts_q) + max(len(lab) for lab in labels)
    if longest > max_len:
        raise ValueError(f"task {task.name}: a query and its label take {longest} tokens, more than the model's "
                         f"{max_len}; shorten the texts (max_words)")
    demos = task.demonstrations(min(k_max, len(task.split("train"))), seed) if k_max > 0 else []
    prefix, k = fitted_prefix(task, demos, max_len - longest, k_max, encode)
    prompts = [prefix + p for p in prompts_q]
    pred = label_scores(model, prompts, labels).argmax(-1).numpy()
    gold = np.array([task.label_index(int(i)) for i in queries])
    correct = (pred == gold).astype(float)
    return {"accuracy": float(correct.mean()), "k": k, "pred": pred, "gold": gold, "correct": correct}


@torch.no_grad()
def window_losses(model, text_task, length: int, n_windows: int, seed: int) -> np.ndarray:
    """Mean next-token cross-entropy (nats) of each of `n_windows` windows of `length` tokens of the text
    task's split (positions 2..length+1 predicted from all earlier tokens of the window), float64 (W,)."""
    task = text_task.model_copy(update={"seq_len": length})
    ep: Episodes = task.sample(n_windows, make_generator(seed), dtype=torch.float32)
    dev = model.embed.device
    losses = []
    for s in range(0, n_windows, 64):
        part = ep[s:s + 64].to(dev)
        losses.append(task.loss(model.predict(part).double(), part.query_y).cpu())
    return torch.cat(losses).numpy()


def perplexity(model, text_task, length: int, n_windows: int, seed: int) -> float:
    """exp(mean next-token cross-entropy) over `n_windows` windows of `length` tokens (`window_losses`)."""
    return float(np.exp(window_losses(model, text_task, length, n_windows, seed).mean()))
