import os

# Spark (later) and anything else must bind to loopback only in tests.
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# A worker that never answers fails its test after 300 s, naming its partition and its
# stacks (diffflow.runtime.reply_wait), before pytest-timeout (600 s) ends the test with
# only the coordinator's stack.
os.environ.setdefault("DIFFFLOW_REPLY_TIMEOUT", "300")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test run: local[5], loopback only, no UI, event log in a temp
    folder.  Each partition worker holds a task slot while it lives (idle ones stay pooled), so
    5 slots hold the 4 workers of the largest dataflows tests build and one for DataFrame jobs."""
    import tempfile

    from diffflow.runtime.spark import local_session, release_workers

    events = tempfile.mkdtemp(prefix="diffflow-spark-events-")  # read by the PAG tests of Spark logs
    session = local_session("local[5]", spark_eventLog_enabled="true", spark_eventLog_dir=events)
    yield session
    release_workers(session)
    session.stop()


# DIFFFLOW_TEST_RUNTIME=cluster, processes or spark runs the whole suite on that runtime: every
# dataflow a test builds on the local runtime is built on it instead, except in tests marked
# local_runtime (they test what only an in-process runtime has, e.g. pickling a whole Dataflow).
TEST_RUNTIME = os.environ.get("DIFFFLOW_TEST_RUNTIME", "local")


@pytest.fixture(autouse=True)
def _every_dataflow_on_the_test_runtime(request, monkeypatch):
    if TEST_RUNTIME == "local" or request.node.get_closest_marker("local_runtime"):
        yield
        return
    from diffflow.api.flow import Dataflow

    session = request.getfixturevalue("spark") if TEST_RUNTIME == "spark" else None
    original = Dataflow.__init__

    def on_test_runtime(self, partitions=1, runtime="local", spark=None, **kw):
        if runtime == "local" and spark is None:  # a test checking spark= keeps its arguments
            runtime, spark = TEST_RUNTIME, session
        original(self, partitions, runtime, spark, **kw)

    monkeypatch.setattr(Dataflow, "__init__", on_test_runtime)
    yield


@pytest.fixture(params=["search", "force", "0"],
                ids=["search-tactics", "loops-compiled-rounds", "loops-general-rounds"])
def graph_library_paths(request, monkeypatch):
    """Run a graph library test three ways: reachability and components by their search
    tactics (the library's choice at one partition), and by their loops
    (``DIFFFLOW_GRAPH_LOOPS=1``) with rounds compiled and never."""
    if request.param == "search":
        monkeypatch.delenv("DIFFFLOW_GRAPH_LOOPS", raising=False)
    else:
        monkeypatch.setenv("DIFFFLOW_GRAPH_LOOPS", "1")
        monkeypatch.setenv("DIFFFLOW_COMPILED_ROUNDS", request.param)
    return request.param


@pytest.fixture(params=["force", "0"], ids=["compiled-rounds", "general-rounds"])
def compiled_rounds_both_ways(request, monkeypatch):
    """Run a loop test twice: every ready loop's rounds compiled
    (``DIFFFLOW_COMPILED_ROUNDS=force``), and never (``=0``)."""
    monkeypatch.setenv("DIFFFLOW_COMPILED_ROUNDS", request.param)
    return request.param


@pytest.hookimpl(tryfirst=True)  # (before pytest-xdist turns xdist_group marks into nodeids)
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``-n``), every test that starts Spark runs on one worker: they share
    the session's SparkSession and shipped archive, and two Spark clusters at once would
    overload two cores.  The kill -9 fault loops run together on another.  Both groups are
    put first, so two workers start on them (the longest stretches of the run) while the
    others take the rest."""
    groups: dict = {"spark": [], "faults": []}
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "spark" in names or "shipped_archive" in names or "spark" in item.nodeid.lower():
            group = "spark"
        elif "test_durable_faults" in item.nodeid:
            group = "faults"
        else:
            continue
        item.add_marker(pytest.mark.xdist_group(group))
        groups[group].append(item)
    if getattr(config.option, "numprocesses", None):
        first = groups["spark"] + groups["faults"]
        chosen = {id(item) for item in first}
        items[:] = first + [item for item in items if id(item) not in chosen]
