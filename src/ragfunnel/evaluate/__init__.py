"""Evaluation: question sets, rank metrics, union ceilings, reports."""
