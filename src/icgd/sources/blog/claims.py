"""Claims of the replication study (source 001), with the tolerance of each."""

from __future__ import annotations

import statistics

from icgd.claims.base import Claim, PremiseNotMet, suite
from icgd.sources.blog import keys as X
from icgd.sources.blog.references import REFERENCES

ETA, DAMP, LSTM, SCALE = "blog-eta", "blog-dampening", "blog-lstm", "blog-scaling"


def _seeds(r: dict, model: str, measure: str) -> list[float]:
    """Every seed's `measure` of a model of blog-lstm, in seed order."""
    return r[LSTM][X.LSTM_SEEDS.format(model=model, measure=measure)]


#: the premise of the LSTM comparisons: the best model of a kind ends below this fraction of the zero
#: predictor's loss (median seed). Argued before any run with it: an LSTM that learnt nothing in context stays
#: on the zero predictor's plateau, loss / zero about 1 (the quick-mode 4-layer models that never left it
#: measured 1.01-1.02); one tuned GD step reaches about 0.50 and the quick-mode 1- and 2-layer LSTMs 0.73-0.75,
#: so a tenth below the plateau separates a model that learnt something from one that did not
LEARNT = 0.9

#: margins argued before the full runs (2026-11-28) from the post's numbers, not ours (a bar that a wrong
#: learner passes is no claim; tests/suites/test_bars.py shows each failing one):
#: - DAMPENED_LOWERS: 50 dampened applications end at most at half the first's loss. The post's layer ends at
#:   0.2065 of it; a layer that does nothing stays at 1, and of 20 untrained layers 5 passed the bar before
#:   (< 1) by chance. 0.5 is about the geometric mean of 0.2065 and 1.
#: - DEPTH_LOWERS: every added layer lowers the loss by a tenth at least. The post's largest consecutive ratio is
#:   0.149 (D = 5); in our D = 10 set-up the learners source 000 finds in deep models predict at most 0.66 (GD++
#:   with as many steps) and 0.89 (plain GD), computed with tuned learners; an added layer that does nothing
#:   gives 1 up to the seeds' noise, which passed the bar before (< 1).
#: - BILSTM_GAIN, BILSTM_GAIN_FROM_2: half the post's cosine gains (0.2029 from 1 to 5 layers, 0.0226 from 2):
#:   depths whose cosine does not change pass "> 0" on noise alone.
DAMPENED_LOWERS = 0.5
DEPTH_LOWERS = 0.9
BILSTM_GAIN, BILSTM_GAIN_FROM_2 = 0.1, 0.01


def _best_over_zero(r: dict, models) -> float:
    """The best model's median-seed loss among `models(r)` over the zero predictor's loss."""
    return min(statistics.median(_seeds(r, m, "loss")) for m in models(r)) / r[LSTM]["zero_loss"]


def _if_learnt(fn, *kinds):
    """`fn` as a measure, read only where every kind in `kinds` ((models, name) pairs) learnt in context (the
    premise `LEARNT`); elsewhere PremiseNotMet: an untrained LSTM would pass "LSTMs are not GD" too."""
    def measure(r: dict) -> float:
        value = fn(r)  # read first: a result key missing is "not measured", never hidden behind the premise
        for models, name in kinds:
            ratio = _best_over_zero(r, models)
            if not ratio < LEARNT:
                raise PremiseNotMet(f"no {name} learnt in context: the best one's loss is {ratio:.3f} of the "
                                    f"zero predictor's (the premise: below {LEARNT})")
        return value
    return measure


def _per_seed(fn):
    """A claim's measure seed by seed, from `fn(r, i)` for seed index i of blog-lstm's models."""
    return lambda r: [fn(r, i) for i in range(len(_seeds(r, "lsa-1", "loss")))]


def _uni(r: dict) -> list[str]:
    return [f"lstm-{k}" for k in r[LSTM][X.LSTM_DEPTHS]]


def _bi(r: dict) -> list[str]:
    return [f"bilstm-{k}" for k in r[LSTM][X.LSTM_DEPTHS]]


