"""Transactions: the coordinator's store, markers, expiry, isolation (what a reader may see),
offsets a transaction carries, and the Spark sink's batches. Imports ``log.storage`` and
``log.cluster``; anything above it (groups) is handed in as a callable.
"""
