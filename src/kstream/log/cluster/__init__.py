"""The cluster: metadata (SQLite + snapshot), placement, a partition as leader + followers,
the ISR and replica sync, reassignment and record deletion. Imports only ``log.storage``.
"""
