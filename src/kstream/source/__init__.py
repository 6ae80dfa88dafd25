"""The Spark data source `format("kstream")`: batch and streaming readers (the sink comes next)."""
