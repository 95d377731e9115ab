"""The authors' own value of each claim's measure in source 003's `dai` suite (`icgd.claims.references.
Reference`); where none exists, the value is None and the source says why.

The seed text of source 003 lost its tables and the authors' code (microsoft/LMOps `understand_icl/`)
commits no result file, so the numbers are read from the paper's tables (ACL Findings 2023,
"Why Can GPT Learn In-Context? Language Models Implicitly Perform Gradient Descent as Meta-Optimizers"),
through a text transcription of it (two independent copies agree on the averages). Each reference is the
largest model's (GPT 2.7B), the mean over the six data sets (SST2, SST5, MR, Subj, AGNews, CB: ICL beats ZSL
on all six, so the mean over the data sets where the premise holds is the paper's "Average"); GPT 1.3B's
value is given beside it. Accuracies are fractions, as our measures are. The paper's numbers are on the
validation set that also chose the demonstration seed and the finetuning rate (docs/sources/dai_lmops_code.md);
ours on a separate test split. The controls' claims (the untrained model, layer-causal GD, the order of the
demonstrations) test the critics of source 003, so their references are those critics' numbers: Deutch et
al. 2024's committed result files, and Shen et al. 2024 where a number can be read.
"""

from __future__ import annotations

from icgd.claims.references import Reference

#: {claim id: Reference}
REFERENCES: dict[str, Reference] = {
    "icl-beats-zsl": Reference(0.2212, "derived from source 003's Table 1 (GPT 2.7B): mean of ICL - ZSL accuracy "
                                       "over the six data sets, 0.7647 - 0.5435 (GPT 1.3B: 0.2015)"),
    "ft-beats-zsl": Reference(0.1313, "derived from source 003's Table 1 (GPT 2.7B): mean of FT - ZSL accuracy "
                                      "over the six data sets, 0.6748 - 0.5435 (GPT 1.3B: 0.0880)"),
    "rec2ftp-high": Reference(89.39, "source 003's Table 2, Average column, GPT 2.7B (GPT 1.3B: 85.56); sec. 4.3: "
                                     "'on average, ICL can correctly predict more than 85% of the examples that "
                                     "finetuning can correct from ZSL'"),
    "simaou-ft-above-random": Reference(0.226, "derived from source 003's Table 3, Average column, GPT 2.7B: "
                                               "SimAOU (FT) 0.225 minus SimAOU (random) -0.001 (GPT 1.3B: 0.184)"),
    "simaou-random-near-zero": Reference(0.001, "source 003's Table 3, Average column, GPT 2.7B: |SimAOU (random)| "
                                                "= |-0.001| (GPT 1.3B: 0.002)"),
    "simam-after-above-before": Reference(0.079, "derived from source 003's Table 4, Average column, GPT 2.7B: "
                                                 "SimAM after 0.434 minus before 0.355 (GPT 1.3B: 0.104; on CB the "
                                                 "paper's own 2.7B row has after below before, -0.011)"),
    "kendall-ft-above-random": Reference(0.214, "derived from source 003's Table 5, Average column, GPT 2.7B: "
                                                "Kendall (ICL, FT) 0.214 minus Kendall (ICL, random) 0.000 "
                                                "(GPT 1.3B: 0.193)"),
    "kendall-random-near-zero": Reference(0.0, "source 003's Table 5, Average column, GPT 2.7B: |Kendall (ICL, "
                                               "random)| = 0.000 (GPT 1.3B: 0.000)", 0.0005),
    # the critics' controls: Deutch et al. 2024's committed result files (GiilDe/ft-vs-icl, artifacts/, SST-2,
    # 32 demonstrations, fairseq en_dense_lm_1_3b, mean over its 24 layers, one run per seed 2, 3, 4)
    "simaou-trained-above-untrained": Reference(
        0.0055, "Deutch et al. 2024 (GiilDe/ft-vs-icl artifacts, SST-2, 1.3B model, seed 2): SimAOU 0.1096 trained "
                "(results/en_dense_lm_1_3b/sst2_per_layer_0_k_32_seed_2_perm_0_lr_0.0005_bsz_1_clip_norm_0.json, mean "
                "of its 24 layers) minus 0.1041 untrained (logs/..._seed_2_..._model_trained_0.txt); over the three "
                "seeds 2-4: 0.1105 - 0.1140 = -0.0035. Their untrained model keeps the embeddings, norms and "
                "unembedding (our untrained_keep='io')", 0.0001),
    "simam-trained-above-untrained": Reference(None, "Deutch et al.'s untrained runs log SimAOU, its random baseline "
                                                     "and SimAM before FT only, not SimAM after FT"),
    "kendall-trained-above-untrained": Reference(None, "Deutch et al. do not measure Kendall"),
    "rec2ftp-trained-above-untrained": Reference(None, "Deutch et al. do not report Rec2FTP for the untrained model"),
    "icl-closer-to-lcgd-than-ft": Reference(
        0.1128, "Deutch et al. 2024 (GiilDe/ft-vs-icl artifacts, SST-2, 1.3B model): SimAOU against layer-causal GD "
                "(per_layer_1) 0.2297 / 0.2121 / 0.2282 minus against FT (per_layer_0) 0.1096 / 0.1132 / 0.1087 for "
                "seeds 2 / 3 / 4, means 0.2233 - 0.1105 (the 0.212 often quoted is seed 3's LCGD value)"),
    "order-icl-sensitive": Reference(None, "Shen et al. 2024 (LLaMA-7B, AG News, 10 orders of 8 demonstrations) show "
                                           "ICL's spread of the output distribution over orders above GD's in a figure; "
                                           "no number of it is in a text available here"),
    "order-icl-like-sgd": Reference(None, "Shen et al. 2024 draw ICL's order spread above that of SGD and Adam "
                                          "throughout training, in a figure without printed numbers"),
    "order-full-batch-invariant": Reference(None, "holds by construction (a check): full-batch GD sums the gradients; "
                                                  "Shen et al.'s argument uses the same fact"),
    "premise-ft-beats-guess": Reference(0.300, "derived from source 003's Table 1 (GPT 2.7B) on MR, whose label "
                                               "shares are known: FT 0.800 minus about 0.5, MR being half positive "
                                               "(5,331 positive and 5,331 negative reviews; the rotten_tomatoes "
                                               "card); the paper does not give the other data sets' label shares"),
    "premise-icl-beats-zsl": Reference(None, "the measure averages ICL accuracy over the demonstration seeds; the "
                                             "paper prints only the chosen (best on validation) seed's accuracy, an "
                                             "upper bound of the mean"),
}


