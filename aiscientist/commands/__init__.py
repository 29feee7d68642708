"""Small CLI subcommands that belong to no bigger package."""
