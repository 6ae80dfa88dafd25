"""The clients: Producer (and its transactional half), Consumer (and its group side), the
fetcher, the AdminClient's calls, and the confluent-kafka shapes built on them.

The public names are re-exported by ``kstream`` and ``kstream.admin``.
"""
