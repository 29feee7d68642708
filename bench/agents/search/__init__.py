"""FML-bench main's search agents on our kernel: AIRA-MCTS, OpenEvolve, AI-Scientist-v2,
Autoresearch and AdaptiveSearch. Each module is one loop shape and its prompts over the
shared `common.Search` (nodes, resume, parallel expansion, the generic tree record),
`greedy` (autoresearch's keep-or-discard chain, also AdaptiveSearch's phases and branches)
and `answer` (the edit format and the offline policy every one of them registers).
"""