def _at(r: dict, model: str, measure: str, i: int) -> float:
    return _seeds(r, model, measure)[i]



@suite("blog", references=REFERENCES)
def claims() -> list[Claim]:
    return [
        Claim(id="eta-matches-line-search", kind="check", source="'Analysis on the learning rate'", experiment=ETA,
              claim="the analytic optimal eta of one GD step equals the line search's "
                    "(largest relative difference, same tasks)",
              measure=lambda r: max(r[ETA][X.ETA_MAX_DIFFERENCE.format(tag="a1")], r[ETA][X.ETA_MAX_DIFFERENCE.format(tag="a0.5")]),
              op="<", threshold=1e-3,
              why="both minimise the same empirical quadratic; the line search stops at a relative width of 1e-7, "
                  "so 0.1% leaves room for nothing but a wrong formula"),
        Claim(id="eta-fast", kind="check", source="'Analysis on the learning rate'", experiment=ETA,
              claim="the analytic eta is computed far faster than by line search (time ratio)",
              measure=lambda r: r[ETA][X.ETA_SPEEDUP.format(tag="a1")], op=">", threshold=100,
              why="the source: about 10 ms against about 10 s; two orders of magnitude is the claim's substance"),
        Claim(id="tf-eta-optimal", source="'Analysis on the learning rate'", experiment=ETA,
              claim="the trained 1-layer LSA implements GD with the optimal eta (relative error of "
                    "its implicit eta)",
              measure=lambda r: r[ETA][X.TF_ETA_ERROR.format(tag="a1")], op="<", threshold=0.05,
              why="'the linear transformer implicitly optimizes the GD learning rate'; 5%, median seed"),
        Claim(id="tf-matches-only-eta-star", source="'Analysis on the learning rate'", experiment=ETA,
              claim="the trained LSA's loss is GD's at eta* only: GD with eta* halved or "
                    "doubled ends above it (smaller of the two GD loss / TF loss - 1)",
              measure=lambda r: r[ETA][X.ETA_OFF_GAP.format(tag="a1")], op=">", threshold=0.01,
              why="'converges to the loss of the GD-transformer specifically for a single value of the GD learning "
                  "rate': the complement of the 1% within which 1layer-loss calls two losses equal; median seed, on "
                  "the first set of 10,000 tasks"),
        Claim(id="dampening-lowers-loss", source="'How about multiple layers?'", experiment=DAMP,
              claim="with dampening 0.7, 50 applications of the trained layer end below one "
                    "application (loss ratio, mean over all tasks)",
              measure=lambda r: r[DAMP][X.DAMPING_MEDIAN.format(key="lambda_0_7", measure="tf_final_over_first_all_tasks")],
              op="<", threshold=DAMPENED_LOWERS,
              why="every task counted (a diverged task makes the mean infinite); median seed; at most half the first "
                  "application's loss (DAMPENED_LOWERS: the bar before, < 1, passed untrained layers by chance)"),
        Claim(id="dampening-monotone", source="'How about multiple layers?'", experiment=DAMP,
              claim="with dampening 0.7 the loss falls at every one of the 50 applications "
                    "(largest ratio of consecutive applications, mean over tasks)",
              measure=lambda r: r[DAMP][X.DAMPING_MEDIAN.format(key="lambda_0_7", measure="tf_max_consecutive_ratio")],
              op="<", threshold=1.0,
              why="the source's curve decreases monotonically; tasks that diverged are left out (the claim above counts "
                  "them); median seed"),
        Claim(id="dampening-matches-gd", source="'How about multiple layers?'", experiment=DAMP,
              claim="the dampened layer follows GD with eta * 0.7 over the 50 applications "
                    "(largest |TF/GD - 1| of the mean loss)",
              measure=lambda r: r[DAMP][X.DAMPING_MEDIAN.format(key="lambda_0_7", measure="max_relative_tf_gd_difference")],
              op="<", threshold=0.1,
              why="the source's curves overlap on a log axis; 10% relative, as for the OOD claim of source 000"),
        Claim(id="premise-lstm-learns", source="'Is this behavior unique to transformers?'", experiment=LSTM,
              claim="the premise: the best unidirectional LSTM learns in context (its loss over the zero "
                    "predictor's, median seed)",
              measure=lambda r: _best_over_zero(r, _uni), op="<", threshold=LEARNT,
              why="the post's LSTMs 'struggle' but learn: below the zero predictor's plateau by a tenth (LEARNT); "
                  "where it fails, the LSTM comparisons are untested"),
        Claim(id="premise-bilstm-learns", source="'Is this behavior unique to transformers?'", experiment=LSTM,
              claim="the premise: the best bidirectional LSTM learns in context (its loss over the zero "
                    "predictor's, median seed)",
              measure=lambda r: _best_over_zero(r, _bi), op="<", threshold=LEARNT,
              why="as premise-lstm-learns, for the BiLSTMs"),
        Claim(id="lstm-not-gd", source="'Is this behavior unique to transformers?'", experiment=LSTM,
              claim="unidirectional LSTMs do not implement a GD step: their best sensitivity cosine "
                    "with GD over depths / the LSA's",
              measure=_if_learnt(lambda r: r[LSTM][X.LSTM_BEST_COSINE_OVER_LSA], (_uni, "unidirectional LSTM")), op="<", threshold=0.9,
              why="'well below': 10% under the LSA's cosine (which is within 0.2% of 1), median seeds",
              per_seed=_per_seed(lambda r, i: max(_at(r, n, "sensitivity_cosine", i) for n in _uni(r)) / _at(r, "lsa-1", "sensitivity_cosine", i))),
        Claim(id="bilstm-depth", source="'Is this behavior unique to transformers?'", experiment=LSTM,
              claim="bidirectional LSTMs align better with GD with depth (cosine at the deepest "
                    "minus at 1 layer)",
              measure=_if_learnt(lambda r: r[LSTM][X.BILSTM_COSINE_GAIN], (_bi, "bidirectional LSTM")), op=">", threshold=BILSTM_GAIN,
              why="half the post's gain of 0.2029 (BILSTM_GAIN; the bar before, any gain, passed depths whose cosine "
                  "does not change, on noise); median seeds",
              per_seed=_per_seed(lambda r, i: _at(r, _bi(r)[-1], "sensitivity_cosine", i) - _at(r, _bi(r)[0], "sensitivity_cosine", i))),
        Claim(id="bilstm-better", source="'Is this behavior unique to transformers?'", experiment=LSTM,
              claim="bidirectional LSTMs learn better than unidirectional ones at 2+ layers "
                    "(largest BiLSTM / LSTM loss ratio)",
              measure=_if_learnt(lambda r: r[LSTM][X.BILSTM_OVER_LSTM], (_uni, "unidirectional LSTM"), (_bi, "bidirectional LSTM")), op="<", threshold=1.0,
              why="median seeds",
              per_seed=_per_seed(lambda r, i: max(_at(r, b, "loss", i) / _at(r, u, "loss", i) for u, b, k in zip(_uni(r), _bi(r), r[LSTM][X.LSTM_DEPTHS]) if k >= 2))),
        Claim(id="lstm-worse-than-tf", source="'Is this behavior unique to transformers?'", experiment=LSTM,
              claim="unidirectional LSTMs learn linear functions in context less well than the "
                    "transformer (best LSTM loss / 1-layer LSA loss)",
              measure=_if_learnt(lambda r: r[LSTM][X.BEST_UNI_LSTM_OVER_LSA], (_uni, "unidirectional LSTM")), op=">", threshold=1.0,
              why="the source: LSTMs 'struggle', bidirectional ones 'perform better'; its own figure has 4- and 5-layer "
                  "BiLSTMs at the GD loss (docs/reproduction-notes.md); median seeds",
              per_seed=_per_seed(lambda r, i: min(_at(r, n, "loss", i) for n in _uni(r)) / _at(r, "lsa-1", "loss", i))),
        Claim(id="bilstm-gain-grows", source="'Is this behavior unique to transformers?'", experiment=LSTM,
              claim="BiLSTMs gain more over LSTMs as layers are added (BiLSTM / LSTM loss at the "
                    "deepest over the same at 1 layer)",
              measure=_if_learnt(lambda r: r[LSTM][X.BILSTM_GAIN_DEEPEST_OVER_1], (_uni, "unidirectional LSTM"), (_bi, "bidirectional LSTM")), op="<", threshold=1.0,
              why="'perform better, especially with an increased number of layers'; median seeds",
              per_seed=_per_seed(lambda r, i: (_at(r, _bi(r)[-1], "loss", i) / _at(r, _uni(r)[-1], "loss", i)) / (_at(r, _bi(r)[0], "loss", i) / _at(r, _uni(r)[0], "loss", i)))),
        Claim(id="bilstm-increasingly-gd", source="'Is this behavior unique to transformers?'", experiment=LSTM,
              claim="from 2 layers up BiLSTMs behave increasingly like a GD step (cosine at the "
                    "deepest minus at 2 layers)",
              measure=_if_learnt(lambda r: r[LSTM][X.BILSTM_COSINE_GAIN_FROM_2], (_bi, "bidirectional LSTM")), op=">", threshold=BILSTM_GAIN_FROM_2,
              why="half the post's gain of 0.0226 (BILSTM_GAIN_FROM_2; the bar before, any gain, passed depths whose "
                  "cosine does not change, on noise); median seeds",
              per_seed=_per_seed(lambda r, i: _at(r, _bi(r)[-1], "sensitivity_cosine", i) - _at(r, "bilstm-2", "sensitivity_cosine", i))),
        Claim(id="bilstm-cosine-below-1", source="'Is this behavior unique to transformers?'", experiment=LSTM,
              claim="the BiLSTMs' cosine with GD does not reach 1 (largest over depths)",
              measure=_if_learnt(lambda r: r[LSTM][X.BILSTM_BEST_COSINE], (_bi, "bidirectional LSTM")), op="<", threshold=0.99,
              why="below the bar at which 1layer-cosine calls a cosine about 1; median seeds",
              per_seed=_per_seed(lambda r, i: max(_at(r, n, "sensitivity_cosine", i) for n in _bi(r)))),
        Claim(id="tf-matches-gd-across-n", source="source 000 sec. 3: 'a wide range of hyperparameters'", experiment=SCALE,
              claim="the 1-layer LSA equals one tuned GD step at every context size N = 5, 10, "
                    "20, 40 (largest |TF / GD - 1|)",
              measure=lambda r: r[SCALE][X.TF_GD_GAP_ACROSS_N], op="<", threshold=0.01,
              why="the 1% of 1layer-loss; median seeds"),
        Claim(id="tf-learns-well", source="'Pre-training setup'", experiment=SCALE,
              claim="linear transformers learn linear functions in context well (1-layer LSA loss / "
                    "zero predictor at N = 10)",
              measure=lambda r: r[SCALE][X.TF_OVER_ZERO_N10], op="<", threshold=0.6,
              why="'well': most of one GD step's gain over predicting 0 (one tuned step reaches about 0.50 "
                  "of the zero predictor's loss at Dx = N = 10, x ~ U(-1, 1): 0.831 / 1.648 in the README); median seed"),
        Claim(id="loss-falls-with-n", source="'Pre-training setup'", experiment=SCALE,
              claim="test loss falls as the context size grows (largest ratio of consecutive "
                    "N = 5, 10, 20, 40)",
              measure=lambda r: r[SCALE][X.RATIO_CONTEXT], op="<", threshold=1.0,
              why="every increase of N; median seeds"),
        Claim(id="loss-falls-with-depth", source="'Pre-training setup'", experiment=SCALE,
              claim="test loss falls as the number of layers grows (largest ratio of "
                    "consecutive depths 1-4)",
              measure=lambda r: r[SCALE][X.RATIO_DEPTH], op="<", threshold=DEPTH_LOWERS,
              why="every added layer lowers the loss by a tenth at least (DEPTH_LOWERS: the post 0.149 at D = 5; GD++ "
                  "with as many steps predicts at most 0.66 in our D = 10 set-up; the bar before, < 1, passed an added "
                  "layer that does nothing, on noise); median seeds"),
    ]
