"""Real local models: GGUF files assembled from pinned wheels and a llama.cpp server to serve them."""
