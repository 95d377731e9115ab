"""The authors' own value of each claim's measure in source 002's suite, where one exists, with where it was
read (`icgd.claims.references.Reference`); where none exists, the reference's value is None and its source
says why.

Source 002's saved results are few: the authors' code (aarontwang/icl_attention_categorical at c1be9fe,
the code of the paper's later version) commits no `results/` folder, and of its notebooks only cells 1 and
2 of `src/experiments_jax/plot_training_data_results.ipynb` print result numbers (seed means of the test NLL
and accuracy, softmax attention, 25 categories); the paper's text has one sentence with numbers (sec. 4, the
ImageNet paragraph). Every figure's values are lost in the text.
"""

from __future__ import annotations

from icgd.claims.references import Reference

NOTEBOOK = ("the authors' src/experiments_jax/plot_training_data_results.ipynb at c1be9fe, cell 2 (0-based), "
            "'GD Loss:' line")
SEC4 = ("source 002, sec. 4, ImageNet paragraph: 'the linear and softmax attention Transformers perform almost "
        "identically on this few-shot-learning task, with correct label classification probability 0.91'")
_MAPS = "the source shows the agreement only as probability maps (Fig. 2, 6-9), whose values the text lost; " \
        "the authors' code saves no sensitivity cosine or map comparison"
_STRICTER = "a stricter check of ours: the source has no figure or number for this kernel (the authors' code has " \
            "no chi-squared kernel at all)"
_FIG4R = "Fig. 4 right (N = 5..160) survives only as a curve whose values are lost; eval_context.py exists in " \
         "the authors' code, but no notebook prints its output"
_WORDS = "the source states it in words only ('could be unstable'), with no count of diverged runs; the code's " \
         "saved outputs hold no Laplacian or exponential run"

#: {claim id: Reference}; a claim not listed has no reference and no reason yet
REFERENCES: dict[str, Reference] = {
    "gd-depth-changes-little": Reference(
        0.1269, f"derived from {NOTEBOOK}: the GD model's loss 1.0581 (1 layer), 0.9711, 0.9429, 0.9238 (2-4 "
                "layers); the largest |loss(L) / loss(1) - 1| over L = 2-4 is 0.1269 (at 4 layers). The loss is "
                "the test NLL, seed mean, early-stopped, on the later version's data, not our MSE"),
    "fewshot-accurate": Reference(0.91, SEC4 + " (after 5000 training steps; read as the accuracy Fig. 5 plots)"),
    "fewshot-linear-like-softmax": Reference(
        0.0, SEC4 + ": both print as 0.91, so the difference is below 0.01", 0.01),
    "fewshot-confident": Reference(
        0.0, "derived from source 002, sec. 4, ImageNet paragraph: 'after sufficient training steps, the "
             "most-probable label typically had a probability near 0.9': |0.9 - 0.9|, 'near' read as 0.05 either way",
        0.05),
    "fewshot-splits-agree": Reference(
        0.001, SEC4 + ", 'and with variation less than 0.001 on different splits of train and test': an upper bound, "
               "read as its value", 0.001),
    "agree-softmax": Reference(None, _MAPS),
    "agree-rbf": Reference(None, _MAPS),
    "agree-linear": Reference(None, _MAPS),
    "agree-exponential": Reference(None, _MAPS),
    "agree-laplacian": Reference(None, _MAPS),
    "agree-sigmoid": Reference(None, _STRICTER),
    "agree-polynomial": Reference(None, _STRICTER),
    "agree-cosine": Reference(None, _STRICTER),
    "agree-chi_squared": Reference(None, _STRICTER),
    "gd-tf-agree": Reference(None, "Fig. 3 (MSE over training) survives only as 'very close agreement'; the "
                                   "only TF / GD pair the authors' code prints is the softmax one on finite "
                                   "training sets (notebook cell 1), another measure"),
    "nonlinear-beats-linear-xor": Reference(None, "the source says only 'slightly less accurate' of Fig. 3 and 7, "
                                                  "whose values are lost; the code prints no MSE per kernel"),
    "heads-change-little": Reference(None, "Fig. 4 left (1-4 heads) survives only as 'very close'; no saved "
                                           "output of a heads sweep exists"),
    "softmax-improves-with-n": Reference(None, _FIG4R),
    "softmax-tf-improves-with-n": Reference(None, _FIG4R),
    "softmax-tf-gd-every-n": Reference(None, _FIG4R),
    "softmax-invariant": Reference(None, "the source states the invariance in words only; it reports no MSE of a "
                                         "model retrained at each N, and the code saves none"),
    "rbf-unchanged-not-invariant": Reference(None, "the source's remark that 'the scaling in the code is "
                                                   "adjusted' is in words only; no unrescaled MSE is reported"),
    "rbf-needs-rescaling": Reference(None, "the source's remark that 'the scaling in the code is adjusted' is in "
                                           "words only; no rescaled or unrescaled MSE is reported"),
    "laplacian-tf-unstable": Reference(None, _WORDS),
    "exponential-unstable": Reference(None, _WORDS),
    "exponential-instability-grows": Reference(None, _WORDS),
    "softmax-trains-stably": Reference(None, "the authors' notebook prints seed means only (finite at every depth "
                                             "1-6, cell 2), early-stopped: no count of diverged runs"),
    "fewshot-linear-vs-untrained": Reference(None, "the untrained accuracy (the start of Fig. 5's curves) is "
                                                   "printed nowhere"),
    "fewshot-softmax-vs-untrained": Reference(None, "the untrained accuracy (the start of Fig. 5's curves) is "
                                                    "printed nowhere"),
    "fewshot-softmax-faster": Reference(None, "'the softmax attention converges much faster' is said of Fig. 5's "
                                              "curves; no step count is given or printed"),
}
