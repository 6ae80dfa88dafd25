"""The operator's tools on top of everything: the ``kstream`` CLI, the web console, the
monitor and the benchmark harness (``kstream perf``).
"""
