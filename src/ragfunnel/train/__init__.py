"""Training the precision stage on labelled questions (learning-to-rank and a cross-encoder)."""
