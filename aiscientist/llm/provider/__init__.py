"""Talking to a model provider: the backends (litellm, offline), their errors in words, and patience with failures."""
