"""Evaluation: metrics, datasets and the comparison runner."""
