"""FML-bench's result layout, read (results) and written (export)."""
