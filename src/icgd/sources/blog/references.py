"""The authors' own value of each claim's measure in source 001's suite, where one exists, with where it was
read (`icgd.claims.references.Reference`; every reading is listed in docs/calibration.md).

- **POST**: the numbers plotted in the interactive figures of source 001 (iclr-blogposts/2024 at f8d8b12,
  `assets/html/2024-05-07-understanding-icl/*.html`), read from their plotly data: exact to the digits
  printed.
"""

from __future__ import annotations

from icgd.claims.references import Reference

POST = "source 001's figure data"

#: {claim id: Reference}; a claim not listed has no reference
REFERENCES: dict[str, Reference] = {
    "premise-lstm-learns": Reference(None, "not read yet: lstm-comparison-1.html draws the LSTMs' losses; the zero "
                                           "predictor's level of the same set-up has not been matched to it"),
    "premise-bilstm-learns": Reference(None, "not read yet: lstm-comparison-1.html draws the BiLSTMs' losses; the "
                                             "zero predictor's level of the same set-up has not been matched to it"),
    "eta-fast": Reference(1000.0, "the full blog post of source 001 (iclr-blogposts/2024, _posts/2024-05-07-"
                                  "understanding-icl.md, 'Analysis on the learning rate'; the seed's abridged text "
                                  "lacks the sentence): 'about 10 s against about 10 ms' for the line search and "
                                  "the closed form, the authors' JAX on a GPU; ours times our own code on the CPU, "
                                  "so the row is a check, not a claim", 500.0),
    "dampening-lowers-loss": Reference(0.2065, f"{POST}, multiple_steps.html, lambda = 0.7: 0.1890 after 50 "
                                               "applications over 0.9153 after 1"),
    "dampening-monotone": Reference(0.9970, f"{POST}, multiple_steps.html, lambda = 0.7: the largest ratio of "
                                           "consecutive applications of the one run the figure plots"),
    "dampening-matches-gd": Reference(0.0373, f"{POST}, multiple_steps.html, lambda = 0.7: the largest |TF / GD - 1| "
                                              "over the 50 applications"),
    "lstm-not-gd": Reference(0.7907, f"{POST}, lstm-comparison-3.html: the best unidirectional LSTM's final "
                                     "cosine (5 layers) over the 1-layer LSA's 0.99997 (tr-vs-gd-l2.html, C = 10)"),
    "bilstm-depth": Reference(0.2029, f"{POST}, lstm-comparison-2.html: the BiLSTMs' final cosine 0.9679 at 5 "
                                      "layers minus 0.7650 at 1"),
    "bilstm-better": Reference(0.772, f"{POST}, lstm-comparison-1.html: final median losses, BiLSTM over LSTM, "
                                      "largest at 2-5 layers (0.8592 / 1.113 at 2)"),
    "lstm-worse-than-tf": Reference(1.358, f"{POST}, lstm-comparison-1.html: the best unidirectional LSTM's final "
                                           "loss 1.112 (5 layers) over the GD-equivalent transformer's 0.8188"),
    "bilstm-gain-grows": Reference(0.746, f"{POST}, lstm-comparison-1.html: BiLSTM / LSTM final loss at 5 layers "
                                          "(0.8173 / 1.112) over the same at 1 layer (1.113 / 1.130)"),
    "bilstm-increasingly-gd": Reference(0.0226, f"{POST}, lstm-comparison-2.html: final cosine 0.9679 at 5 layers "
                                                "minus 0.9453 at 2"),
    "bilstm-cosine-below-1": Reference(0.9679, f"{POST}, lstm-comparison-2.html: the BiLSTMs' largest final "
                                               "cosine (5 layers)"),
    "tf-matches-gd-across-n": Reference(0.00059, f"{POST}, tr-vs-gd-loss.html: the largest |TF / GD - 1| of the "
                                                 "final medians at C = 10, 20, 40 (the post has no C = 5)"),
    "tf-learns-well": Reference(0.3276, f"{POST}, tr-vs-gd-loss.html, C = 10: the trained layer's final loss "
                                        "0.2726 over the zero level 0.8322 (the post's D is 5, ours 10)"),
    "loss-falls-with-n": Reference(0.591, f"{POST}, tr-vs-gd-loss.html: the largest ratio of consecutive final "
                                          "losses at C = 10, 20, 40 (0.1612 / 0.2726)"),
    "loss-falls-with-depth": Reference(0.1487, f"{POST}, linear-transformers-linregr.html, C = 10: the largest "
                                               "ratio of consecutive depths 1-4 (0.04020 / 0.2703)"),
    "tf-matches-only-eta-star": Reference(None, f"none: {POST}, tr-vs-gd-lr.html draws the trained layer's distance "
                                                "to GD (gradients, predictions, cosine) over a learning-rate slider, "
                                                "not GD's loss at eta* / 2 and 2 eta*; no other figure gives it"),
    "tf-eta-optimal": Reference(None, f"{POST}, tr-vs-gd-lr.html sweeps GD's learning rate but does not mark "
                                      "the optimal one"),
}
