"""Floor 0, the vocabulary every other floor speaks: episodes and the learner protocol (`episodes`), the
measures that score predictions (`metrics`), seeds, atomic writes and fingerprints (`io`), where the time
goes (`profiling`), process-level speed settings (`perf`) and the version. Imports nothing of icgd."""
