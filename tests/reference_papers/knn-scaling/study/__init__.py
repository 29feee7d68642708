"""Reference reproduction: feature standardisation, kNN and logistic regression on small tabular data."""
