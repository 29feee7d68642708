"""The run folder's formats and names: `RunPaths` (the one place that names a run-folder
file), the step record, the run result, failure causes, the metrics file, accounting."""
