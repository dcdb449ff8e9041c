"""Fixtures the Spark tests share: the archive that ships diffflow to executors, packed once
per test run (packing takes ~18 s on 2 cores)."""
import pytest


@pytest.fixture(scope="session")
def shipped_archive(tmp_path_factory):
    """``(archive, cache)``: ``diffflow spark-pack``'s archive of this checkout and its cache
    folder (named as ``DIFFFLOW_CACHE_DIR``'s ``spark-pack``)."""
    from diffflow.runtime.spark_pack import pack

    cache = tmp_path_factory.mktemp("cache") / "spark-pack"
    return pack(cache=cache), cache
