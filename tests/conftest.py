import os

# Spark (later) and anything else must bind to loopback only in tests.
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test run: local[2], loopback only, no UI."""
    from diffflow.runtime.spark import local_session

    session = local_session("local[2]")
    yield session
    session.stop()
