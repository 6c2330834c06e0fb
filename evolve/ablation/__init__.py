"""Ablations: the same evolution under several arms (feedback modes) and seeds, their records, summary and plots."""
