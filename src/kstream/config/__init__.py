"""The ground floor's configuration: kstream's typed options, librdkafka's names, and the
option names of the ``format("kstream")`` data source.
"""
