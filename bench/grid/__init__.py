"""The grid: agents x tasks x rounds, its spec, runner, executors (process pool, Ray) and progress."""
