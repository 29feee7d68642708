"""PaperBench: rubric trees, their checks, graded trees, the judge, JudgeEval, grading and reproduction."""
