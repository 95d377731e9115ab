

def test_beside_paper_sets_each_measure_of_mr_and_subj_beside_the_papers_column():
    """dai-icl-vs-ft's `beside_paper` table: every key of the paper's MR and Subj columns is a measure the study
    reports (a misspelt key would raise here), the rows carry the paper's two models, and a data set the paper
    did not run (BBC News) gets none."""
    from icgd.sources.dai.icl_vs_ft import beside_paper
    from icgd.sources.dai.keys import KEYS
    from icgd.sources.dai.references import PAPER_COLUMNS

    assert set(PAPER_COLUMNS) == {"mr", "subj"}
    for d, cols in PAPER_COLUMNS.items():
        assert set(cols) <= set(KEYS), set(cols) - set(KEYS)
        summary = {"dataset": d} | {k: 0.5 for k in KEYS} | {f"{k}_mean": 0.4 for k in KEYS[1:]} \
            | {f"{k}_std": 0.1 for k in KEYS[1:]}
        rows = beside_paper([summary, {"dataset": "bbc-news"}])
        assert [r["measure"] for r in rows] == list(cols) and {r["dataset"] for r in rows} == {d}
        zsl = next(r for r in rows if r["measure"] == "zsl_accuracy")
        assert zsl["ours_mean"] is None  # ZSL has no demonstration seeds
        assert all((r["paper_gpt_2.7b"], r["paper_gpt_1.3b"]) == cols[r["measure"]] for r in rows)
    assert PAPER_COLUMNS["mr"]["rec2ftp"][0] > 85  # the paper's "more than 85%" holds on its MR column
