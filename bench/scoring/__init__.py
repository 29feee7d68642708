"""Scores of finished runs: summaries, FML-bench main's metrics, exploration, embeddings,
the contribution judge and the report."""
