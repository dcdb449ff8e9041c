"""Algorithms written with the public collection API only: the graph library
(:mod:`.graphs`, public as ``diffflow.graphs``).
"""
