"""The bench's subcommands: `bench` (run, report, agents, score, export), `grade`, `rubric`."""
