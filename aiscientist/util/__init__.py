"""Small helpers with no home of their own: no-follow file opening, append-only files,
human-readable numbers, console notices."""
