"""The authors' own value of each claim's measure in source 003's `momentum` suite (`icgd.claims.references.
Reference`); where none exists, the value is None and the source says why. Read from the paper's Tables 6
and 7 (one 350M model per arm, no seeds), through the text transcription named in
`icgd.sources.dai.references`."""

from __future__ import annotations

from icgd.claims.references import Reference

_EXTENSION = "the source has no such experiment: this study is the project's test of Table 7's claim on a task " \
             "small models learn in context"

#: {claim id: Reference}
REFERENCES: dict[str, Reference] = {
    "momentum-lowers-perplexity": Reference(0.9933, "derived from source 003's Table 6: the largest momentum / "
                                                    "vanilla validation perplexity over the three lengths (256: "
                                                    "19.37 / 19.50; 512: 16.73 / 16.87; 1024: 15.02 / 15.14)"),
    "momentum-improves-lm-icl": Reference(0.0283, "derived from source 003's Table 7: mean over its six data sets "
                                                  "of MoAttn minus vanilla ICL accuracy (averages 0.547 - 0.519; the "
                                                  "caption: 'by 2.8 on average'); the paper gives no zero-shot "
                                                  "accuracy, so the mean is over all six"),
    "premise-lm-icl": Reference(None, "Table 7 gives only the ICL accuracy of the two LMs, never their zero-shot "
                                      "accuracy, so ICL minus ZSL cannot be formed"),
    "momentum-keeps-icl": Reference(None, "the measure is the upper end of a 95% interval; the paper reports one "
                                          "run per model, with no interval or seed spread"),
    "premise-recall": Reference(None, _EXTENSION + " (associative recall)"),
    "momentum-improves-recall": Reference(None, _EXTENSION + " (associative recall)"),
    "premise-regression": Reference(None, _EXTENSION + " (in-context regression)"),
    "momentum-improves-regression": Reference(None, _EXTENSION + " (in-context regression)"),
    "premise-fewshot": Reference(None, _EXTENSION + " (bursty few-shot classification)"),
    "momentum-improves-fewshot": Reference(None, _EXTENSION + " (bursty few-shot classification)"),
}