#: the paper's own column for each of its data sets that icgd ships (MR, Subj), {data set: {our summary key:
#: (GPT 2.7B, GPT 1.3B)}}: Table 1's validation accuracies (as fractions), Table 2's Rec2FTP, Table 3's SimAOU
#: (FT) and (random), Table 4's SimAM before and after finetuning, Table 5's Kendall (ICL, FT) and (ICL,
#: random), read through the same transcription as REFERENCES (each row's six columns average to the printed
#: Average). The paper's numbers are on the validation set (MR 1,066, Subj 2,000 examples) that also chose its
#: seed and rate (Table 9: MR seed 1, lr 0.001; Subj seed 4, lr 0.002, GPT 2.7B); `dai-icl-vs-ft` writes
#: them beside its own (table `beside_paper`)
PAPER_COLUMNS: dict[str, dict[str, tuple[float, float]]] = {
    "mr": {"zsl_accuracy": (0.609, 0.659), "icl_accuracy": (0.913, 0.890), "ft_accuracy": (0.800, 0.730),
           "rec2ftp": (95.83, 97.08), "simaou_ft": (0.157, 0.222), "simaou_random": (0.000, 0.001),
           "simam_before": (0.314, 0.398), "simam_after": (0.347, 0.498), "kendall_ft": (0.264, 0.173),
           "kendall_random": (0.000, 0.000)},
    "subj": {"zsl_accuracy": (0.752, 0.726), "icl_accuracy": (0.903, 0.900), "ft_accuracy": (0.861, 0.778),
             "rec2ftp": (87.63, 87.17), "simaou_ft": (0.212, 0.191), "simaou_random": (0.001, 0.002),
             "simam_before": (0.346, 0.378), "simam_after": (0.374, 0.490), "kendall_ft": (0.203, 0.181),
             "kendall_random": (0.000, 0.001)},
}
