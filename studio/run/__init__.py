"""The Run page: which flow and question, per-run overrides, the question sets, the run panel."""
